"""Issue 33, non-prose families by structure: shapes none of the generated corpora hold (credential
slots in records, tables, setters, SQL and command lines; key containers known by their magic;
tokens known by their shape alone; values wrapped past a gutter or a quote mark; cloud keys passed
by position), and the look-alikes beside them kept."""

from __future__ import annotations

import base64
import random
import string

import pytest

from pipeline.redaction import Redactor, family
from tests.pipeline.redaction.secret_fakes import mixed
from tests.pipeline.redaction.verdicts import caught, kept

_R = random.Random(0x33_51)


PW = "Vb9kQ2zrX7"
TOKEN = mixed(_R, 36)
HEX64 = mixed(_R, 64, "0123456789abcdef")

SLOTS = [
    # Go's %+v: Name:value with no blank, a camel-case name ending in a password's short spelling
    (f"cfg: {{Host:db.internal MasterPw:{TOKEN} Port:5432}}", TOKEN),
    # a setter's argument, whatever the builder
    (f'client.withApiSecret("{TOKEN}").build()', TOKEN),
    # SQL in other dialects' spellings
    (f"CREATE ROLE app LOGIN PASSWORD '{PW}';", PW),
    (f'ALTER USER sa IDENTIFIED BY "{PW}" ACCOUNT UNLOCK;', PW),
    (f"ALTER LOGIN svc WITH PASSWORD = N'{PW}', CHECK_POLICY = OFF;", PW),
    # a record holding a name and a value (CloudFormation-like casing)
    (f'[{{"Name": "STRIPE_SECRET", "Type": "String", "Value": "{TOKEN}"}}]', TOKEN),
    # Python's repr of a cookie jar entry
    (f"{{'domain': '.shop.test', 'name': 'remember_user_token', 'path': '/', 'value': '{TOKEN}'}}", TOKEN),
    # Windows' setx and csh's setenv
    (f'setx DEPLOY_TOKEN "{TOKEN}" /M', TOKEN),
    (f"setenv VAULT_PASSPHRASE {PW}", PW),
    # a setter of browser storage, and what a console printed for a getter
    (f"sessionStorage.setItem('auth', '{TOKEN}')", TOKEN),
    (f"> localStorage.getItem('jwt')\n< '{TOKEN}'", TOKEN),
    (f"> document.cookie\n< 'lang=en; connect.sid={TOKEN}; theme=dark'", TOKEN),
    # a Markdown table whose column is headed by a secret's name
    (f"| service | api_key |\n|---|---|\n| billing | {TOKEN} |\n", TOKEN),
    # a TOML triple-quoted string, a seed's name in camel case
    (f'smtp_password = """{PW}"""', PW),
    (f'const totpSeed = "{mixed(_R, 32, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}"', None),
]


@pytest.mark.parametrize(("text", "secret"), SLOTS)
def test_values_in_credential_slots_of_any_syntax(redactor: Redactor, text: str, secret: str | None) -> None:
    if secret is None:  # the value is the last quoted string
        secret = text.rsplit('"', 2)[1]
    caught(redactor, text, secret)


def test_a_table_column_reports_a_credential_slot(redactor: Redactor) -> None:
    text = f" id | login | db_password\n----+-------+------------\n  1 | app   | {PW}\n(1 row)\n"
    findings = redactor.find(text)
    assert [family(f.rule) for f in findings] == ["credential-slot"]
    assert text[findings[0].start : findings[0].end] == PW


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


KEYS = [
    # a Java keystore, a JCEKS store, Tor's and minisign's secret keys, in base64
    "KEYSTORE_B64=" + _b64(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + _R.randbytes(300)),
    "$ base64 -w0 release.jceks\n" + _b64(b"\xce\xce\xce\xce\x00\x00\x00\x02" + _R.randbytes(200)),
    _b64(b"== ed25519v1-secret: type0 ==\x00\x00\x00" + _R.randbytes(64)),
    "untrusted comment: minisign encrypted secret key\n" + _b64(b"EdScB2" + _R.randbytes(152)),
    # a raw key's bytes in Rust and in C, wrapped over lines with a gutter
    "const SEED: [u8; 32] = [" + ", ".join(f"0x{b:02x}" for b in _R.randbytes(32)) + "];",
    "static uint8_t priv[16] = {\n"
    + ",\n".join("  " + ", ".join(f"0x{b:02X}" for b in _R.randbytes(8)) for _ in range(2))
    + "\n};",
]


@pytest.mark.parametrize("text", KEYS)
def test_key_containers_by_their_structure(redactor: Redactor, text: str) -> None:
    body = text.split("\n")[-1] if "untrusted" in text or "base64" in text else text
    secret = body.split("=", 1)[1] if body.startswith("KEYSTORE") else body
    probe = secret[8:40] if "0x" not in secret else secret[secret.index("0x") : secret.index("0x") + 24]
    out = caught(redactor, text, probe)
    assert family(redactor.find(text)[0].rule) == "key-material", out


SHAPED = [
    f"export ACME_KEY=acme_{mixed(_R, 40)}",
    f"using zq.{mixed(_R, 64, '0123456789abcdef')} for the webhook",
    f"token: tq_v3_live_{mixed(_R, 48, string.ascii_lowercase + string.digits)}",
    f"dl_{mixed(_R, 16, '0123456789abcdef')}_{mixed(_R, 40, '0123456789abcdef')}",
]


@pytest.mark.parametrize("text", SHAPED)
def test_tokens_by_shape_whatever_their_prefix(redactor: Redactor, text: str) -> None:
    token = text.split()[-1] if "=" not in text.split()[-1] else text.split("=")[-1]
    if " for " in text:
        token = text.split()[1]
    caught(redactor, text, token[-24:])


LOOKALIKES = [
    f'{{"type": "tool_use", "id": "toolu_01{mixed(_R, 22)}", "name": "Bash"}}',  # an id: short body
    f'"id": "resp_{mixed(_R, 48, "0123456789abcdef")}"',  # a response id's 48 hex
    f"sha256_{mixed(_R, 64, '0123456789abcdef')}.tar.gz",  # a hash says what it is
    f"customer cus_{mixed(_R, 14)} charged via pi_{mixed(_R, 24)}",
    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db/password-Ab12Cd",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    f'"key_id": "{"-".join(mixed(_R, n, "0123456789abcdef") for n in (8, 4, 4, 4, 12))}"',
    "the password column is empty\n| user | password |\n|---|---|\n| bob | |\n",
    f"commit {mixed(_R, 40, '0123456789abcdef')}\nAuthor: Dev <dev@example.test>",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_look_alikes_of_these_shapes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)


def test_values_wrapped_past_a_gutter_or_quote_marks(redactor: Redactor) -> None:
    a, b = mixed(_R, 56), mixed(_R, 30)
    gutter = f"  12 │ client_secret: {a}\n     │ {b}\n  13 │ timeout: 30\n"
    caught(redactor, gutter, a, b)
    quoted = f"> On Tue, ops wrote:\n> the new api key:\n> {a}\n> {b}\n\nthanks\n"
    caught(redactor, quoted, a, b)


def test_cloud_keys_passed_by_position_or_typed_at_a_prompt(redactor: Redactor) -> None:
    ak, sk = mixed(_R, 24, string.ascii_uppercase + string.digits), mixed(_R, 40)
    caught(redactor, f"$ mc alias set minio http://127.0.0.1:9000 {ak} {sk}", ak, sk)
    caught(redactor, f"oss configure\nAccess Key ID []: {ak}\nAccess Key Secret []: {sk}\n", ak, sk)
    caught(redactor, f"[default]\nSecretId = {ak}\nSecretKey = {sk}\n", ak, sk)
    caught(redactor, f"rclone config create r s3 access_key_id {ak} secret_access_key {sk}", ak, sk)


def test_credential_files_printed_by_position(redactor: Redactor) -> None:
    a, b, c = mixed(_R, 12), mixed(_R, 10), mixed(_R, 14)
    caught(redactor, f"$ cat ~/.pgpass\nlocalhost:5432:*:app:{a}\n*:*:*:ro:{b}\n$ ", a, b)
    caught(redactor, f"# /etc/davfs2/secrets\n/mnt/dav alice {c}\n", c)
    caught(redactor, f"$ cat vpn/auth.txt\nalice\n{a}\n$ ", a)


def test_joined_literals_past_a_line_number_gutter_and_in_a_concat_call(redactor: Redactor) -> None:
    a, b = mixed(_R, 40), mixed(_R, 28)
    caught(redactor, f'    12\tlocal api_key = "{a}" ..\n    13\t  "{b}"\n', a, b)
    caught(redactor, f"secret_token = concat('{a}',\n  '{b}')", a, b)
