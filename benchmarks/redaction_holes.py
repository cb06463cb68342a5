"""Issue 12's cases for the benchmark corpus: tokens with placeholder words inside, documentation
keys, weak URL passwords, Unicode / other-quote / escaped values, values wrapped across lines, and
the shapes beyond the issue's list (cookies, session ids, other Authorization schemes, more
command-line passwords, PuTTY and JWK keys, ODBC braces, recovery phrases, more services); plus
the whole-value placeholders and look-alikes that must stay."""

from __future__ import annotations

import base64
import json
import string

from benchmarks.redaction_corpus import ALNUM, B64, HEX, URLSAFE, Gen

SecretCase = tuple[str, str, bool, str, str, int]
"""(provider, context, is a shell command?, text, secret as it appears, public prefix length)"""

WORDS = ["YoUR", "Todo", "xxxx", "fixme", "dummy", "abcdef", "123456", "Here", "Example", "changeme"]


def _with_word(g: Gen, n: int, alphabet: str) -> str:
    word = g.r.choice(WORDS)
    at = g.r.randint(0, n - len(word))
    return g.s(at, alphabet) + word + g.s(n - len(word) - at, alphabet)


def _worded_tokens(g: Gen) -> list[SecretCase]:
    out: list[SecretCase] = []
    makers = [
        ("github-token-with-word", "GITHUB_TOKEN", lambda: "ghp_" + _with_word(g, 36, ALNUM), 4),
        (
            "anthropic-key-with-word",
            "ANTHROPIC_API_KEY",
            lambda: "sk-ant-api03-" + _with_word(g, 93, URLSAFE) + "AA",
            13,
        ),
        (
            "openai-key-with-word",
            "OPENAI_API_KEY",
            lambda: "sk-proj-" + _with_word(g, 74, URLSAFE) + "T3BlbkFJ" + g.s(74, URLSAFE),
            8,
        ),
        (
            "slack-token-with-word",
            "SLACK_BOT_TOKEN",
            lambda: f"xoxb-{g.s(12, string.digits)}-{g.s(13, string.digits)}-{_with_word(g, 24, ALNUM)}",
            5,
        ),
        ("gitlab-token-with-word", "GITLAB_TOKEN", lambda: "glpat-" + _with_word(g, 20, URLSAFE), 6),
    ]
    for shape, key, make, plen in makers:
        for i in range(8):
            token = make()
            text, cmd = [
                (f"$ export {key}={token}\n$ make deploy\n", True),
                (f'{key}="{token}"\n', False),
                (f"the key {token} fails with 401\n", False),
                (f"$ curl -H 'Authorization: Bearer {token}' https://api.acme.dev\n", True),
            ][i % 4]
            out.append((shape, "worded", cmd, text, token, plen))
    return out


def _documentation_keys(g: Gen) -> list[SecretCase]:
    aws_id, aws_secret = "AKIAQ3EGW7ZK4RXM2PLN", "Jx8kq2Vb/Ln4Rt7Yp0Wm3Zc+Hd6Fs9Ga1Ue5Ko2T"
    slack = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
    return [
        (
            "aws-example-key-id",
            "aws_credentials",
            False,
            f"[default]\naws_access_key_id = {aws_id}\n",
            aws_id,
            4,
        ),
        (
            "aws-example-secret",
            "aws_credentials",
            False,
            f"aws_secret_access_key = {aws_secret}\n",
            aws_secret,
            0,
        ),
        (
            "aws-example-secret",
            "shell_export",
            True,
            f"$ export AWS_SECRET_ACCESS_KEY={aws_secret}\n",
            aws_secret,
            0,
        ),
        ("slack-example-token", "dotenv", False, f"SLACK_BOT_TOKEN={slack}\n", slack, 5),
        (
            "aws-example-key-id",
            "prose",
            False,
            f"I pasted {aws_id} from the docs and it still fails\n",
            aws_id,
            4,
        ),
    ]


def _weak_urls(g: Gen) -> list[SecretCase]:
    out: list[SecretCase] = []
    for scheme, user, pw in [
        ("mysql", "root", "hunter2"),
        ("postgres", "postgres", "postgres"),
        ("redis", "", "secret"),
        ("amqp", "guest", "guest"),
        ("mongodb", "app", "1234"),
        ("https", "admin", "admin1"),
        ("postgresql", "app", "Zürich-24"),
    ]:
        url = f"{scheme}://{user}:{pw}@localhost/db"
        out.append(("weak-url-password", "env_url", False, f"DATABASE_URL={url}\n", f"{user}:{pw}@", 0))
        out.append(
            ("weak-url-password", "python", False, f'engine = create_engine("{url}")\n', f"{user}:{pw}@", 0)
        )
    return out


def _weak_literals(g: Gen) -> list[SecretCase]:
    """Weak and common passwords written as literals: a string, however weak, is the password."""
    out: list[SecretCase] = []
    for pw in ["postgres", "secret", "root", "admin", "letmein"]:
        out += [
            ("weak-literal-password", "dotenv", False, f"POSTGRES_PASSWORD={pw}\n", pw, 0),
            ("weak-literal-password", "compose", False, f"    MYSQL_ROOT_PASSWORD: {pw}\n", pw, 0),
            ("weak-literal-password", "python", False, f'password = "{pw}"\n', pw, 0),
            ("weak-literal-password", "json", False, json.dumps({"password": pw}), pw, 0),
        ]
    return out


def _values(g: Gen) -> list[SecretCase]:
    out: list[SecretCase] = []
    for _ in range(4):
        uni = g.r.choice(["Zürich", "Ærøskøbing", "São-Paulo", "東京", "Ñandú"]) + "-" + g.password()
        other = g.s(4) + '"' + g.s(14)
        shell = g.s(5) + "\\$" + g.s(10)
        out += [
            ("unicode-password", "dotenv", False, f'DB_PASSWORD="{uni}"\n', uni, 0),
            ("unicode-password", "shell", True, f"$ export DB_PASSWORD={uni}\n", uni, 0),
            ("unicode-password", "pgpassword", True, f"$ PGPASSWORD='{uni}' psql -h db app\n", uni, 0),
            (
                "unicode-password",
                "json_escaped",
                False,
                json.dumps({"DB_PASSWORD": uni}),
                json.dumps(uni)[1:-1],
                0,
            ),
            ("other-quote-secret", "dotenv", False, f"JWT_SECRET='{other}'\n", other, 0),
            ("escaped-password", "shell", True, f"$ PGPASSWORD={shell} psql -h db app\n", shell, 0),
            ("escaped-password", "dotenv", False, f'DB_PASSWORD="{g.s(6)}\\"{g.s(8)}"\n', "", 0),
        ]
    return [c for c in out if c[4]]


def _wrapped(g: Gen) -> list[SecretCase]:
    out: list[SecretCase] = []
    for _ in range(4):
        key = "sk-proj-" + g.s(74, URLSAFE) + "T3BlbkFJ" + g.s(74, URLSAFE)
        cut = g.r.randint(40, 100)
        shown = key[:cut] + "\\\n" + key[cut:]
        out.append(
            ("continued-key", "shell", True, f"$ export OPENAI_API_KEY={shown}\n$ python app.py\n", shown, 8)
        )
        pw_a, pw_b = g.s(12), g.s(12)
        quoted = f"{pw_a}\\\n{pw_b}"
        out.append(("continued-password", "dotenv", False, f'DB_PASSWORD="{quoted}"\nPORT=80\n', quoted, 0))
        blob = "IQoJb3JpZ2luX2VjE" + g.s(g.r.randint(300, 500), B64)
        block = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
        out.append(
            (
                "wrapped-base64",
                "env_block",
                False,
                f"AWS_SESSION_TOKEN={block}\nAWS_REGION=us-east-1\n",
                block,
                17,
            )
        )
        yaml = "\n".join("    " + blob[i : i + 64] for i in range(0, len(blob), 64))
        out.append(
            (
                "wrapped-base64",
                "yaml_block",
                False,
                f"secrets:\n  signing_key: |\n{yaml}\n  region: eu\n",
                yaml.strip(),
                0,
            )
        )
        parts = "\\n".join(g.s(48, B64) for _ in range(3))
        out.append(
            (
                "json-multiline-secret",
                "json",
                False,
                f'{{"client_secret": "{parts}", "region": "eu"}}',
                parts,
                0,
            )
        )
    return out


def _more_shapes(g: Gen) -> list[SecretCase]:
    out: list[SecretCase] = []
    for _ in range(3):
        sid, pw, tok = g.s(32), g.password(), g.s(40, URLSAFE)
        jsid, nego, vault, npm, wg = (
            g.s(32, HEX.upper()),
            "YII" + g.s(60, B64),
            "s." + g.s(24),
            g.s(36),
            g.s(43, B64) + "=",
        )
        out += [
            ("cookie", "http_dump", False, f"> Cookie: sessionid={sid}; theme=dark\n", sid, 0),
            (
                "cookie",
                "set_cookie",
                False,
                f"< Set-Cookie: connect.sid=s%3A{tok}; Path=/; HttpOnly\n",
                tok,
                0,
            ),
            ("cookie", "curl_cookie", True, f"$ curl -b 'session={tok}' https://app.acme.dev/api\n", tok, 0),
            ("session-id", "url", False, f"GET /app;jsessionid={jsid} HTTP/1.1\n", jsid, 0),
            ("auth-scheme", "http_dump", False, f"> Authorization: Negotiate {nego}\n", nego, 0),
            ("auth-scheme", "http_dump", False, f"> Authorization: SSWS 00{tok}\n", "00" + tok, 0),
            ("password-cli-flag", "sqlplus", True, f"$ sqlplus scott/{pw}@orcl\n", pw, 0),
            ("password-cli-flag", "zip", True, f"$ zip -P {pw} backup.zip db.sql\n", pw, 0),
            ("password-cli-flag", "gpg", True, f"$ gpg --batch --passphrase {pw} -d secrets.gpg\n", pw, 0),
            ("password-cli-flag", "vault_login", True, f"$ vault login {vault}\n", vault, 0),
            (
                "odbc-password",
                "conn_string",
                False,
                f"Driver={{ODBC Driver 18}};Server=db;UID=sa;PWD={{{pw}}};\n",
                pw,
                0,
            ),
            ("npm-config", "npm", True, f"$ npm config set //registry.npmjs.org/:_authToken {npm}\n", npm, 0),
            ("wireguard-key", "wg_conf", False, f"[Interface]\nPrivateKey = {wg}\n", wg, 0),
        ]
        d = g.b64url(g.r.randbytes(64))
        jwk = json.dumps({"kty": "RSA", "n": g.b64url(g.r.randbytes(64)), "e": "AQAB", "d": d})
        out.append(("jwk-private", "jwk", False, jwk, d, 0))
        ppk_lines = [g.s(64, B64) for _ in range(3)]
        ppk = (
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 3\n"
            + "\n".join(ppk_lines)
            + "\n"
        )
        out.append(("putty-private-key", "ppk", False, ppk, "\n".join(ppk_lines), 0))
        words = " ".join(g.s(5, string.ascii_lowercase) for _ in range(12))
        out.append(("recovery-phrase", "dotenv", False, f'MNEMONIC="{words}"\n', words, 0))
        for provider, token, plen in [
            ("rubygems-token", "rubygems_" + g.s(48, HEX), 9),
            ("sonarqube-token", "sqp_" + g.s(40, HEX), 4),
            ("onepassword-token", "ops_eyJ" + g.s(200, URLSAFE), 7),
            ("elevenlabs-key", "sk_" + g.s(48, HEX), 3),
            ("azure-devops-token", g.s(76) + "AZDO" + g.s(4), 0),
        ]:
            out.append((provider, "shell_export", True, f"$ export SERVICE_TOKEN={token}\n", token, plen))
    return out


def hole_secret_cases(g: Gen) -> list[SecretCase]:
    return (
        _worded_tokens(g)
        + _documentation_keys(g)
        + _weak_urls(g)
        + _weak_literals(g)
        + _values(g)
        + _wrapped(g)
        + _more_shapes(g)
    )


def hole_decoys(g: Gen) -> list[tuple[str, str, bool]]:
    """(decoy type, text, is a shell command?): whole-value placeholders and look-alikes that stay."""
    texts = [
        ("whole-placeholder", "GITHUB_TOKEN=ghp_" + "X" * 36 + "\n"),
        ("whole-placeholder", "export ANTHROPIC_API_KEY=<your-anthropic-key>\n"),
        ("whole-placeholder", "OPENAI_API_KEY=sk-your-openai-key-here\n"),
        ("whole-placeholder", "DB_PASSWORD=${DB_PASSWORD}\n"),
        ("whole-placeholder", "export TOKEN=$(vault read -field=token secret/ci)\n"),
        ("whole-placeholder", "password: '***'\n"),
        ("whole-placeholder", "SLACK_BOT_TOKEN=xoxb-your-token-here\n"),
        ("whole-placeholder", "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DB\n"),
        ("whole-placeholder", "api_key: YOUR_API_KEY\n"),
        ("whole-placeholder", "secret: xxxxxxxx\n"),
        ("password-reference", "password = get_password()\n"),
        ("password-reference", "password = secret\n"),
        ("password-reference", "password: Optional[str] = None\n"),
        ("password-reference", 'password = "password"\n'),
        ("password-reference", '{"password": "Mot de passe"}'),
        ("cookie-lookalike", "> Cookie: theme=dark; lang=en-US\n"),
        ("cookie-lookalike", "$ git checkout -b feature/login-cookie\n"),
        (
            "jwk-public",
            json.dumps(
                {
                    "kty": "RSA",
                    "n": base64.urlsafe_b64encode(g.r.randbytes(64)).decode().rstrip("="),
                    "e": "AQAB",
                }
            ),
        ),
        ("cli-lookalike", "$ zip -r out.zip src\n"),
        ("cli-lookalike", "$ sqlplus /nolog @setup.sql\n"),
        ("cli-lookalike", "$ vault login -method=oidc role=dev\n"),
        ("cli-lookalike", "Authorization: Digest realm=acme\n"),
        ("url-lookalike", "see https://docs.acme.dev/a:b@c for details\n"),
    ]
    return [(kind, text, text.startswith("$")) for kind, text in texts for _ in range(3)]
