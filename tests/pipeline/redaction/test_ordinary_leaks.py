"""Secrets that leaked in ordinary use (issue 24), by class, each in several wrappings: bare, in a
shell session, JSON-escaped once and twice, as a tool result (every line prefixed), and coloured
with ANSI codes (``jq -C``, ``grep --color=always``) with a zero-width character inside the value.
Their look-alikes come out unchanged."""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator

import pytest

from pipeline.redaction import Redactor
from pipeline.redaction.normalise import normalise
from tests.pipeline.redaction.secret_fakes import ALNUM, B64, HEX, URLSAFE, crc_token, password, rand

UPPER_ALNUM = string.ascii_uppercase + string.digits
BASE32 = string.ascii_lowercase + "234567"

SGR = "\x1b[01;31m\x1b[K"
RESET = "\x1b[m\x1b[K"
ZWSP = "\u200b"


def wrappings(text: str, secret: str) -> Iterator[tuple[str, str, list[str]]]:
    """(wrapping, wrapped text, forms of the secret that must not survive)."""
    once = json.dumps(secret)[1:-1]
    twice = json.dumps(once)[1:-1]
    yield "bare", text, [secret]
    yield "shell", f"$ cat notes.txt\n{text}\n$ echo done\ndone", [secret]
    yield "json-once", json.dumps({"type": "tool_result", "content": text}), [secret, once]
    yield "json-twice", json.dumps({"payload": json.dumps({"content": text})}), [secret, once, twice]
    yield "tool-result", "\n".join("  │ " + line for line in text.split("\n")), [secret]
    coloured = _colour(text, secret)
    yield "ansi", coloured, [secret]
    yield "ansi-json", json.dumps({"output": coloured}), [secret, once]


def _colour(text: str, secret: str) -> str:
    """The keyword before the secret highlighted as ``grep --color=always`` does, the value coloured
    as ``jq -C`` does, and a zero-width space inside it."""
    at = text.index(secret)
    head = text[:at]
    word_end = len(head.rstrip(" :='\"/"))
    cut = max(head.rfind(c, 0, word_end) for c in " \n\"'=:(") + 1
    mid = len(secret) // 2
    value = f"\x1b[0;32m{secret[:mid]}{ZWSP}{secret[mid:]}\x1b[0m"
    return head[:cut] + SGR + head[cut:word_end] + RESET + head[word_end:] + value + text[at + len(secret) :]


def _check(redactor: Redactor, template: str, make: Callable[[], str]) -> None:
    secret = make()
    text = template.format(v=secret)
    for name, wrapped, forms in wrappings(text, secret):
        out = redactor.redact(wrapped).text
        for form in forms:
            assert form not in out, (name, out)
        assert "[REDACTED:" in out, (name, out)
        assert "\x1b" not in out, (name, out)
        assert ZWSP not in out, (name, out)


def _word_password() -> str:
    return rand(5, string.ascii_lowercase) + rand(2, string.digits) + rand(1, "!%#") + rand(3)


ANSI_AND_INVISIBLE = [
    ('{{"user": "deploy", "password": "{v}"}}', password),
    ("config/app.env:3:DB_PASSWORD={v}", password),
    ("notes.md:12:  key: sk-ant-api03-{v}", lambda: rand(93, URLSAFE) + "AA"),
    ("creds.txt:1:AKIA{v}", lambda: rand(16, string.ascii_uppercase + "234567")),
]

SHORT_BEARER = [
    (
        'curl -H "Authorization: Bearer {v}" http://localhost:8080/api',
        lambda: "devtoken" + rand(2, "0123456789"),
    ),
    ("Authorization: Bearer {v}", lambda: rand(6, string.ascii_lowercase) + rand(2, string.digits)),
    ("authorization: Token {v}", lambda: rand(9, ALNUM) + "7"),
    ("Authorization: ApiKey {v}", lambda: "k" + rand(7, HEX) + "1"),
]

PROSE_PASSWORDS = [
    ("fyi my password is {v} for the staging box", _word_password),
    ("You can log in with admin / {v} on the dashboard", _word_password),
    ("the creds are dev:{v} (local only)", _word_password),
    ("Das Passwort ist {v}", _word_password),
    ("Kennwort: {v}", _word_password),
    ("le mot de passe est {v}", _word_password),
    ("la contraseña es {v}", _word_password),
    ("a senha é {v}", _word_password),
    ("la password è {v}", _word_password),
    ("het wachtwoord is {v}", _word_password),
    ("пароль: {v}", _word_password),
    ("мой пароль {v}", _word_password),
    # found by the second benchmark split (benchmarks/data/redaction_fresh.txt)
    ("ok so the root pw for the nas is {v}", _word_password),
    ("das Passwort für den Server lautet {v}", _word_password),
    ("use login admin / {v} for grafana", _word_password),
    ("secret.yaml: password: {v}", lambda: base64.b64encode(password().encode()).decode()),
]

COMMAND_LINES = [
    ("zip -r -P {v} backup.zip db/", password),
    ("7z a -p{v} -mhe=on vault.7z secrets/", lambda: rand(14)),
    ("rar a -hp{v} backup.rar docs/", lambda: rand(12)),
    ("ansible-playbook site.yml --vault-password-file <(echo {v})", password),
    ("mysql -uroot -p'{v}' app", lambda: "p@ss$w0rd!" + rand(4)),
    ("curl -u deploy:'{v}' https://ci.acme.dev/api", lambda: "a$b&c|" + rand(8)),
    ("sshpass -p '{v}' ssh deploy@10.0.0.5", password),
    ("set -x OPENAI_API_KEY {v}", lambda: "sk-proj-" + rand(40, URLSAFE)),
    ("set -gx DATABASE_PASSWORD {v}", password),
    ("set -Ux GITHUB_TOKEN {v}", lambda: crc_token("ghp_")),
]

ENCODED = [
    ("echo {v} | base64 -d", lambda: base64.b64encode(password().encode()).decode()),
    (
        "echo -n '{v}' | base64 --decode > token.txt",
        lambda: base64.b64encode(("ghp_" + rand(36)).encode()).decode(),
    ),
    ("blob: {v}", lambda: base64.b64encode(("sk-ant-api03-" + rand(93, URLSAFE) + "AA").encode()).decode()),
    ("data = '{v}'", lambda: base64.b64encode(crc_token("ghp_").encode()).decode()),
]

SIGNED_URLS = [
    (
        "https://b.s3.amazonaws.com/k.tgz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA{v}"
        "%2F20261203%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261203T000000Z",
        lambda: rand(16, string.ascii_uppercase + "234567"),
    ),
    ("https://b.s3.amazonaws.com/k.tgz?X-Amz-Expires=900&X-Amz-Signature={v}", lambda: rand(64, HEX)),
    ("https://storage.googleapis.com/b/o?X-Goog-Expires=600&X-Goog-Signature={v}", lambda: rand(512, HEX)),
    ("https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig={v}", lambda: rand(43, URLSAFE) + "%3D"),
    ("https://cdn.acme.dev/f.zip?Expires=1767225600&signature={v}&Key-Pair-Id=K2", lambda: rand(40, URLSAFE)),
    (
        'Authorization: Digest username="bob", realm="api", nonce="dcd98b7102dd2f0e", uri="/", response="{v}"',
        lambda: rand(32, HEX),
    ),
]

PEM_QUOTED = [
    (
        "> -----BEGIN OPENSSH PRIVATE KEY-----\n> {v}\n> -----END OPENSSH PRIVATE KEY-----",
        lambda: rand(64, B64),
    ),
    (
        "> -----BEGIN RSA PRIVATE KEY-----\n> " + "A" * 0 + "{v}\n> " + "\n> -----END RSA PRIVATE KEY-----",
        lambda: rand(64, B64),
    ),
]

SIBLING_KEYS = [
    ('{{"name": "AccountKey", "value": "{v}"}}', lambda: rand(86, B64) + "=="),
    ('{{"key": "password", "value": "{v}"}}', password),
    ('{{"Name": "DB_PASSWORD", "Value": "{v}"}}', password),
    ('[{{"ParameterKey": "ApiToken", "ParameterValue": "{v}"}}]', lambda: rand(32)),
]

POSITIONAL = [
    ("client = Client('AC{a}', '{v}')", lambda: rand(32, HEX)),
    ("co = cohere.Client('{v}')", lambda: rand(40, ALNUM)),
    ('co = cohere.ClientV2("{v}")', lambda: rand(40, ALNUM)),
    ("ngrok config add-authtoken {v}", lambda: rand(27, ALNUM) + "_" + rand(21, ALNUM)),
    ("ngrok authtoken {v}", lambda: rand(49, ALNUM)),
]

PREFIXED = [
    ("DT_API_TOKEN_IN_NOTES {v}", lambda: f"dt0c01.{rand(24, UPPER_ALNUM)}.{rand(64, UPPER_ALNUM)}"),
    (
        "use {v} for the hubspot call",
        lambda: f"pat-na1-{rand(8, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(12, HEX)}",
    ),
    (
        "hubspot: {v}",
        lambda: f"pat-eu1-{rand(8, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(12, HEX)}",
    ),
    ("az devops login; PAT {v}", lambda: rand(52, BASE32)),
    ("git clone https://{v}@dev.azure.com/acme/proj/_git/repo", lambda: rand(52, BASE32)),
    ('Sentry.init({{ dsn: "https://{v}@o450123.ingest.sentry.io/5501234" }})', lambda: rand(32, HEX)),
    ("SENTRY_DSN=https://{v}@sentry.acme.dev/7", lambda: rand(32, HEX)),
]


def _seed_phrase() -> str:
    from pipeline.redaction.seed import wordlist

    words = sorted(wordlist())
    r = random.Random(rand(8))
    return " ".join(r.choice(words) for _ in range(r.choice((12, 24))))


SEED_PHRASES = [
    ("Here is the recovery phrase for the test wallet: {v}", _seed_phrase),
    ("seed: {v}", _seed_phrase),
    ("cast wallet new-mnemonic\nPhrase:\n{v}\nAccounts: 1", _seed_phrase),
]


def _cases(*groups: list[tuple[str, Callable[[], str]]]) -> list[tuple[str, Callable[[], str]]]:
    return [case for group in groups for case in group]


@pytest.mark.parametrize(
    ("template", "make"),
    _cases(
        ANSI_AND_INVISIBLE,
        SHORT_BEARER,
        PROSE_PASSWORDS,
        COMMAND_LINES,
        ENCODED,
        SIGNED_URLS,
        PEM_QUOTED,
        SIBLING_KEYS,
        POSITIONAL,
        PREFIXED,
        SEED_PHRASES,
    ),
)
def test_the_secret_is_redacted_in_every_wrapping(
    redactor: Redactor, template: str, make: Callable[[], str]
) -> None:
    if "{a}" in template:
        template = template.replace("{a}", rand(32, HEX))
    _check(redactor, template, make)


def test_redact_report_lists_a_short_bearer_value(redactor: Redactor) -> None:
    report = redactor.report("curl -H 'Authorization: Bearer devtoken42' localhost")
    assert "devtoken42" not in report.result.text
    assert sum(report.result.counts.values()) == 1
    assert sum(report.found.values()) >= 1


LOOK_ALIKES = [
    # prose about passwords, not one
    "my password is too short for the new policy",
    "the password is stored in Vault under kv/app",
    "Passwort ist erforderlich",
    "le mot de passe est incorrect",
    "log in with your SSO account / then open the dashboard",
    "log in with GitHub / Google",
    "login: src/auth is where it lives",
    "the creds are in 1Password",
    # bearer words and references
    "Authorization: Bearer $TOKEN",
    "Authorization: Bearer ${API_TOKEN}",
    'headers["Authorization"] = f"Bearer {token}"',
    "Authorization: Bearer <token>",
    "he was the bearer of good news",
    # references, not values
    "const client = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY! });",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "api_key=os.environ['OPENAI_API_KEY']",
    "password: ${{ secrets.DB_PASSWORD }}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "export API_KEY=$OPENAI_KEY",
    "API_TOKEN=${CI_TOKEN}",
    "aws s3api head-object --bucket web --key build/fe71ccfe/main.js",
    '{"Key": "build/fe71ccfe/main.js", "Size": 48213}',
    '{"Key": "assets/img/logo.4f9a2c1e.png"}',
    # base64 of ordinary text, signatures as words
    "echo aGVsbG8gd29ybGQ= | base64 -d",
    "def verify(payload, signature=None):",
    "signature=sign(payload, key)",
    "set -x PATH /usr/local/bin $PATH",
    "set -gx EDITOR nvim",
    "Sentry.init({ dsn: process.env.SENTRY_DSN })",
    "git clone https://git@github.com/acme/app.git",
    "the abandon ability able about list is the start of the BIP-39 word list",
    "zip -r backup.zip db/",
    "Client('ACME Corp', 'Berlin')",
    "Digest authentication uses a response= field computed from the nonce",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text
    escaped = json.dumps({"content": text})
    assert redactor.redact(escaped).text == escaped


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://oauth2:{v}@gitlab.com/team/x.git", "https://oauth2:[REDACTED:"),
        ("postgresql://admin:{v}@db.internal:5432/app", "postgresql://admin:[REDACTED:"),
        (
            "mongodb://app:{v}@db-1.internal:27017,db-2.internal:27017/app?replicaSet=rs0",
            "mongodb://app:[REDACTED:",
        ),
    ],
)
def test_a_url_keeps_everything_but_the_credential(redactor: Redactor, text: str, expected: str) -> None:
    secret = "glpat-" + rand(20, URLSAFE) if "gitlab" in text else password().replace("@", "x")
    out = redactor.redact(text.format(v=secret)).text
    assert secret not in out
    assert out.startswith(expected), out
    tail = text.split("{v}")[1]
    assert out.endswith(tail), out


def test_a_password_holding_an_at_sign_is_redacted_whole(redactor: Redactor) -> None:
    out = redactor.redact("postgres://app:p@ss@w0rd@db.internal:5432/app").text
    assert "ss@w0rd" not in out
    assert "w0rd" not in out
    assert out.endswith("@db.internal:5432/app"), out


def test_normalise_removes_terminal_controls_and_invisible_characters() -> None:
    text = (
        "a\x1b[1;31mb\x1b[0m\x1b]8;;http://x\x07c\x1b]8;;\x07d\u200be\u2060f\ufeffg\u202eh\u2066i\x07j\x00k"
    )
    assert normalise(text) == "abcdefghijk"
    assert normalise("keep\ttabs\nand\r\nbreaks é 😀") == "keep\ttabs\nand\r\nbreaks é 😀"
    escaped = json.dumps({"o": "\x1b[32mgreen\x1b[0m to\u200bken"})
    assert json.loads(normalise(escaped)) == {"o": "green token"}
    twice = json.dumps(escaped)
    assert json.loads(json.loads(normalise(twice))) == {"o": "green token"}


def test_the_redactor_returns_normalised_text(redactor: Redactor) -> None:
    assert redactor.redact("\x1b[32mok\x1b[0m plain").text == "ok plain"
    spans = redactor.find("x\x1b[31m\x1b[K" + "DB_PASSWORD" + "\x1b[m=" + "Zq8#w" + ZWSP + "Xb4!p")
    assert [f.rule for f in spans] == ["password"]
