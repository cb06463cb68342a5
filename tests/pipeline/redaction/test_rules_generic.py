"""Generic secret assignments in env, shell, JSON, YAML, TOML, XML, properties and code, and the
names and values that must not count."""

from __future__ import annotations

import json

import pytest

from pipeline.redaction import Redactor
from pipeline.redaction.filters import Level
from pipeline.redaction.rules_generic import classify
from tests.pipeline.redaction.secret_fakes import B64, HEX, password, rand

TEMPLATES = [
    "DB_PASSWORD={v}\n",
    "export DB_PASSWORD='{v}'\n",
    '$env:DB_PASSWORD="{v}"\n',
    '{{"db_password": "{v}", "port": 5432}}',
    "database:\n  password: {v}\n  host: db\n",
    'password = "{v}"\n',
    "spring.datasource.password={v}\n",
    "<password>{v}</password>\n",
    '<add key="ClearTextPassword" value="{v}" />\n',
    "Server=tcp:x,1433;Database=app;User ID=app;Password={v};Encrypt=True;",
    '- name: DB_PASSWORD\n  value: "{v}"\n',
    '{{"name": "DB_PASSWORD", "value": "{v}"}}',
    "psycopg2.connect(host='db', password='{v}')",
    "| `DB_PASSWORD` | `{v}` |",
    "GET /login?user=jo&password={v}&next=/home",
    "docker run -e DB_PASSWORD={v} app",
    "app.config['DB_PASSWORD'] = '{v}'",
    'os.environ["DB_PASSWORD"] = "{v}"',
]


@pytest.mark.parametrize("template", TEMPLATES)
def test_password_assignments(redactor: Redactor, template: str) -> None:
    pw = password()
    text = template.format(v=pw)
    for wrapped in (text, json.dumps({"content": text}), json.dumps({"o": json.dumps({"o": text})})):
        out = redactor.redact(wrapped).text
        assert pw not in out, out
        assert "[REDACTED:password:" in out


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("AWS_SECRET_ACCESS_KEY", lambda: rand(40, B64), "aws-secret-access-key"),
        ("aws_secret_access_key", lambda: rand(40, B64), "aws-secret-access-key"),
        ("DD_API_KEY", lambda: rand(32, HEX), "secret-assignment"),
        ("TWILIO_AUTH_TOKEN", lambda: rand(32, HEX), "secret-assignment"),
        ("clientSecret", lambda: rand(30), "secret-assignment"),
        ("_authToken", lambda: "6f1c2a9e-0b7d-4c1e-9a3f-" + rand(12, HEX), "secret-assignment"),
        ("auth", lambda: "ZGVwbG95OnMzY3JldC1wYXNz", "secret-assignment"),
        ("SECRET_KEY_BASE", lambda: rand(64, HEX), "secret-assignment"),
        (
            "DJANGO_SECRET_KEY",
            lambda: "django-insecure-" + rand(20) + "(x)&y#" + rand(20),
            "secret-assignment",
        ),
        ("STRIPE_KEY", lambda: rand(30), "secret-assignment"),
    ],
)
def test_secret_assignments(redactor: Redactor, name: str, value: object, rule: str) -> None:
    v = value()  # type: ignore[operator]
    for text in (f"{name}={v}\n", f'{{"{name}": "{v}"}}', f"{name}: {v}\n", f'{name} = "{v}"\n'):
        out = redactor.redact(text).text
        assert v not in out, out
        assert f"[REDACTED:{rule}:" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "token_type: Bearer",
        "SECRET_NAME = 'prod/db/password'",
        "max_tokens: 4096",
        "input_tokens = 1832",
        '{"next_page_token": "' + rand(40) + '"}',
        '{"nextPageToken": "' + rand(40) + '"}',
        "password_min_length = 12",
        "KMS_KEY_ID=1234abcd-12ab-34cd-56ef-1234567890ab",
        'api_key = os.environ["OPENAI_API_KEY"]',
        'password = os.getenv("DB_PASSWORD")',
        "token = settings.API_TOKEN",
        "const key = process.env.STRIPE_SECRET_KEY;",
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}",
        "def login(password: str, token: Optional[str] = None):",
        "api_key=api_key, password=password",
        '{"key": "Enter", "keyCode": 13}',
        "password: ********",
        "password: changeme",
        'api_key: "YOUR_API_KEY"',
        "JWT_SECRET=replace-me",
        "OPENAI_API_KEY=<YOUR_OPENAI_API_KEY>",
        "OPENAI_API_KEY=your-api-key-here",
        "PWD=/home/dev/src/app",
        "GOOGLE_APPLICATION_CREDENTIALS=/secrets/sa.json",
        "TOKEN_URL=https://oauth2.googleapis.com/token",
        "if password == user_password:",
        "The password field is required; the token expires in 1 hour.",
        "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand(43, B64),
        "secretKeyRef:\n  name: app-secrets\n  key: password",
        "echo $TOKEN | base64 -d",
        "password_hash = bcrypt.hashpw(pw, salt)",
        "cache_key = f'user:{user_id}'",
    ],
)
def test_names_and_values_that_are_not_secrets(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text


@pytest.mark.parametrize(
    ("name", "level"),
    [
        ("DB_PASSWORD", Level.PASSWORD),
        ("PGPASSWORD", Level.PASSWORD),
        ("passwd", Level.PASSWORD),
        ("clientSecret", Level.SECRET),
        ("AWS_SECRET_ACCESS_KEY", Level.SECRET),
        ("x-api-key", Level.SECRET),
        ("APIKey", Level.SECRET),
        ("_authToken", Level.SECRET),
        ("SENDGRID_KEY", Level.KEY),
        ("key", Level.KEY),
        ("token_type", None),
        ("SECRET_NAME", None),
        ("max_tokens", None),
        ("page_token", None),
        ("primaryKey", None),
        ("keyPressed", None),
        ("author", None),
        ("bypass", None),
        ("publishable_key", None),
    ],
)
def test_classify_names(name: str, level: Level | None) -> None:
    assert classify(name.encode()) == level
