"""Look-alikes are kept by their structure, whatever rule would have flagged them (``filters.Lookalikes``):
documented and masked samples, ciphertext at rest in its envelope, and secret-store references or
template expressions. And the other way: a real secret beside the same words, or in a shape that only
looks like an envelope, is still caught. Fakes are drawn at run time (``secret_fakes``)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from pipeline.redaction import Reason, Redactor
from tests.pipeline.redaction.secret_fakes import ALNUM, B64, HEX, URLSAFE, rand

Case = Callable[[], tuple[str, str]]
"""Builds (text, the look-alike in it) at test time, from the test's seeded generator."""


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def _kept(redactor: Redactor, text: str, piece: str) -> None:
    for shown, part in ((text, piece), (json.dumps({"content": text}), json.dumps(piece)[1:-1])):
        out = redactor.redact(shown).text
        assert out.count(part) == shown.count(part), out


def _caught(redactor: Redactor, text: str, secret: str) -> None:
    for shown in (text, json.dumps({"content": text})):
        out = redactor.redact(shown).text
        assert "[REDACTED:" in out, out
        for i in range(max(1, len(secret) - 11)):
            assert secret[i : i + 12] not in out, out


def _sops() -> tuple[str, str]:
    value = f"ENC[AES256_GCM,data:{rand(24, B64)}==,iv:{rand(43, B64)}=,tag:{rand(22, B64)}==,type:str]"
    return f"db_password: {value}", value


def _sops_json() -> tuple[str, str]:
    value = f"ENC[AES256_GCM,data:{rand(40, B64)},iv:{rand(43, B64)}=,tag:{rand(22, B64)}==,type:str]"
    return f'"api_token": "{value}"', value


def _ansible() -> tuple[str, str]:
    lines = [rand(80, HEX) for _ in range(4)]
    body = "\n  ".join(lines)
    return f"smtp_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  {body}\n", lines[1]


def _age() -> tuple[str, str]:
    lines = [rand(64, B64) for _ in range(3)]
    body = "\n".join(lines)
    return f"token: |\n-----BEGIN AGE ENCRYPTED FILE-----\n{body}\n-----END AGE ENCRYPTED FILE-----", lines[0]


def _transit() -> tuple[str, str]:
    value = "vault:v2:" + rand(60, B64) + "=="
    return f'password = "{value}"', value


def _jasypt() -> tuple[str, str]:
    value = f"ENC({rand(44, B64)})"
    return f"app.datasource.password={value}", value


def _bitwarden() -> tuple[str, str]:
    value = f"2.{rand(22, B64)}==|{rand(43, B64)}=|{rand(43, B64)}="
    return f'secret: "{value}"', value


def _aws_kms() -> tuple[str, str]:
    value = "AQICAHi" + rand(150, B64) + "=="
    return f"DB_PASSWORD_CIPHERTEXT_BLOB={value}", value


def _gcp_kms() -> tuple[str, str]:
    value = "CiQA" + rand(90, B64)
    return f"api_key: {value}", value


def _jwe_at_rest() -> tuple[str, str]:
    header = _b64url({"alg": "RSA-OAEP-256", "enc": "A256GCM"})
    value = ".".join([header, rand(342, URLSAFE), rand(16, URLSAFE), rand(60, URLSAFE), rand(22, URLSAFE)])
    return f"password: {value}", value


def _sealed() -> tuple[str, str]:
    values = ["AgA" + rand(680, B64) for _ in range(3)]
    keys = "".join(
        f"    {name}: {v}\n"
        for name, v in zip(("client_id", "client_secret", "api_token"), values, strict=True)
    )
    return f"kind: SealedSecret\nspec:\n  encryptedData:\n{keys}  template:\n    type: Opaque\n", values[2]


def _aead_fields() -> tuple[str, str]:
    tag = rand(22, B64) + "=="
    text = (
        '{\n  "smtp": {\n    "ciphertext": "' + rand(64, B64) + '",\n    "nonce": "' + rand(16, B64) + '",\n'
        '    "auth_tag": "' + tag + '",\n    "alg": "chacha20-poly1305"\n  }\n}'
    )
    return text, tag


CIPHERTEXT: list[Case] = [
    _sops,
    _sops_json,
    _ansible,
    _age,
    _transit,
    _jasypt,
    _bitwarden,
    _aws_kms,
    _gcp_kms,
    _jwe_at_rest,
    _sealed,
    _aead_fields,
]


@pytest.mark.parametrize("case", CIPHERTEXT, ids=lambda c: c.__name__.strip("_"))
def test_ciphertext_at_rest_is_kept(redactor: Redactor, case: Case) -> None:
    _kept(redactor, *case())


REFERENCES = [
    ("export DB_PASSWORD=op://Infra/pg-main/password", "op://Infra/pg-main/password"),
    ("DATABASE_PASSWORD=sm://billing-prod/db-password", "sm://billing-prod/db-password"),
    ("SMTP_PASSWORD=ssm:/prod/mailer/smtp_password", "ssm:/prod/mailer/smtp_password"),
    (
        "api_key: projects/shop-prod/secrets/payments-key/versions/7",
        "projects/shop-prod/secrets/payments-key/versions/7",
    ),
    (
        "DB_PASSWORD=@Microsoft.KeyVault(SecretUri=https://ops-kv.vault.azure.net/secrets/pg-password/)",
        "@Microsoft.KeyVault(SecretUri=https://ops-kv.vault.azure.net/secrets/pg-password/)",
    ),
    (
        'password = "arn:aws:secretsmanager:eu-west-2:000011112222:secret:rds!cluster-9f8e7d6c-AbCdEf"',
        "arn:aws:secretsmanager:eu-west-2:000011112222:secret:rds!cluster-9f8e7d6c-AbCdEf",
    ),
    (
        "        password: {{ .Values.redis.auth.password | b64enc }}",
        "{{ .Values.redis.auth.password | b64enc }}",
    ),
    ("          NPM_TOKEN: ${{ secrets.NPM_PUBLISH_TOKEN }}", "${{ secrets.NPM_PUBLISH_TOKEN }}"),
]


@pytest.mark.parametrize(("text", "reference"), REFERENCES)
def test_secret_store_references_and_templates_are_kept(
    redactor: Redactor, text: str, reference: str
) -> None:
    _kept(redactor, text, reference)


SAMPLES = [
    ("OPENAI_API_KEY=sk-proj-<paste-your-key>", "sk-proj-<paste-your-key>"),
    ("STRIPE_SECRET_KEY=sk_live_${STRIPE_SUFFIX}", "sk_live_${STRIPE_SUFFIX}"),
    ("GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz", "ghp_0123456789abcdefghijklmnopqrstuvwxyz"),
    ("api_key: 1234567890abcdef1234567890abcdef", "1234567890abcdef1234567890abcdef"),
    ("OPENAI_API_KEY=sk-proj-" + "0" * 48, "sk-proj-" + "0" * 48),
    (
        "export SLACK_TOKEN=xoxp-this-token-is-not-real-and-will-not-work",
        "xoxp-this-token-is-not-real-and-will-not-work",
    ),
    ("SECRET_KEY=fake-secret-key-for-local-dev-only", "fake-secret-key-for-local-dev-only"),
    ("password: your-password-123", "your-password-123"),
    ("HMAC_SECRET=deadbeefdeadbeefdeadbeefdeadbeef", "deadbeefdeadbeefdeadbeefdeadbeef"),
    ("API_TOKEN=tok_abc123abc123abc123abc123", "tok_abc123abc123abc123abc123"),
]


@pytest.mark.parametrize(("text", "sample"), SAMPLES)
def test_documented_samples_are_kept(redactor: Redactor, text: str, sample: str) -> None:
    _kept(redactor, text, sample)


def test_a_jwt_with_a_samples_claims_is_kept(redactor: Redactor) -> None:
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    token = f"{header}.{_b64url({'sub': '1234567890', 'name': 'Jane Doe', 'iat': 1700000000})}.{rand(43, URLSAFE)}"
    _kept(redactor, f"Authorization: Bearer {token}", token)
    token = f"{header}.{_b64url({'email': 'dev@example.com', 'exp': 1900000000})}.{rand(43, URLSAFE)}"
    _kept(redactor, f"curl -H 'Authorization: Bearer {token}' https://api.internal/", token)


def test_report_says_ciphertext(redactor: Redactor) -> None:
    text, _ = _transit()
    report = redactor.report(text)
    assert report.result.text == text
    assert Reason.CIPHERTEXT in {k.reason for k in report.kept}


# --- and the other way: real secrets beside the same words and shapes are caught ---------------------


def test_a_secret_beside_the_word_example_is_caught(redactor: Redactor) -> None:
    key = rand(40, ALNUM)
    _caught(redactor, f"# example config, copy it\nAPI_KEY={key}\n", key)
    _caught(redactor, f"EXAMPLE_SERVICE_TOKEN={key}", key)
    password = rand(6, ALNUM) + "#" + rand(7, ALNUM)
    _caught(redactor, f"for example: password={password}", password)


def test_a_secret_after_an_envelope_or_an_armour_is_caught(redactor: Redactor) -> None:
    secret = rand(32, ALNUM)
    sops, _ = _sops()
    _caught(redactor, f"{sops}\napi_token: {secret}\n", secret)
    ansible, _ = _ansible()
    _caught(redactor, f"{ansible}api_token: {secret}\n", secret)
    age, _ = _age()
    _caught(redactor, f"{age}\nAPI_TOKEN={secret}\n", secret)


def test_a_jwe_presented_as_a_bearer_credential_is_caught(redactor: Redactor) -> None:
    value = _jwe_at_rest()[1]
    _caught(redactor, f"Authorization: Bearer {value}", value)


def test_a_key_beside_an_envelopes_fields_is_caught(redactor: Redactor) -> None:
    key = rand(43, B64) + "="
    text = f'{{"ciphertext": "{rand(64, B64)}", "iv": "{rand(16, B64)}",\n "key": "{key}"}}'
    _caught(redactor, text.replace(", ", ",\n "), key)


def test_a_long_secret_under_a_plain_mapping_is_caught(redactor: Redactor) -> None:
    token = rand(300, B64)
    _caught(redactor, f"credentials:\n  ci:\n    api_token: {token}\n  deploy:\n    region: eu\n", token)


def test_a_password_under_an_unencrypted_or_encryption_name_is_caught(redactor: Redactor) -> None:
    secret = rand(24, ALNUM)
    _caught(redactor, f"encrypted: false\npassword: {secret}\n", secret)
    _caught(redactor, f"unencrypted_password: {secret}\n", secret)
    _caught(redactor, f"encryption:\n  key: {secret}\n", secret)


def test_a_store_url_with_a_password_in_it_is_caught(redactor: Redactor) -> None:
    password = rand(20, ALNUM)
    _caught(redactor, f"VAULT_ADDR=vault://admin:{password}@vault.internal:8200/", password)


def test_a_token_that_starts_counting_is_caught(redactor: Redactor) -> None:
    token = "ghp_1234" + rand(32, ALNUM)
    _caught(redactor, f"GITHUB_TOKEN={token}", token)
    key = "sk-proj-" + rand(40, URLSAFE) + "<br>"
    _caught(redactor, f"OPENAI_API_KEY={key}", key[:-4])


def test_a_jwt_with_real_claims_is_caught(redactor: Redactor) -> None:
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    token = f"{header}.{_b64url({'sub': rand(12, HEX), 'iat': 1761000000})}.{rand(43, URLSAFE)}"
    _caught(redactor, f"Authorization: Bearer {token}", token)
