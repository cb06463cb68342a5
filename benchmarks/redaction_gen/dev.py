"""The development half: the classes rules may be written against.

Every family of issue 33 has classes here and other classes in dev-2 (``eval.py``, the first
evaluation half, looked at and now development too), in dev-3 (``heldout.py``, the first held-out
half, measured once and now development too) and in the held-out half (``heldout2.py``: never read
it to write a rule). Secret-ish names, syntaxes, languages, key encodings, token families and
kinds of look-alike are split between the halves, not cases of one class.
"""

from __future__ import annotations

import base64
import json
import string
from collections.abc import Callable

from benchmarks.redaction_gen import (
    HEX,
    URLSAFE,
    Draw,
    Spec,
    base58check,
    base62_crc32,
    mark,
    spell,
    wrap64,
)

HALF = "dev"

# -- secret-ish names (the development half's spellings) --

NAMES = [
    ["password"],
    ["passwd"],
    ["db", "password"],
    ["api", "key"],
    ["secret"],
    ["auth", "token"],
    ["client", "secret"],
    ["access", "token"],
    ["secret", "key"],
    ["app", "secret"],
]


def name(d: Draw, *styles: str) -> str:
    return spell(d.pick(NAMES), d.pick(styles))


# -- values in credential slots, by syntax --


def shell_assignment(d: Draw) -> str:
    n, v = name(d, "UPPER"), d.value()
    return d.pick(
        [
            f"export {n}={mark(v)}",
            f'export {n}="{mark(v)}"',
            f"{n}='{mark(v)}' ./run.sh",
            f"set {n}={mark(v)}",
            f'$env:{n} = "{mark(v)}"',
        ]
    )


def cli_flag(d: Draw) -> str:
    n, v = name(d, "kebab"), d.value()
    tool = d.pick(["./deploy", "mytool", "python manage.py sync", "terraform apply", "app-cli login"])
    return d.pick(
        [
            f"{tool} --{n} {mark(v)}",
            f"{tool} --{n}={mark(v)}",
            f"{tool} --{n} '{mark(v)}' --verbose",
            f"mysql -u {d.user()} -p{mark(d.password())} -h {d.host()}",
        ]
    )


def json_key(d: Draw) -> str:
    n, v = name(d, "snake", "camel"), d.value()
    inner = {"host": d.host(), "port": d.pick([5432, 6379, 443]), n: "@@"}
    text = json.dumps(d.pick([inner, {"service": {"name": "api", **inner}}]), indent=d.pick([None, 2]))
    return text.replace('"@@"', f'"{mark(v)}"')


def yaml_key(d: Draw) -> str:
    n, v = name(d, "snake", "camel"), d.value()
    q = d.pick(["", '"', "'"])
    return f"database:\n  host: {d.host()}\n  user: {d.user()}\n  {n}: {q}{mark(v)}{q}\n  pool: 5"


def dotenv(d: Draw) -> str:
    n, v = name(d, "UPPER"), d.value()
    q = d.pick(["", '"'])
    return f"NODE_ENV=production\nPORT=3000\n{n}={q}{mark(v)}{q}\nLOG_LEVEL=info"


def url_userinfo(d: Draw) -> str:
    scheme = d.pick(["https", "http", "postgres", "postgresql", "mysql"])
    pw = d.pick([d.password(), d.token(12, 24)])
    safe = pw.replace("@", "%40").replace("#", "%23").replace("/", "%2F").replace("?", "%3F")
    return d.pick(
        [
            f"DATABASE_URL={scheme}://{d.user()}:{mark(safe)}@{d.host()}:5432/app",
            f"git clone {scheme}://{d.user()}:{mark(safe)}@git.example.test/team/repo.git",
            f'engine = create_engine("{scheme}://{d.user()}:{mark(safe)}@{d.host()}/prod")',
        ]
    )


def conn_password(d: Draw) -> str:
    pw = d.password().replace(";", "")
    return d.pick(
        [
            f'"ConnectionStrings": {{ "Main": "Server={d.host()};Database=app;User Id={d.user()};Password={mark(pw)};" }}',
            f"Server=tcp:{d.host()},1433;Initial Catalog=app;User ID={d.user()};Password={mark(pw)};Encrypt=True",
        ]
    )


# -- cookies and session values --


def cookie_header(d: Draw) -> str:
    cookie = d.pick(["sessionid", "JSESSIONID", "_session_id", "connect.sid", "PHPSESSID"])
    v = d.pick([d.token(32, 32, HEX + "abcdef"), d.token(26, 40), d.b64url(24)])
    return d.pick(
        [
            f"> Cookie: {cookie}={mark(v)}; theme=dark",
            f"> Cookie: lang=en; {cookie}={mark(v)}",
        ]
    )


def curl_cookie(d: Draw) -> str:
    cookie = d.pick(["session", "sid", "auth_session", "remember_token"])
    v = d.token(30, 48, URLSAFE)
    return d.pick(
        [
            f"curl -b '{cookie}={mark(v)}' https://app.example.test/api/me",
            f'curl --cookie "{cookie}={mark(v)}" https://app.example.test/admin',
        ]
    )


# -- random-looking tokens near credential words (English) --


def token_near_word(d: Draw) -> str:
    v = d.pick([d.token(20, 40), d.hex(32), d.token(24, 40, URLSAFE)])
    return d.pick(
        [
            f"here's the token: {mark(v)}",
            f"use this key {mark(v)} for the staging API",
            f"my api key is {mark(v)}",
            f"Authorization: Bearer {mark(v)}",
            f"the access token {mark(v)} expires tomorrow",
        ]
    )


# -- known prefixes' bodies --


def code_hosting(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        prefix = d.pick(["ghp_", "gho_", "ghu_", "ghs_"])
        body = d.token(30, 30)
        v = prefix + body + base62_crc32(body)
    elif kind == 1:
        v = "github_pat_" + d.token(22, 22) + "_" + d.token(59, 59)
    else:
        v = "glpat-" + d.token(20, 20, URLSAFE)
    return d.pick(
        [f"GH_TOKEN={mark(v)}", f"git remote set-url origin https://{mark(v)}@github.com/o/r", f"{mark(v)}"]
    )


def ai_api(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        v = "sk-proj-" + d.token(48, 48, URLSAFE) + "T3BlbkFJ" + d.token(48, 48, URLSAFE)
    elif kind == 1:
        v = "sk-ant-api03-" + d.token(93, 93, URLSAFE) + "AA"
    else:
        v = "hf_" + d.token(34, 34, string.ascii_letters)
    return d.pick([f'client = Client(api_key="{mark(v)}")', f"key {mark(v)}", f"OPENAI_API_KEY={mark(v)}"])


def saas(d: Draw) -> str:
    kind = d.r.randrange(4)
    if kind == 0:
        v = f"xoxb-{d.chars(12, string.digits)}-{d.chars(13, string.digits)}-{d.token(24, 24)}"
    elif kind == 1:
        v = d.pick(["sk_live_", "rk_live_"]) + d.token(24, 99)
    elif kind == 2:
        v = f"SG.{d.token(22, 22, URLSAFE)}.{d.token(43, 43, URLSAFE)}"
    else:
        body = d.token(30, 30)
        v = "npm_" + body + base62_crc32(body)
    return d.pick(
        [f"{mark(v)}", f"token: {mark(v)}", f"curl -H 'X-Token: {mark(v)}' https://hooks.example.test"]
    )


# -- cloud keys --


def aws(d: Draw) -> str:
    region = d.pick(["us-east-1", "eu-west-1", "ap-southeast-2", "us-west-2"])
    key_id = "AKIA" + d.chars(16, string.ascii_uppercase + "234567")
    secret = d.chars(40, string.ascii_letters + string.digits + "+/")
    return d.pick(
        [
            f"[default]\naws_access_key_id = {mark(key_id)}\naws_secret_access_key = {mark(secret)}\nregion = {region}",
            f"AWS_ACCESS_KEY_ID={mark(key_id)} AWS_SECRET_ACCESS_KEY={mark(secret)} AWS_REGION={region} aws s3 ls",
        ]
    )


def gcp_azure(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        return f"GOOGLE_API_KEY={mark('AIza' + d.token(35, 35, URLSAFE))}"
    if kind == 1:
        key = d.b64(64)
        return (
            f"DefaultEndpointsProtocol=https;AccountName=store{d.chars(6, string.digits)};"
            f"AccountKey={mark(key)};EndpointSuffix=core.windows.net"
        )
    sig = d.b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    return (
        f"https://acct.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
        f"&se=2026-12-31T00:00:00Z&sig={mark(sig)}"
    )


# -- private keys --

_PKCS8_RSA = bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100")
_PKCS1_RSA = bytes.fromhex("308204a40201000282010100")
_SEC1_EC = bytes.fromhex("307702010104")


def pem(d: Draw) -> str:
    label, head, size = d.pick(
        [
            ("RSA PRIVATE KEY", _PKCS1_RSA, 1180),
            ("PRIVATE KEY", _PKCS8_RSA, 1200),
            ("EC PRIVATE KEY", _SEC1_EC, 115),
        ]
    )
    body = wrap64(base64.b64encode(head + d.raw(size)).decode())
    return f"-----BEGIN {label}-----\n{mark(body)}\n-----END {label}-----"


def openssh(d: Draw) -> str:
    raw = b"openssh-key-v1\0" + b"\0\0\0\x04none\0\0\0\x04none\0\0\0\0\0\0\0\x01" + d.raw(d.pick([380, 1800]))
    body = wrap64(base64.b64encode(raw).decode(), 70)
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{mark(body)}\n-----END OPENSSH PRIVATE KEY-----"


def wif(d: Draw) -> str:
    payload = b"\x80" + d.raw(32) + d.pick([b"\x01", b""])
    v = base58check(payload)
    return d.pick([f"importprivkey {mark(v)}", f"WIF: {mark(v)}", f"wallet private key (WIF) {mark(v)}"])


def raw_hex_key(d: Draw) -> str:
    v = d.hex(64)
    return d.pick(
        [
            f"PRIVATE_KEY=0x{mark(v)}",
            f"private key: {mark(v)}",
            f'const signer = new Wallet("0x{mark(v)}")',
            f"ed25519 secret key {mark(v)}",
        ]
    )


# -- values split over lines --


def backslash(d: Draw) -> str:
    v = d.token(48, 72)
    cut = d.r.randint(16, len(v) - 16)
    return d.pick(
        [
            f'export API_TOKEN="{mark(v[:cut])}\\\n{mark(v[cut:])}"',
            f"curl -H 'Authorization: Bearer {mark(v[:cut])}\\\n{mark(v[cut:])}' https://api.example.test",
        ]
    )


def json_array(d: Draw) -> str:
    v = d.token(60, 90, URLSAFE)
    parts = [v[i : i + 20] for i in range(0, len(v), 20)]
    if len(parts[-1]) < 8:
        parts[-2] += parts.pop()
    inner = ",\n    ".join(f'"{mark(p)}"' for p in parts)
    key = d.pick(["token_parts", "secret", "key_chunks", "api_key"])
    return f'{{\n  "{key}": [\n    {inner}\n  ]\n}}'


# -- prose, in the development languages (their words, their ways of saying "is") --

PROSE: dict[str, list[str]] = {
    "en": [
        "use {pw} as the password for the test account",
        "Password for root on the NAS = {pw}",
        "the wifi passphrase is {phrase}",
        "my PIN is {pin}",
        "the API key is {key}",
    ],
    "de": [
        "Das Passwort für den Server lautet {pw}.",
        "Mein Kennwort ist {pw}, bitte nicht weitergeben.",
        "Die PIN der Karte ist {pin}.",
        "Der API-Schlüssel: {key}",
        "Zugangsdaten: Benutzer admin, Passwort {pw}",
    ],
    "fr": [
        "Le mot de passe du serveur est {pw}.",
        "mon mdp c'est {pw}",
        "Le code PIN est {pin}.",
        "La clé d'API vaut {key}",
        "La phrase secrète est « {phrase} »",
    ],
    "es": [
        "La contraseña es {pw}",
        "la clave del wifi es {pw}",
        "El PIN es {pin}",
        "Mi token de acceso: {key}",
    ],
    "pt": [
        "A senha do banco é {pw}",
        "a palavra-passe é {pw}",
        "O PIN é {pin}",
        "A chave da API é {key}",
    ],
    "it": [
        "La password del server è {pw}",
        "la parola d'ordine è {pw}",
        "Il PIN è {pin}",
        "La chiave API è {key}",
    ],
    "nl": [
        "Het wachtwoord is {pw}",
        "Wachtwoord van de database: {pw}",
        "De pincode is {pin}",
        "De API-sleutel is {key}",
    ],
    "pl": [
        "Hasło do serwera to {pw}",
        "hasło jest {pw}",
        "Kod PIN to {pin}",
        "Klucz API: {key}",
    ],
    "ru": [
        "Пароль от сервера: {pw}",
        "пароль — {pw}",
        "ПИН-код {pin}",
        "Токен доступа — {key}",
    ],
    "zh-Hans": [
        "服务器密码是{pw}",
        "数据库的密码为 {pw}",
        "PIN码是{pin}",
        "API密钥：{key}",
    ],
    "ja": [
        "パスワードは{pw}です",
        "サーバーのパスワード：{pw}",
        "暗証番号は{pin}です",
        "APIキーは {key} です",
    ],
    "tr": [
        "Sunucunun şifresi {pw}",
        "Parola: {pw}",
        "PIN kodu {pin}",
        "API anahtarı {key}",
    ],
    "sv": [
        "Lösenordet är {pw}",
        "lösen: {pw}",
        "PIN-koden är {pin}",
        "API-nyckeln är {key}",
    ],
    "cs": [
        "Heslo je {pw}",
        "Heslo k serveru: {pw}",
        "PIN je {pin}",
        "API klíč je {key}",
    ],
    "hi": [
        "पासवर्ड {pw} है",
        "सर्वर का पासवर्ड {pw} है।",
        "पिन {pin} है",
        "API कुंजी {key} है",
    ],
}


def prose(templates: list[str]) -> Callable[[Draw], str]:
    def make(d: Draw) -> str:
        values = {
            "pw": d.pick([d.password(), d.weak()]),
            "pin": d.pin(),
            "phrase": d.phrase(),
            "key": d.token(20, 40),
        }
        return d.pick(templates).format(**{k: mark(v) for k, v in values.items()})

    return make


# -- mail configuration --


def mail(d: Draw) -> str:
    pw = d.password()
    user = f"{d.user()}@example.test"
    return d.pick(
        [
            f"$ cat /etc/postfix/sasl_passwd\n[smtp.gmail.com]:587 {user}:{mark(pw)}",
            f"account default\nhost smtp.example.test\nport 587\nauth on\nuser {user}\npassword {mark(pw)}\ntls on",
            f'server = smtplib.SMTP_SSL("smtp.example.test", 465)\nserver.login("{user}", "{mark(pw)}")',
        ]
    )


# -- look-alikes that must be kept --


def la_hash(d: Draw) -> str:
    return d.pick(
        [
            f"{mark(d.hex(64))}  memd-0.4.1.tar.gz",
            f"commit {mark(d.hex(40))}\nAuthor: Dev <dev@example.test>",
            f"HEAD is now at {mark(d.hex(7))} fix the parser",
            f"sha256: {mark(d.hex(64))}",
        ]
    )


def la_uuid(d: Draw) -> str:
    return d.pick(
        [f'"request_id": "{mark(d.uuid())}"', f"trace {mark(d.uuid())} finished", f"job_id={mark(d.uuid())}"]
    )


def la_public_key(d: Draw) -> str:
    blob = base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0 " + d.raw(32)).decode()
    pem_body = wrap64(
        base64.b64encode(
            bytes.fromhex("30820122300d06092a864886f70d01010105000382010f00") + d.raw(270)
        ).decode()
    )
    return d.pick(
        [
            f"{mark(f'ssh-ed25519 {blob} dev@laptop')}",
            f"-----BEGIN PUBLIC KEY-----\n{mark(pem_body)}\n-----END PUBLIC KEY-----",
        ]
    )


def la_example(d: Draw) -> str:
    return d.pick(
        [
            f"aws_access_key_id = {mark('AKIAIOSFODNN7EXAMPLE')}",
            f"aws_secret_access_key = {mark('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY')}",
            f"GITHUB_TOKEN={mark('ghp_' + 'x' * 36)}",
            f"OPENAI_API_KEY={mark('sk-...' + d.chars(4, string.ascii_letters))}",
            f"token: {mark('*' * d.r.randint(8, 24))}",
        ]
    )


def la_reference(d: Draw) -> str:
    secret = d.pick(["DEPLOY_TOKEN", "NPM_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"])
    enc = f"ENC[AES256_GCM,data:{d.b64(18)},iv:{d.b64(32)},tag:{d.b64(16)},type:str]"
    return d.pick(
        [
            f"      token: {mark('${{ secrets.' + secret + ' }}')}",
            f"password: {mark(enc)}",
            f"export PGPASSWORD={mark('${' + secret + '}')}",
            f'password = os.environ["{mark(secret)}"]',
        ]
    )


def la_data(d: Draw) -> str:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + d.raw(d.r.randint(40, 120))).decode()
    return d.pick(
        [
            f'<img src="{mark("data:image/png;base64," + png)}">',
            f"background: url({mark('data:image/png;base64,' + png)});",
        ]
    )


def la_prose(d: Draw) -> str:
    return d.pick(
        [
            mark("I forgot my password again, how do I reset it?"),
            mark("The token expires after 24 hours, so refresh it before the job starts."),
            mark("Set the API key in the environment, never in the code."),
            mark("password_min_length: 12"),
            mark("token_ttl: 3600"),
            mark("require_password: true"),
        ]
    )


def specs() -> list[Spec]:
    out = [
        Spec("slot", "shell-assignment", "secret", "command", shell_assignment),
        Spec("slot", "cli-flag", "secret", "command", cli_flag),
        Spec("slot", "json", "secret", "file", json_key),
        Spec("slot", "yaml", "secret", "file", yaml_key),
        Spec("slot", "dotenv", "secret", "file", dotenv),
        Spec("slot", "url-userinfo-web-sql", "secret", "inline", url_userinfo),
        Spec("slot", "conn-string-Password", "secret", "file", conn_password),
        Spec("cookie", "cookie-header", "secret", "http", cookie_header),
        Spec("cookie", "curl-cookie", "secret", "command", curl_cookie),
        Spec("token-near-word", "english", "secret", "prose", token_near_word),
        Spec("prefix-token", "code-hosting", "secret", "inline", code_hosting),
        Spec("prefix-token", "ai-api", "secret", "inline", ai_api),
        Spec("prefix-token", "saas", "secret", "inline", saas),
        Spec("cloud-key", "aws", "secret", "file", aws),
        Spec("cloud-key", "gcp-azure", "secret", "inline", gcp_azure),
        Spec("private-key", "pem-rsa-ec-pkcs8", "secret", "file", pem),
        Spec("private-key", "openssh", "secret", "file", openssh),
        Spec("private-key", "wif", "secret", "inline", wif),
        Spec("private-key", "raw-hex", "secret", "inline", raw_hex_key),
        Spec("split", "backslash", "secret", "command", backslash),
        Spec("split", "json-array", "secret", "file", json_array),
        Spec("mail", "postfix-msmtp-smtplib", "secret", "inline", mail),
        Spec("lookalike-hash", "sha-and-commits", "lookalike", "inline", la_hash),
        Spec("lookalike-id", "uuid", "lookalike", "inline", la_uuid),
        Spec("lookalike-public", "ssh-and-pem-public", "lookalike", "file", la_public_key),
        Spec("lookalike-example", "aws-docs-and-masked", "lookalike", "file", la_example),
        Spec("lookalike-reference", "gha-sops-env", "lookalike", "file", la_reference),
        Spec("lookalike-data", "data-uri", "lookalike", "inline", la_data),
        Spec("lookalike-prose", "english-no-value", "lookalike", "prose", la_prose),
    ]
    out += [Spec("prose", lang, "secret", "prose", prose(t)) for lang, t in PROSE.items()]
    return out
