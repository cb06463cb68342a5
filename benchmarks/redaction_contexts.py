"""Transcript contexts, decoys and the corpus builder for the redaction benchmark."""

from __future__ import annotations

import base64
import json
import string
from collections.abc import Callable

from benchmarks.redaction_corpus import ALNUM, B64, HEX, URLSAFE, Case, Gen, token_shapes
from benchmarks.redaction_holes import hole_decoys, hole_secret_cases

BENIGN_ENV = [
    "HOME=/home/dev",
    "LANG=en_US.UTF-8",
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "SHELL=/bin/zsh",
    "TERM=xterm-256color",
    "USER=dev",
    "PWD=/home/dev/src/app",
    "EDITOR=nvim",
    "NODE_ENV=development",
    "AWS_REGION=us-east-1",
    "LOG_LEVEL=debug",
    "PYTHONUNBUFFERED=1",
    "TZ=UTC",
    "GIT_PAGER=cat",
]


def _snake(key: str) -> str:
    return key.lower()


def _camel(key: str) -> str:
    head, *rest = key.lower().split("_")
    return head + "".join(p.title() for p in rest)


# A context: (name, is a shell command?, render(gen, KEY, secret) -> text)
Context = tuple[str, bool, Callable[[Gen, str, str], str]]


def _env_dump(g: Gen, k: str, v: str) -> str:
    lines = g.r.sample(BENIGN_ENV, 8) + [f"{k}={v}"]
    return "$ env | sort\n" + "\n".join(sorted(lines)) + "\n"


TOKEN_CONTEXTS: list[Context] = [
    (
        "shell_export",
        True,
        lambda g, k, v: f"$ export {k}={v}\n$ python deploy.py --env staging\nDeploying...\n",
    ),
    ("env_dump", True, _env_dump),
    (
        "dotenv",
        False,
        lambda g, k, v: f'# local settings, do not commit\nDEBUG=false\n{k}="{v}"\nPORT=8000\n',
    ),
    (
        "json_config",
        False,
        lambda g, k, v: json.dumps({"service": "billing", _camel(k): v, "timeout": 30}, indent=2),
    ),
    (
        "yaml_config",
        False,
        lambda g, k, v: f"service:\n  name: billing\n  {_snake(k)}: {v}\n  region: eu-west-1\n",
    ),
    (
        "toml_config",
        False,
        lambda g, k, v: f'[service]\nname = "billing"\n{_snake(k)} = "{v}"\nretries = 3\n',
    ),
    (
        "python_read",
        False,
        lambda g, k, v: (
            f'     1\timport os\n     2\t\n     3\t{k} = "{v}"\n     4\tclient = Client(token={k})\n'
        ),
    ),
    (
        "js_read",
        False,
        lambda g, k, v: (
            f"     1\timport {{ Client }} from './client';\n     2\tconst {_camel(k)} = '{v}';\n     3\texport default new Client({_camel(k)});\n"
        ),
    ),
    (
        "log_json",
        False,
        lambda g, k, v: json.dumps(
            {
                "ts": "2026-10-31T12:00:00Z",
                "level": "debug",
                "msg": "loaded config",
                "config": {_snake(k): v, "retries": 3},
            }
        ),
    ),
    (
        "log_kv",
        False,
        lambda g, k, v: (
            f"2026-10-31T12:00:01Z DEBUG settings loaded {_snake(k)}={v} retries=3 region=us-east-1\n"
        ),
    ),
    (
        "traceback",
        False,
        lambda g, k, v: (
            f"Traceback (most recent call last):\n  File \"app.py\", line 42, in connect\n    client = Client({_snake(k)}='{v}')\nAuthError: 401 invalid credentials\n"
        ),
    ),
    (
        "markdown_table",
        False,
        lambda g, k, v: f"| Variable | Value |\n|---|---|\n| `{k}` | `{v}` |\n| `PORT` | `8000` |\n",
    ),
    (
        "docker_run",
        True,
        lambda g, k, v: f"$ docker run -d --name api -e {k}={v} -p 8080:8080 ghcr.io/acme/api:1.4.2\n",
    ),
    (
        "gha_workflow",
        False,
        lambda g, k, v: (
            f"jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      {k}: {v}\n    steps:\n      - uses: actions/checkout@v4\n"
        ),
    ),
    (
        "k8s_env",
        False,
        lambda g, k, v: (
            f'    env:\n      - name: {k}\n        value: "{v}"\n      - name: PORT\n        value: "8080"\n'
        ),
    ),
    ("tfvars", False, lambda g, k, v: f'region = "us-east-1"\n{_snake(k)} = "{v}"\n'),
    (
        "compose",
        False,
        lambda g, k, v: (
            f"services:\n  app:\n    image: acme/app:2\n    environment:\n      - {k}={v}\n      - PORT=8000\n"
        ),
    ),
]
TOKEN_CONTEXTS += [
    (
        "aws_credentials_ini",
        False,
        lambda g, k, v: f"[default]\nregion = us-east-1\n{_snake(k)} = {v}\n",
    ),
    (
        "markdown_fence",
        False,
        lambda g, k, v: f'Run this first:\n\n```bash\nexport {k}="{v}"\nnpm run deploy\n```\n',
    ),
    (
        "repr_log",
        False,
        lambda g, k, v: f"DEBUG:app:config=Settings({_snake(k)}='{v}', timeout=30, debug=True)\n",
    ),
    ("prose_colon", False, lambda g, k, v: f"Here is the API key: {v}\nIt was created yesterday.\n"),
]
PREFIXED_CONTEXTS: list[Context] = [
    (
        "markdown_prose",
        False,
        lambda g, k, v: f"I tried the key `{v}` but the API still answers 401. Any idea?\n",
    ),
    ("prose_plain", False, lambda g, k, v: f"ok so the token is {v} - can you check why it fails?\n"),
]
HEADER_CONTEXTS: list[Context] = [
    (
        "http_dump_custom_header",
        False,
        lambda g, k, v: (
            f"> POST /api/v4/projects HTTP/2\n> Host: api.acme.dev\n> {g.r.choice(['PRIVATE-TOKEN', 'X-Vault-Token', 'X-Auth-Token', 'api-key'])}: {v}\n"
        ),
    ),
    (
        "curl_header",
        True,
        lambda g, k, v: (
            f"$ curl -s https://api.acme.dev/v1/items -H \"Authorization: Bearer {v}\" -H 'Accept: application/json'\n"
        ),
    ),
    (
        "curl_api_key",
        True,
        lambda g, k, v: (
            f"$ curl https://api.acme.dev/v2/search -H 'x-api-key: {v}' -d '{{\"q\": \"test\"}}'\n"
        ),
    ),
    (
        "http_dump",
        False,
        lambda g, k, v: (
            f"> GET /v1/me HTTP/1.1\n> Host: api.acme.dev\n> Authorization: Bearer {v}\n> User-Agent: curl/8.5.0\n>\n< HTTP/1.1 200 OK\n"
        ),
    ),
]


def _pem_contexts(g: Gen, pem: str) -> list[tuple[str, bool, str]]:
    esc = json.dumps(pem)[1:-1]
    return [
        ("cat_key_file", True, f"$ cat ~/.ssh/id_deploy\n{pem}\n"),
        (
            "gcp_sa_json",
            False,
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "acme-prod",
                    "private_key_id": g.s(40, HEX),
                    "private_key": pem + "\n",
                    "client_email": "ci@acme-prod.iam.gserviceaccount.com",
                },
                indent=2,
            ),
        ),
        ("env_multiline", False, f'PRIVATE_KEY="{esc}"\n'),
    ]


def special_secret_cases(g: Gen) -> list[tuple[str, str, bool, str, str, int]]:
    """(provider, context, is_command, text, secret, prefix_len) for shapes with their own contexts."""
    out: list[tuple[str, str, bool, str, str, int]] = []
    for kind, shape in (
        ("RSA", "rsa-private-key"),
        ("EC", "ec-private-key"),
        ("PKCS8", "pkcs8-private-key"),
        ("OPENSSH", "openssh-private-key"),
    ):
        for _ in range(6):
            pem, plen = g.pem(kind)
            ctx, cmd, text = g.r.choice(_pem_contexts(g, pem))
            secret = pem if ctx == "cat_key_file" else json.dumps(pem)[1:-1]
            out.append((shape, ctx, cmd, text, secret, plen))
    for scheme, shape, port in (
        ("postgresql", "postgres-url", 5432),
        ("mysql", "mysql-url", 3306),
        ("mongodb+srv", "mongodb-url", 0),
        ("redis", "redis-url", 6379),
        ("amqp", "amqp-url", 5672),
    ):
        for _ in range(7):
            user = g.r.choice(["app", "admin", "svc_billing", "root", "deploy"])
            pw = g.s(g.r.randint(14, 24), ALNUM + "-_")
            host = g.r.choice(
                [
                    "db.internal",
                    "prod-db.c9x2.us-east-1.rds.amazonaws.com",
                    "cluster0.ab1cd.mongodb.net",
                    "10.0.3.12",
                ]
            )
            url = f"{scheme}://{user}:{pw}@{host}" + (f":{port}" if port else "") + "/app"
            ctx, cmd, text = g.r.choice(
                [
                    ("env_url", False, f"DATABASE_URL={url}\n"),
                    ("psql_cmd", True, f"$ psql \"{url}\" -c 'select 1'\n"),
                    ("python_engine", False, f'engine = create_engine("{url}", pool_size=5)\n'),
                    ("yaml_url", False, f"database:\n  url: {url}\n  pool: 5\n"),
                ]
            )
            out.append((shape, ctx, cmd, text, pw, 0))  # only the password goes: the URL keeps the rest
    for _ in range(12):
        user, pw = g.r.choice(["deploy", "ci-bot", "jdoe"]), g.s(20, ALNUM)
        url = f"https://{user}:{pw}@" + g.r.choice(
            ["github.com/acme/api.git", "gitlab.acme.dev/infra/tools.git", "pypi.acme.dev/simple"]
        )
        ctx, cmd, text = g.r.choice(
            [
                ("git_remote", True, f"$ git remote -v\norigin\t{url} (fetch)\norigin\t{url} (push)\n"),
                ("git_credentials", False, f"{url.split('@')[0]}@github.com\n"),
                ("pip_index", True, f"$ pip install --index-url {url} acme-tools\n"),
            ]
        )
        out.append(("basic-auth-url", ctx, cmd, text, pw, 0))  # only the password goes
    for _ in range(8):
        cred = base64.b64encode(f"{g.r.choice(['admin', 'ci', 'svc'])}:{g.password()}".encode()).decode()
        ctx, cmd, text = g.r.choice(
            [
                (
                    "curl_basic",
                    True,
                    f'$ curl -H "Authorization: Basic {cred}" https://registry.acme.dev/v2/_catalog\n',
                ),
                (
                    "http_dump",
                    False,
                    f"> GET /api/v1/jobs HTTP/1.1\n> Host: jenkins.acme.dev\n> Authorization: Basic {cred}\n",
                ),
            ]
        )
        out.append(("basic-auth-header", ctx, cmd, text, cred, 0))
    for _ in range(14):
        tok = g.s(g.r.randint(32, 64), ALNUM + "-._~")
        out.append(
            (
                "generic-bearer-token",
                "curl_header",
                True,
                f"$ curl -H 'Authorization: Bearer {tok}' https://internal.acme.dev/api/status\n",
                tok,
                0,
            )
        )
    for _ in range(24):
        pw = g.password()
        ctx, cmd, text = g.r.choice(
            [
                ("dotenv", False, f"DB_HOST=localhost\nDB_PASSWORD={pw}\n"),
                (
                    "django_settings",
                    False,
                    f"DATABASES = {{\n    'default': {{\n        'ENGINE': 'django.db.backends.postgresql',\n        'USER': 'app',\n        'PASSWORD': '{pw}',\n    }}\n}}\n",
                ),
                (
                    "mssql_conn_string",
                    False,
                    f'"ConnectionStrings": {{ "Default": "Server=tcp:acme.database.windows.net,1433;Database=app;User ID=app;Password={pw};Encrypt=True;" }}\n',
                ),
                (
                    "nuget_config",
                    False,
                    f'<packageSourceCredentials>\n  <acme>\n    <add key="Username" value="ci" />\n    <add key="ClearTextPassword" value="{pw}" />\n  </acme>\n</packageSourceCredentials>\n',
                ),
                (
                    "properties",
                    False,
                    f"spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.password={pw}\n",
                ),
                (
                    "compose",
                    False,
                    f"    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: {pw}\n",
                ),
                ("pypirc", False, f"[pypi]\nusername = __token__\npassword = {pw}\n"),
                (
                    "xml_config",
                    False,
                    f"<datasource>\n  <user>app</user>\n  <password>{pw}</password>\n</datasource>\n",
                ),
                ("netrc", False, f"machine api.acme.dev\n  login deploy\n  password {pw}\n"),
            ]
        )
        out.append(("password-assignment", ctx, cmd, text, pw, 0))
    for _ in range(16):
        pw = g.password().replace("!", "x")
        ctx, text = g.r.choice(
            [
                ("mysql_cli", f"$ mysql -h db.internal -u root -p{pw} app < dump.sql\n"),
                ("sshpass", f"$ sshpass -p '{pw}' ssh deploy@10.0.0.5 uptime\n"),
                ("docker_login", f"$ docker login registry.acme.dev -u ci -p {pw}\n"),
                ("redis_cli", f"$ redis-cli -h cache.internal -a {pw} PING\n"),
                (
                    "openssl",
                    f"$ openssl pkcs12 -export -in cert.pem -inkey key.pem -out out.p12 -passout pass:{pw}\n",
                ),
                ("curl_user", f"$ curl -u admin:{pw} https://jenkins.acme.dev/api/json\n"),
            ]
        )
        out.append(("password-cli-flag", ctx, True, text, pw, 0))
    for _ in range(8):
        token = g.r.choice(
            [g.crc_token("npm_"), f"{g.s(8, HEX)}-{g.s(4, HEX)}-4{g.s(3, HEX)}-a{g.s(3, HEX)}-{g.s(12, HEX)}"]
        )
        text = f"$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken={token}\nalways-auth=true\n"
        out.append(("npmrc-auth-token", "npmrc", True, text, token, 0))
    for _ in range(6):
        key = g.s(86, B64) + "=="
        text = f'AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={key};EndpointSuffix=core.windows.net"\n'
        out.append(("azure-storage-key", "env_conn_string", False, text, key, 0))
    for _ in range(6):
        sig = g.s(43, B64).replace("/", "%2F").replace("+", "%2B") + "%3D"
        text = f'$ az storage blob download --blob-url "https://acme.blob.core.windows.net/backups/db.tar?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z&sig={sig}"\n'
        out.append(("azure-sas-signature", "az_cli", True, text, sig, 0))
    for _ in range(6):
        auth = base64.b64encode(f"ci-bot:{g.s(24)}".encode()).decode()
        text = json.dumps({"auths": {"registry.acme.dev": {"auth": auth}}}, indent=2)
        out.append(("docker-config-auth", "docker_config", False, text, auth, 0))
    for _ in range(6):
        vals = [base64.b64encode(g.s(n).encode()).decode() for n in (18, 24)]
        text = f"$ kubectl get secret app-secrets -o yaml\napiVersion: v1\ndata:\n  api-key: {vals[0]}\n  db-password: {vals[1]}\nkind: Secret\nmetadata:\n  name: app-secrets\ntype: Opaque\n"
        out.append(("k8s-secret-data", "kubectl_secret", True, text, vals[g.r.randint(0, 1)], 0))
    return out


def decoy_texts(g: Gen) -> list[tuple[str, str, bool]]:
    """(decoy type, text, is a shell command?)."""
    h = lambda n: g.s(n, HEX)  # noqa: E731
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + g.r.randbytes(300)).decode()
    kinds: list[tuple[str, Callable[[], str], bool]] = [
        ("git-sha", lambda: f"commit {h(40)}\nAuthor: Dev <dev@acme.dev>\n\n    fix: retry on 503\n", True),
        (
            "git-short-sha",
            lambda: (
                "\n".join(f"{h(7)} {m}" for m in ("fix tests", "bump deps", "merge branch 'main'")) + "\n"
            ),
            True,
        ),
        (
            "actions-pin",
            lambda: (
                f"      - uses: actions/checkout@{h(40)} # v4.2.2\n      - uses: actions/setup-python@{h(40)} # v5\n"
            ),
            False,
        ),
        (
            "uuid-log",
            lambda: (
                f"INFO request_id={g.r.choice(['', 'req-'])}{h(8)}-{h(4)}-4{h(3)}-a{h(3)}-{h(12)} status=200 duration_ms=41\n"
            ),
            False,
        ),
        (
            "sha256-digest",
            lambda: (
                f"latest: Pulling from acme/api\nDigest: sha256:{h(64)}\nStatus: Downloaded newer image\n"
            ),
            True,
        ),
        ("sha256sum", lambda: f"$ sha256sum dist/*.whl\n{h(64)}  dist/acme-1.2.0-py3-none-any.whl\n", True),
        (
            "pip-hash",
            lambda: f"requests==2.32.3 \\\n    --hash=sha256:{h(64)} \\\n    --hash=sha256:{h(64)}\n",
            False,
        ),
        (
            "npm-integrity",
            lambda: json.dumps(
                {
                    "node_modules/lodash": {
                        "version": "4.17.21",
                        "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",
                        "integrity": "sha512-" + g.s(86, B64) + "==",
                    }
                },
                indent=2,
            ),
            False,
        ),
        (
            "go-sum",
            lambda: (
                f"github.com/acme/lib v1.2.3 h1:{g.s(43, B64)}=\ngithub.com/acme/lib v1.2.3/go.mod h1:{g.s(43, B64)}=\n"
            ),
            False,
        ),
        (
            "base64-image",
            lambda: json.dumps(
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
            ),
            False,
        ),
        ("data-uri", lambda: f'<img alt="logo" src="data:image/png;base64,{png}">\n', False),
        (
            "placeholder",
            lambda: g.r.choice(
                [
                    "OPENAI_API_KEY=your-api-key-here\n",
                    "export OPENAI_API_KEY=<YOUR_OPENAI_API_KEY>\n",
                    "export OPENAI_API_KEY=sk-...\n",
                    "GITHUB_TOKEN=ghp_" + "x" * 36 + "\n",
                    "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DB\n",
                    "JWT_SECRET=replace-me\n",
                    "password: changeme\n",
                    'api_key: "YOUR_API_KEY"\n',
                    "curl -H 'Authorization: Bearer <token>' https://api.acme.dev\n",
                    "STRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx\n",
                    "SECRET_KEY=${SECRET_KEY}\n",
                    "ANTHROPIC_API_KEY=sk-ant-xxxxx\n",
                ]
            ),
            False,
        ),
        (
            "env-reference",
            lambda: g.r.choice(
                [
                    'api_key = os.environ["OPENAI_API_KEY"]\n',
                    "      GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
                    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user\n',
                    "      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}\n",
                    "const key = process.env.STRIPE_SECRET_KEY;\n",
                    'password = os.getenv("DB_PASSWORD")\n',
                    "token = settings.API_TOKEN\n",
                ]
            ),
            False,
        ),
        (
            "masked-value",
            lambda: g.r.choice(
                [
                    "GITHUB_TOKEN=gho_****\n",
                    "password: ********\n",
                    '"api_key": "sk-...4f2a"\n',
                    "Token: ghp_" + "*" * 32 + "abcd\n",
                    "DB_PASSWORD=••••••••\n",
                ]
            ),
            False,
        ),
        (
            "long-identifier",
            lambda: g.r.choice(
                [
                    "AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessor\n",
                    "test_redaction_keeps_very_long_identifier_names_untouched_v2\n",
                    "def get_or_create_access_token_for_installation_with_retry(self):\n",
                    "class TokenRefreshingHttpClientWithExponentialBackoff:\n",
                ]
            ),
            False,
        ),
        (
            "ssh-public-key",
            lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{g.s(43, B64)} dev@laptop\n",
            False,
        ),
        (
            "public-pem",
            lambda: (
                "-----BEGIN CERTIFICATE-----\n"
                + "\n".join(g.s(64, B64) for _ in range(6))
                + "\n-----END CERTIFICATE-----\n"
            ),
            False,
        ),
        (
            "container-id",
            lambda: (
                f"CONTAINER ID   IMAGE          STATUS\n{h(12)}   acme/api:1.4   Up 2 hours\n$ docker inspect {h(64)}\n"
            ),
            True,
        ),
        ("md5-etag", lambda: f'< HTTP/1.1 200 OK\n< ETag: "{h(32)}"\n< Content-MD5: {h(32)}\n', False),
        (
            "vite-hash",
            lambda: (
                f"dist/assets/index-{g.s(8, URLSAFE)}.js   142.31 kB\ndist/assets/vendor-{g.s(8, URLSAFE)}.css  12.10 kB\n"
            ),
            False,
        ),
        (
            "object-trace-id",
            lambda: g.r.choice(
                [
                    f'{{"_id": {{"$oid": "{h(24)}"}}, "status": "active"}}\n',
                    f"traceparent: 00-{h(32)}-{h(16)}-01\n",
                    f"X-Amzn-Trace-Id: Root=1-{h(8)}-{h(24)}\n",
                    f"span_id={h(16)} trace_id={h(32)}\n",
                ]
            ),
            False,
        ),
        (
            "arn-account",
            lambda: (
                f"arn:aws:secretsmanager:us-east-1:{g.s(12, string.digits)}:secret:prod/db/password-{g.s(6)}\nAccount: {g.s(12, string.digits)}\n"
            ),
            False,
        ),
        (
            "stripe-test-card",
            lambda: "Use card 4242 4242 4242 4242, any future date, CVC 123 (test mode).\n",
            False,
        ),
        (
            "sri-hash",
            lambda: (
                f'<script src="https://cdn.acme.dev/lib.js" integrity="sha384-{g.s(64, B64)}" crossorigin="anonymous"></script>\n'
            ),
            False,
        ),
        (
            "pagination-cursor",
            lambda: g.r.choice(
                [
                    json.dumps(
                        {
                            "data": [],
                            "next_cursor": base64.b64encode(
                                json.dumps({"id": g.r.randint(1, 10**6), "ts": 1761000000}).encode()
                            ).decode(),
                        }
                    ),
                    json.dumps({"items": [], "nextPageToken": g.s(40, URLSAFE)}),
                    f"GET /v1/items?page_token={g.s(32, URLSAFE)}&limit=50\n",
                ]
            ),
            False,
        ),
        (
            "auth-vocabulary",
            lambda: g.r.choice(
                [
                    json.dumps({"token_type": "Bearer", "expires_in": 3600, "scope": "read write"}),
                    "SECRET_NAME = 'prod/db/password'\n",
                    f"KMS_KEY_ID=arn:aws:kms:us-east-1:{g.s(12, string.digits)}:key/{h(8)}-{h(4)}-{h(4)}-{h(4)}-{h(12)}\n",
                    "max_tokens: 4096\ninput_tokens: 1832\n",
                    "password_min_length = 12\n",
                    "The Bearer of good news: the auth flow now works.\n",
                    "token_count = len(tokenizer.encode(text))\n",
                    "Use the secretKeyRef to mount the password.\n",
                ]
            ),
            False,
        ),
        (
            "google-doc-id",
            lambda: (
                f"https://docs.google.com/document/d/{g.s(44, URLSAFE)}/edit\nhttps://www.youtube.com/watch?v={g.s(11, URLSAFE)}\n"
            ),
            False,
        ),
        ("ethereum-hash", lambda: f"tx hash: 0x{h(64)}\nfrom: 0x{h(40)}\n", False),
        (
            "config-templating",
            lambda: g.r.choice(
                [
                    "password: {{ .Values.db.password }}\n",
                    'password: "{{ vault_db_password }}"\n',
                    "password = var.db_password\n",
                    "MasterUserPassword: !Ref DBPassword\n",
                    "password: *default_password\n",
                    "export GITHUB_TOKEN=$(gh auth token)\n",
                    "Authorization: Bearer {{ token }}\n",
                    "AWS_SESSION_TOKEN=\n",
                    "secret: false\ntoken: null\n",
                ]
            ),
            False,
        ),
        (
            "code-vocabulary",
            lambda: g.r.choice(
                [
                    'PASSWORD_RE = re.compile(r"^(?=.*\\d).{8,}$")\n',
                    'API_KEY_HEADER = "X-API-Key"\n',
                    'token: str = Field(..., description="API token")\n',
                    "cursor.execute('SELECT id FROM users WHERE password = ?', (pw,))\n",
                    "session_token_expiry = 3600\n",
                    "tokens = tokenizer(text)\n",
                    "onKeyDown={(e) => e.key === 'ArrowUp' && move(-1)}\n",
                    ".task-list { --key-color: #a1b2c3; }\n",
                    "password_hash: $2b$12$" + g.s(53, ALNUM + "./") + "\n",
                    f'{{"KeyId": "mrk-{h(32)}", "Enabled": true}}',
                    f'{{"request_id": "req_{g.s(16)}", "client_id": "{h(8)}-{h(4)}-{h(4)}-{h(4)}-{h(12)}"}}',
                    "npm_config_cache=/tmp/.npm hf_hub_download(repo_id='x')\n",
                ]
            ),
            False,
        ),
        (
            "ui-strings",
            lambda: g.r.choice(
                [
                    '{"password": "Password", "token": "Token", "secret": "Secret"}',
                    '{"password": "Mot de passe", "forgot_password": "Mot de passe oublié ?"}',
                    '{"password_label": "Enter your password", "api_key_hint": "Paste your API key"}',
                    "Reset your password from the account page; tokens expire after 30 days.\n",
                    "fix: rotate token handling when the secret is missing (#1234)\n",
                ]
            ),
            False,
        ),
    ]
    out = []
    for kind, make, cmd in kinds:
        for _ in range(12):
            out.append((kind, make(), cmd))
    return out


def _uuid(g: Gen) -> str:
    return f"{g.s(8, HEX)}-{g.s(4, HEX)}-4{g.s(3, HEX)}-{g.r.choice('89ab')}{g.s(3, HEX)}-{g.s(12, HEX)}"


def _envelope(g: Gen, record_type: str, message: dict[str, object]) -> dict[str, object]:
    """The fields Claude Code writes around every message (see shared/samples/claude-code)."""
    return {
        "parentUuid": _uuid(g),
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/src/acme-api",
        "sessionId": _uuid(g),
        "version": "2.1.39",
        "gitBranch": g.r.choice(["main", "feat/billing", "fix/retry-503"]),
        "type": record_type,
        "message": message,
        "uuid": _uuid(g),
        "timestamp": f"2026-10-{g.r.randint(10, 31)}T{g.r.randint(0, 23):02d}:{g.r.randint(0, 59):02d}:07.{g.r.randint(100, 999)}Z",
    }


def _wrap(g: Gen, text: str, secret: str, is_command: bool) -> tuple[str, str, str]:
    """Embed ``text`` as a transcript record; return (wrapper, new text, secret as it now appears).

    A Claude Code Bash result carries the output twice (``message`` and ``toolUseResult``); a Codex
    ``function_call_output`` holds a JSON string whose ``output`` is itself JSON (escaped twice)."""
    roll = g.r.random()
    once = json.dumps(secret)[1:-1]
    raw_once = json.dumps(secret, ensure_ascii=False)[1:-1]  # as the two Claude Code records keep it
    if roll < 0.4:
        return "", text, secret
    if roll < 0.7 or (roll < 0.85 and not is_command):
        tool_id = "toolu_01" + g.s(22)
        message = {
            "role": "user",
            "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": False}],
        }
        record = _envelope(g, "user", message)
        record["toolUseResult"] = {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
        return "jsonl_tool_result", json.dumps(record, ensure_ascii=False), raw_once
    if roll < 0.85:
        message = {
            "id": "msg_01" + g.s(22),
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01" + g.s(22),
                    "name": "Bash",
                    "input": {"command": text.removeprefix("$ ").strip(), "description": "Run the command"},
                }
            ],
            "stop_reason": "tool_use",
            "usage": {
                "input_tokens": g.r.randint(3, 900),
                "cache_read_input_tokens": g.r.randint(1000, 90000),
                "output_tokens": g.r.randint(20, 400),
            },
        }
        record = _envelope(g, "assistant", message)
        record["requestId"] = "req_011C" + g.s(20)
        return "jsonl_tool_use", json.dumps(record, ensure_ascii=False), raw_once
    inner = json.dumps(
        {"output": text, "metadata": {"exit_code": 0, "duration_seconds": round(g.r.random(), 1)}}
    )
    payload = {"type": "function_call_output", "call_id": "call_" + g.s(24), "output": inner}
    record = {
        "timestamp": f"2026-10-31T12:{g.r.randint(0, 59):02d}:41.{g.r.randint(100, 999)}Z",
        "type": "response_item",
        "payload": payload,
    }
    return "codex_rollout", json.dumps(record), json.dumps(once)[1:-1]


def build_corpus(seed: int = 0x6D656D64, per_shape: int = 7) -> list[Case]:
    g = Gen(seed)
    cases: list[Case] = []

    def add(provider: str, context: str, cmd: bool, text: str, secret: str, plen: int) -> None:
        wrapper, text, shown = _wrap(g, text, secret, cmd)
        if secret and shown not in text:
            raise AssertionError(f"corpus bug: {provider}/{context}: secret not in text")
        ctx = f"{wrapper}:{context}" if wrapper else context
        kind = "secret" if secret else "decoy"
        cases.append(
            Case(f"{kind}-{len(cases):04d}", kind, provider, ctx, text, shown, plen if shown == secret else 0)
        )

    for name, env_key, make, prefixed, header in token_shapes():
        contexts = (
            TOKEN_CONTEXTS + (PREFIXED_CONTEXTS if prefixed else []) + (HEADER_CONTEXTS if header else [])
        )
        for _ in range(per_shape):
            secret, plen = make(g)
            ctx, cmd, render = g.r.choice(contexts)
            add(name, ctx, cmd, render(g, env_key, secret), secret, plen)
    for provider, ctx, cmd, text, secret, plen in special_secret_cases(g):
        add(provider, ctx, cmd, text, secret, plen)
    for provider, ctx, cmd, text, secret, plen in hole_secret_cases(g):
        add(provider, ctx, cmd, text, secret, plen)
    for kind, text, cmd in decoy_texts(g) + hole_decoys(g):
        add(kind, "decoy", cmd, text, "", 0)
    return cases
