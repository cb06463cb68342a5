"""Shapes the issue did not list that developers paste: cookies and session ids, other
Authorization schemes, more command-line passwords, PuTTY and JWK private keys, ODBC braces,
recovery phrases, kubeconfig and registry credentials, and more fixed-prefix services."""

from __future__ import annotations

import json

import pytest

from pipeline.redaction import Redactor
from tests.pipeline.redaction.secret_fakes import ALNUM, B64, HEX, URLSAFE, password, rand


def _gone(redactor: Redactor, text: str, secret: str) -> str:
    for wrapped in (text, json.dumps({"content": text})):
        out = redactor.redact(wrapped).text
        assert secret not in out, out
        assert json.dumps(secret)[1:-1] not in out, out
        assert "[REDACTED:" in out, out
    return redactor.redact(text).text


_CASES = [
    ("Cookie: sessionid={v}; theme=dark", lambda: rand(32)),
    ("Set-Cookie: connect.sid={v}; Path=/; HttpOnly; Secure", lambda: "s%3A" + rand(40, URLSAFE)),
    ("curl -b 'session={v}' https://app.acme.dev/api", lambda: rand(40, URLSAFE)),
    ('curl --cookie "remember_token={v}" https://app.acme.dev', lambda: rand(24)),
    ("GET /app;jsessionid={v} HTTP/1.1", lambda: rand(32, HEX.upper())),
    ("PHPSESSID={v}", lambda: rand(26, "abcdefghijklmnopqrstuv0123456789")),
    ("Authorization: Negotiate {v}", lambda: "YII" + rand(60, B64)),
    ("Proxy-Authorization: Basic {v}", lambda: "YWRtaW46" + rand(16, B64)),
    (
        "Authorization: Splunk {v}",
        lambda: (
            rand(8, HEX)
            + "-"
            + rand(4, HEX)
            + "-4"
            + rand(3, HEX)
            + "-a"
            + rand(3, HEX)
            + "-"
            + rand(12, HEX)
        ),
    ),
    ("Authorization: SSWS {v}", lambda: "00" + rand(40, URLSAFE)),
    ("sqlplus scott/{v}@orcl", password),
    ("sqlplus scott/{v}@//db.acme.dev:1521/XE as sysdba", lambda: "pa@" + password()),
    ("expdp userid=system/{v}@XE schemas=app", password),
    ("zip -P {v} backup.zip db.sql", password),
    ("7z a -p{v} backup.7z db.sql", lambda: rand(16)),
    ("ssh-keygen -t ed25519 -N '{v}' -f deploy", password),
    ("gpg --batch --passphrase {v} -d secrets.gpg", password),
    ("xfreerdp /v:host /u:admin /p:{v}", password),
    ("lftp -u deploy,{v} sftp://files.acme.dev", password),
    ("vault login {v}", lambda: "s." + rand(24)),
    ("npm config set //registry.npmjs.org/:_authToken {v}", lambda: rand(36)),
    ("curl --oauth2-bearer {v} https://api.acme.dev", lambda: rand(40)),
    ("tool --password={v} --verbose", password),
    ("Driver={{ODBC Driver 18}};Server=db;UID=sa;PWD={{{v}}};", lambda: rand(6) + ";" + rand(8)),
    ('MNEMONIC="{v}"', lambda: " ".join(rand(5, "abcdefghijklmnopqrstuvwxyz") for _ in range(12))),
    ("users:\n- name: ci\n  user:\n    token: {v}\n", lambda: rand(64, ALNUM)),
    ("    client-key-data: {v}\n", lambda: rand(120, B64) + "=="),
    ('{{"auths": {{"ghcr.io": {{"auth": "{v}"}}}}}}', lambda: "Y2k6" + rand(28, B64)),
    ("//npm.acme.dev/:_password={v}", lambda: rand(24, B64)),
    ("[Interface]\nPrivateKey = {v}\n", lambda: rand(43, B64) + "="),
    ("PresharedKey = {v}", lambda: rand(43, B64) + "="),
    ("wallet_private_key: 0x{v}", lambda: rand(64, HEX)),
    ("define('DB_PASSWORD', '{v}');", password),
    ("PGPASSWORD={v} pg_dump -h db app", password),
    ("export MYSQL_PWD={v}", password),
    ("machine api.heroku.com\n  login me@acme.dev\n  password {v}\n", lambda: rand(36, HEX)),
]


@pytest.mark.parametrize(("template", "make"), _CASES, ids=[t[:30] for t, _ in _CASES])
def test_more_shapes_are_redacted(redactor: Redactor, template: str, make: object) -> None:
    value = make()  # type: ignore[operator]
    _gone(redactor, template.format(v=value), value)


_TOKENS = [
    ("rubygems-token", lambda: "rubygems_" + rand(48, HEX)),
    ("nuget-key", lambda: "oy2" + rand(43, "abcdefghijklmnopqrstuvwxyz0123456789")),
    ("circleci-token", lambda: "CCIPAT_" + rand(22) + "_" + rand(40, HEX)),
    ("sonarqube-token", lambda: "sqp_" + rand(40, HEX)),
    ("honeycomb-key", lambda: "hcaik_" + rand(58)),
    ("new-relic-key", lambda: "NRII-" + rand(32, URLSAFE)),
    ("render-key", lambda: "rnd_" + rand(32)),
    ("fly-token", lambda: "fm2_" + rand(120, B64)),
    ("onepassword-token", lambda: "ops_eyJ" + rand(200, URLSAFE)),
    ("shippo-token", lambda: "shippo_live_" + rand(40, HEX)),
    (
        "braintree-token",
        lambda: "access_token$production$" + rand(16, "abcdef0123456789") + "$" + rand(32, HEX),
    ),
    ("brevo-key", lambda: "xkeysib-" + rand(64, HEX) + "-" + rand(16)),
    ("resend-key", lambda: "re_" + rand(8) + "_" + rand(24)),
    ("elevenlabs-key", lambda: "sk_" + rand(48, HEX)),
    ("mapbox-secret-token", lambda: "sk.eyJ" + rand(60, URLSAFE) + "." + rand(22, URLSAFE)),
    ("adafruit-key", lambda: "aio_" + rand(28)),
    ("aws-bedrock-key", lambda: "ABSKQmVkcm9ja0FQSUtleS" + rand(110, B64)),
    ("tencent-secret-id", lambda: "AKID" + rand(32)),
    ("azure-devops-token", lambda: rand(76) + "AZDO" + rand(4)),
]


@pytest.mark.parametrize(("rule", "make"), _TOKENS, ids=[r for r, _ in _TOKENS])
def test_more_service_tokens(redactor: Redactor, rule: str, make: object) -> None:
    token = make()  # type: ignore[operator]
    for text in (token, f"export SERVICE_CREDENTIAL={token}\n", json.dumps({"v": f"the key is {token}"})):
        out = redactor.redact(text).text
        assert token not in out, out
        assert f"[REDACTED:{rule}:" in out, out


def test_private_keys_without_pem_markers(redactor: Redactor) -> None:
    lines = [rand(64, B64) for _ in range(3)]
    ppk = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3Nza\n"
    ppk += "Private-Lines: 3\n" + "\n".join(lines) + "\nPrivate-MAC: " + rand(64, HEX) + "\n"
    out = _gone(redactor, ppk, lines[0])
    assert all(line not in out for line in lines)
    assert "Public-Lines: 1\nAAAAC3Nza\n" in out
    d, p = rand(86, URLSAFE), rand(43, URLSAFE)
    jwk = json.dumps({"kty": "RSA", "n": rand(86, URLSAFE), "e": "AQAB", "d": d, "p": p})
    out = _gone(redactor, jwk, d)
    assert p not in out
    assert '"e": "AQAB"' in out


@pytest.mark.parametrize(
    "text",
    [
        "Cookie: theme=dark; lang=en-US; tz=Europe",
        "Set-Cookie: csrftoken=; Path=/; Max-Age=0",
        "git checkout -b feature/redaction-holes",
        "vault login -method=oidc role=dev",
        "Authorization: Digest realm=acme",
        "Driver={ODBC Driver 18 for SQL Server};Server=db",
        "password: {{ vault_db_password }}",
        '{"kty": "RSA", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1Wl", "e": "AQAB"}',
        "the seed phrase is twelve words long",
        "zip -r out.zip src",
        "sqlplus /nolog @setup.sql",
        "log.info('resumed', session_id=session.session_id, parent=s.parent_session_id)",
    ],
)
def test_more_lookalikes_survive(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text
