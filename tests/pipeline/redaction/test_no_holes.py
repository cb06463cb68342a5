"""Issue 12, "redaction with no holes": the shapes that once passed through, each pinned here.

A provider token is redacted whatever its random body holds; a placeholder is only a value that is
a placeholder as a whole; URL passwords, Unicode, quotes of the other kind, escapes and values
wrapped across lines are all redacted whole."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.redaction import Redactor
from tests.pipeline.redaction.secret_fakes import B64, URLSAFE, rand


def _redacted(redactor: Redactor, text: str, *secrets: str) -> str:
    out = redactor.redact(text).text
    for secret in secrets:
        assert secret not in out, out
        for i in range(0, max(1, len(secret) - 11)):  # no 12-character fragment survives either
            assert secret[i : i + 12] not in out or len(secret) < 12, out
    assert "[REDACTED:" in out, out
    return out


# --- placeholder words inside random bodies -----------------------------------------------------


def _anthropic_with(word: str) -> str:
    body = rand(40, URLSAFE) + word + rand(93 - 40 - len(word), URLSAFE)
    return "sk-ant-api03-" + body + "AA"


@pytest.mark.parametrize(
    "token",
    [
        "ghp_16C7e42F292c6912E7710c838347Ae17YoUR",
        "ghp_Todo6912E7710c838347Ae17XyZ16C7e42F29",
        "ghp_abcdef12E7710c838347Ae17XyZ16C7e42F29",
        "github_pat_11ABCDEFG0123456789abc_"
        + "dummy"
        + "Qm7b4X9kL2pW8zR5tY3uV6nB1cD0eF"
        + "xxxxHere1234567890abcdef",
        "sk-proj-" + "yourKey" + "a8F3kL9mQ2" * 7 + "T3BlbkFJ" + "FIXMEb7Qm1" * 7 + "zz",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "glpat-123456exampleQ7b9xY1",
        "npm_placeholderQm7b4X9kL2pW8zR5tY3uV6nB1",
        "hf_dummyQmbXkLpWzRtYuVnBcDeFgHiJkLmNo",
    ],
)
def test_placeholder_word_inside_a_token_body_is_no_placeholder(redactor: Redactor, token: str) -> None:
    for text in (token, f"export SERVICE_TOKEN={token}\n", json.dumps({"token": token})):
        _redacted(redactor, text, token)


@pytest.mark.parametrize("word", ["Todo", "YOUR", "xxxx", "fixme", "dummy", "-here", "abcdef", "123456"])
def test_anthropic_key_with_a_word_inside(redactor: Redactor, word: str) -> None:
    key = _anthropic_with(word)
    for text in (key, f"export ANTHROPIC_API_KEY={key}\n", f'ANTHROPIC_API_KEY="{key}"'):
        out = _redacted(redactor, text, key)
        assert "[REDACTED:anthropic-api-key:" in out


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("aws_access_key_id = AKIAQ3EGW7ZK4RXM2PLN\n", "AKIAQ3EGW7ZK4RXM2PLN"),
        ("AKIAQ3EGW7ZK4RXM2PLN", "AKIAQ3EGW7ZK4RXM2PLN"),
        (
            "aws_secret_access_key = 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\n",
            "Jx8kq2Vb/Ln4Rt7Yp0Wm3Zc+Hd6Fs9Ga1Ue5Ko2T",
        ),
        (
            "export AWS_SECRET_ACCESS_KEY=Jx8kq2Vb/Ln4Rt7Yp0Wm3Zc+Hd6Fs9Ga1Ue5Ko2T",
            "Jx8kq2Vb/Ln4Rt7Yp0Wm3Zc+Hd6Fs9Ga1Ue5Ko2T",
        ),
        (
            "SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        ),
    ],
)
def test_example_shaped_keys_are_redacted(redactor: Redactor, text: str, secret: str) -> None:
    """Keys shaped like the documentation's, with bodies no vendor published, are keys."""
    _redacted(redactor, text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "export AWS_ACCESS_KEY_ID=AKIAI44QH8DHBEXAMPLE AWS_SECRET_ACCESS_KEY=je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        "AKIAIOSFODNN7EXAMPLE",
        'stripe.api_key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"',
        "curl https://api.stripe.com/v1/charges -u sk_test_4eC39HqLyjWDarjtT1zdp7dc:",
        "STRIPE_PUBLISHABLE_KEY=pk_test_TYooMQauvdEDq54NiTphI7jx",
    ],
)
def test_documented_example_keys_are_kept(redactor: Redactor, text: str) -> None:
    """A vendor's published example key (every tutorial copies it) opens no account: kept as it is."""
    assert redactor.redact(text).text == text
    assert redactor.redact(json.dumps({"c": text})).text == json.dumps({"c": text})


@pytest.mark.parametrize(
    "text",
    [
        "GITHUB_TOKEN=ghp_" + "x" * 36,
        "GITHUB_TOKEN=ghp_" + "X" * 36,
        "STRIPE_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
        "use sk-your-openai-key-here as the key",
        "xoxb-your-token-here",
        "OPENAI_API_KEY=<YOUR_OPENAI_API_KEY>",
        'api_key: "YOUR_API_KEY"',
        "password: changeme",
        "SECRET_KEY=${SECRET_KEY}",
        "export GITHUB_TOKEN=$(gh auth token)",
        "password: ***",
        "DB_PASSWORD=xxxxxxxx",
        "token: <token>",
        "ANTHROPIC_API_KEY=sk-ant-xxxxx",
        "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DB",
        "redis://:${REDIS_PASSWORD}@cache:6379",
        "https://user:<password>@example.com/",
    ],
)
def test_whole_value_placeholders_survive(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text


# --- URL passwords, however short or common ------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "pw"),
    [
        ("mysql://root:hunter2@localhost/db", "hunter2"),
        ("postgres://postgres:postgres@localhost/test", ":postgres@"),
        ("redis://:secret@cache:6379/0", "secret"),
        ("https://admin:a1@jenkins.acme.dev/", ":a1@"),
        ("amqp://guest:guest@rabbit:5672/", ":guest@"),
        ("mongodb://app:1234@db/app", ":1234@"),
        ("ftp://me:Zürich!@files.acme.dev/", "Zürich"),
        ("postgresql://user:password@localhost/app", ":password@"),
    ],
)
def test_any_url_password_is_redacted(redactor: Redactor, url: str, pw: str) -> None:
    for text in (url, f"DATABASE_URL={url}\n", json.dumps({"url": url})):
        out = redactor.redact(text).text
        assert pw not in out, out
        assert "[REDACTED:" in out


# --- Unicode, quotes of the other kind, escapes ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('DB_PASSWORD="Zürich-Secr3t-2024!"', "Zürich-Secr3t-2024!"),
        ("export DB_PASSWORD=Zürich-Secr3t-2024!", "Zürich-Secr3t-2024!"),
        ("PGPASSWORD='Zürich-Secr3t-2024!' psql -h db", "Zürich-Secr3t-2024!"),
        ("DB_PASSWORD=pässwört-ñ-日本語-42", "pässwört-ñ-日本語-42"),
        ('{"DB_PASSWORD": "Z\\u00fcrich-Secr3t-2024!"}', "Z\\u00fcrich-Secr3t-2024!"),
        ("JWT_SECRET='ab\"Qm7bX9kL2pW4zR'", 'ab"Qm7bX9kL2pW4zR'),
        ('JWT_SECRET="ab\'Qm7bX9kL2pW4zR"', "ab'Qm7bX9kL2pW4zR"),
        ("PGPASSWORD=Zq8w\\$X4nB7vK2 psql", "Zq8w\\$X4nB7vK2"),
        ('DB_PASSWORD="Zq8w\\"X4nB7vK2"', 'Zq8w\\"X4nB7vK2'),
    ],
)
def test_assignment_values_with_unicode_quotes_and_escapes(
    redactor: Redactor, text: str, secret: str
) -> None:
    _redacted(redactor, text, secret)
    # The same line inside a transcript: JSON-escaped once (ASCII or not) and twice.
    for wrapped in (
        json.dumps({"content": text}),
        json.dumps({"content": text}, ensure_ascii=False),
        json.dumps({"o": json.dumps({"o": text})}),
    ):
        out = redactor.redact(wrapped).text
        for fragment in re.findall(r"[A-Za-z0-9]{4,}", secret):  # no piece of it, however escaped
            assert fragment not in out, out
        json.loads(out)


# --- values wrapped across lines -------------------------------------------------------------------


def test_backslash_continuation_is_redacted_whole(redactor: Redactor) -> None:
    head, tail = "sk-proj-" + rand(60, URLSAFE), rand(14, URLSAFE) + "T3BlbkFJ" + rand(74, URLSAFE)
    text = f"export OPENAI_API_KEY={head}\\\n{tail}\n$ python app.py\n"
    out = _redacted(redactor, text, head, tail)
    assert out.endswith("\n$ python app.py\n")
    _redacted(redactor, json.dumps({"command": text}), head, tail)
    pw_head, pw_tail = rand(12), rand(12)
    _redacted(redactor, f'DB_PASSWORD="{pw_head}\\\n{pw_tail}"\n', pw_head, pw_tail)


def test_base64_block_is_redacted_whole(redactor: Redactor) -> None:
    blob = rand(300, B64) + "=="
    lines = [blob[i : i + 76] for i in range(0, len(blob), 76)]
    text = "AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjE" + "\n".join(lines) + "\nAWS_REGION=us-east-1\n"
    out = _redacted(redactor, text, *lines)
    assert out.endswith("\nAWS_REGION=us-east-1\n")
    yaml = "data:\n  secret_key: |\n" + "".join(f"    {line}\n" for line in lines) + "  region: eu\n"
    out = _redacted(redactor, yaml, *lines)
    assert out.endswith("  region: eu\n")


def test_json_string_with_newlines_is_redacted_whole(redactor: Redactor) -> None:
    parts = [rand(40, B64) for _ in range(3)]
    text = json.dumps({"client_secret": "\n".join(parts), "region": "eu"})
    out = _redacted(redactor, text, *parts)
    assert json.loads(out)["region"] == "eu"
    _redacted(redactor, json.dumps({"output": text}), *parts)


def test_unicode_values_have_character_spans(redactor: Redactor) -> None:
    text = 'é 🙂 DB_PASSWORD="Zürich-Secr3t-2024!" and PGPASSWORD=日本語-Passw0rd-42 ok'
    findings = redactor.find(text)
    assert [text[f.start : f.end] for f in findings] == ["Zürich-Secr3t-2024!", "日本語-Passw0rd-42"]
    report = redactor.report(text + " password: ab")
    assert [(k.rule, k.start) for k in report.kept] == [("password", len(text) + 11)]


def test_a_list_of_tokens_one_per_line_all_go(redactor: Redactor) -> None:
    tokens = ["ghp_" + rand(36) for _ in range(5)] + ["glpat-" + rand(20, URLSAFE) for _ in range(5)]
    out = redactor.redact("$ cat tokens.txt\n" + "\n".join(tokens) + "\n$ ls\n").text
    assert all(t not in out for t in tokens)
    assert out.startswith("$ cat tokens.txt\n[REDACTED:")
    assert out.endswith("]\n$ ls\n")


# --- weak passwords written as literals -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pw"),
    [
        ("POSTGRES_PASSWORD=postgres\n", "postgres"),
        ("export MYSQL_ROOT_PASSWORD=secret\n", "secret"),
        ("MYSQL_ROOT_PASSWORD=root docker compose up\n", "root"),
        ("PGPASSWORD=postgres psql -h db\n", "postgres"),
        ("    POSTGRES_PASSWORD: postgres\n", "postgres"),
        ('password = "letmein"\n', "letmein"),
        ("password = 'admin'\n", "admin"),
        ('{"password": "test"}\n', "test"),
        ('ADMIN_PASSWORD="correct horse battery staple"\n', "correct horse battery staple"),
    ],
)
def test_a_weak_password_written_as_a_literal_is_redacted(redactor: Redactor, text: str, pw: str) -> None:
    out = redactor.redact(text).text
    assert pw not in out, out
    assert "[REDACTED:password:" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "password = get_password()\n",
        "password = self.password\n",
        "password = secret\n",  # a variable in code
        "password: str\n",
        "password: Optional[str] = None\n",
        'password = "password"\n',
        'DB_PASSWORD="${DB_PASSWORD}"\n',
        "REDIS_PASSWORD=changeme\n",
        'password = ""\n',
        'password: "string"\n',
        '"password": "<your password>"\n',
        "POSTGRES_PASSWORD=$POSTGRES_PASSWORD\n",
        'PASSWORD_FILE="/run/secrets/db_password"\n',
        '{"password": "Mot de passe"}',
        json.dumps(json.dumps({"forgot_password": "Mot de passe oublié ?"})),  # a label, JSON-escaped
    ],
)
def test_what_only_names_a_password_stays(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text
