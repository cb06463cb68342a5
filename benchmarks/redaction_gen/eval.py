"""dev-2: the first evaluation half, LOOKED AT, now development material.

Its classes (secret-ish names, syntaxes, languages, key encodings, token families, kinds of
look-alike) appear nowhere in the development half (``dev.py``). It was written as the held-out
half; its per-class figures have since been read, so it no longer measures generalisation, and
rules may now be written against it as against ``dev.py``. The benchmark reports it as "dev-2
(looked at, now development)". Its half name ("eval"), seeds and cases are unchanged. ``heldout.py``
(dev-3) has been looked at since too; the held-out half is ``heldout2.py``.
"""

from __future__ import annotations

import base64
import string
from collections.abc import Callable

from benchmarks.redaction_gen import (
    ALNUM,
    URLSAFE,
    Draw,
    Spec,
    base62_crc32,
    bech32,
    mark,
    spell,
    wrap64,
)

HALF = "eval"

# -- secret-ish names (the evaluation half's spellings; none of them in dev.py) --

NAMES = [
    ["pwd"],
    ["pass"],
    ["passphrase"],
    ["private", "key"],
    ["credential"],
    ["signing", "secret"],
    ["webhook", "secret"],
    ["master", "key"],
    ["session", "secret"],
    ["auth"],
    ["encryption", "key"],
    ["db", "pass"],
    ["refresh", "token"],
    ["bot", "token"],
    ["jwt", "secret"],
    ["hmac", "key"],
    ["admin", "pw"],
    ["credentials"],
]


def name(d: Draw, *styles: str) -> str:
    return spell(d.pick(NAMES), d.pick(styles))


# -- values in credential slots, by syntax --


def http_header(d: Draw) -> str:
    v = d.value().replace(" ", "")
    header = d.pick(
        ["X-Api-Key", "X-Auth-Token", "Api-Key", "X-Webhook-Secret", "X-Access-Token", "Private-Token"]
    )
    return d.pick(
        [
            f"> {header}: {mark(v)}",
            f"> Authorization: Token {mark(v)}",
            f"> authorization: Basic {mark(base64.b64encode(f'{d.user()}:{d.password()}'.encode()).decode())}",
            f"> Proxy-Authorization: Bearer {mark(v)}",
        ]
    )


def toml_key(d: Draw) -> str:
    n, v = name(d, "snake"), d.value()
    q = d.pick(['"', "'"])
    return f'[server]\nhost = "{d.host()}"\nport = 8443\n{n} = {q}{mark(v)}{q}\ntimeout = 30'


def ini_key(d: Draw) -> str:
    n, v = name(d, "snake", "pascal"), d.value()
    sep = d.pick(["=", " = ", ": "])
    return f"[database]\nhost{sep}{d.host()}\nuser{sep}{d.user()}\n{n}{sep}{mark(v)}\n\n[log]\nlevel{sep}warn"


def xml_key(d: Draw) -> str:
    n, v = name(d, "camel", "snake"), d.password().replace("<", "").replace("&", "")
    return d.pick(
        [
            f"<server>\n  <id>nexus</id>\n  <username>{d.user()}</username>\n  <{n}>{mark(v)}</{n}>\n</server>",
            f'<add key="{spell(d.pick(NAMES), "pascal")}" value="{mark(v)}" />',
            f'<property name="{n}" value="{mark(v)}"/>',
        ]
    )


def properties_key(d: Draw) -> str:
    n, v = name(d, "dot", "camel"), d.value()
    return f"app.name=billing\nspring.datasource.url=jdbc:postgresql://{d.host()}/billing\napp.{n}={mark(v)}\nserver.port=8080"


def hcl_key(d: Draw) -> str:
    n, v = name(d, "snake"), d.value()
    return d.pick(
        [
            f'resource "aws_db_instance" "main" {{\n  engine   = "postgres"\n  {n} = "{mark(v)}"\n}}',
            f'provider "acme" {{\n  endpoint = "https://{d.host()}"\n  {n}    = "{mark(v)}"\n}}',
            f'variable "{n}" {{\n  default = "{mark(v)}"\n}}',
        ]
    )


def url_userinfo_other(d: Draw) -> str:
    scheme = d.pick(
        ["amqp", "amqps", "redis", "rediss", "mongodb+srv", "ftp", "sftp", "smb", "ldap", "nats", "mqtt"]
    )
    pw = d.pick([d.password(), d.token(12, 24)])
    safe = (
        pw.replace("@", "%40").replace("#", "%23").replace("/", "%2F").replace("?", "%3F").replace(":", "%3A")
    )
    user = d.pick([d.user(), ""])
    return d.pick(
        [
            f"BROKER={scheme}://{user}:{mark(safe)}@{d.host()}:5672/vhost",
            f'client = connect("{scheme}://{user}:{mark(safe)}@{d.host()}")',
            f"Connecting to {scheme}://{user}:{mark(safe)}@{d.host()}/ ...",
        ]
    )


def conn_pwd(d: Draw) -> str:
    pw = d.password().replace(";", "").replace("}", "")
    return d.pick(
        [
            f"Driver={{ODBC Driver 18 for SQL Server}};Server={d.host()};Database=app;Uid={d.user()};Pwd={mark(pw)};",
            f"DSN=warehouse;UID={d.user()};PWD={mark(pw)}",
            f'conn = pyodbc.connect("DRIVER={{PostgreSQL}};SERVER={d.host()};uid={d.user()};pwd={mark(pw)}")',
            f"jdbc:mysql://{d.host()}:3306/app?user={d.user()}&password={mark(pw.replace('&', ''))}&useSSL=true",
        ]
    )


# -- cookies and session values --


def set_cookie(d: Draw) -> str:
    cookie = d.pick(
        [
            "__Secure-next-auth.session-token",
            "laravel_session",
            "_gitlab_session",
            "ASP.NET_SessionId",
            "rack.session",
        ]
    )
    v = d.pick([d.token(32, 64, URLSAFE), d.b64url(40), d.hex(40)])
    return f"< Set-Cookie: {cookie}={mark(v)}; Path=/; HttpOnly; Secure; SameSite=Lax"


def cookie_stores(d: Draw) -> str:
    cookie = d.pick(["session", "sessionid", "auth", "sid", "user_session", "SESS"])
    v = d.token(30, 52, URLSAFE)
    return d.pick(
        [
            f".example.test\tTRUE\t/\tTRUE\t1798761600\t{cookie}\t{mark(v)}",
            f'document.cookie = "{cookie}={mark(v)}; path=/";',
            f'requests.get(url, cookies={{"{cookie}": "{mark(v)}"}})',
            f'await fetch("/api/me", {{ headers: {{ cookie: "{cookie}={mark(v)}" }} }})',
        ]
    )


# -- random-looking tokens near other credential words and constructions --


def token_other_words(d: Draw) -> str:
    v = d.pick([d.token(20, 40), d.hex(40), d.token(24, 40, URLSAFE)])
    return d.pick(
        [
            f"{mark(v)} is the api key for staging",
            f"Authenticated with credentials {mark(v)}",
            f"set the signing secret to {mark(v)} and redeploy",
            f"[auth] using secret={mark(v)} (from keychain)",
            f"licence key: {mark(v)}",
            f"access code {mark(v)}",
        ]
    )


# -- known prefixes' bodies: other families --


def devops(d: Draw) -> str:
    kind = d.r.randrange(8)
    if kind == 0:
        v = "dop_v1_" + d.hex(64)
    elif kind == 1:
        v = "hvs." + d.token(24, 24) if d.r.random() < 0.5 else "hvs.CAESI" + d.token(86, 86, URLSAFE)
    elif kind == 2:
        v = "dp.st.prd." + d.token(43, 43)
    elif kind == 3:
        v = "pul-" + d.hex(40)
    elif kind == 4:
        v = d.token(14, 14) + ".atlasv1." + d.token(67, 67)
    elif kind == 5:
        v = "tskey-auth-" + d.token(12, 12) + "-" + d.token(32, 32)
    elif kind == 6:
        v = "dapi" + d.hex(32)
    else:
        v = d.chars(52, string.ascii_lowercase + "234567")  # an Azure DevOps PAT
        return d.pick(
            [
                f"AZURE_DEVOPS_EXT_PAT={mark(v)}",
                f"az devops login --org https://dev.azure.com/acme <<< {mark(v)}",
            ]
        )
    return d.pick([f"{mark(v)}", f'env = {{ TOKEN = "{mark(v)}" }}', f"echo {mark(v)} | login --with-token"])


def provider(d: Draw) -> str:
    kind = d.r.randrange(8)
    if kind == 0:
        v = "lin_api_" + d.token(40, 40)
    elif kind == 1:
        v = "pypi-AgEIcHlwaS5vcmc" + d.token(60, 160, URLSAFE)
    elif kind == 2:
        v = d.pick(["shpat_", "shpss_", "shpca_"]) + d.hex(32)
    elif kind == 3:
        v = "ATATT3xFfGF0" + d.token(180, 180, URLSAFE) + "=" + d.hex(8).upper()
    elif kind == 4:
        body = d.token(32, 32)
        v = "glsa_" + body + "_" + d.hex(8)
    elif kind == 5:
        v = f"PMAK-{d.hex(24)}-{d.hex(34)}"
    elif kind == 6:
        v = "gsk_" + d.token(52, 52)
    else:
        body = d.token(36, 36)
        v = "r8_" + body + base62_crc32(body, 1)[:1]
    return d.pick([f"{mark(v)}", f"token = {mark(v)}", f"curl -u :{mark(v)} https://api.example.test"])


# -- cloud keys with regional formats --


def regional_cloud(d: Draw) -> str:
    kind = d.r.randrange(5)
    if kind == 0:
        kid, sec = "LTAI" + d.token(20, 20), d.token(30, 30)
        region = d.pick(["cn-hangzhou", "cn-shanghai", "ap-southeast-1"])
        return f"aliyun configure set --region {region} --access-key-id {mark(kid)} --access-key-secret {mark(sec)}"
    if kind == 1:
        kid, sec = "AKID" + d.token(32, 32), d.token(32, 32)
        return f'cred = credential.Credential("{mark(kid)}", "{mark(sec)}")\nclient = cvm_client.CvmClient(cred, "ap-guangzhou")'
    if kind == 2:
        suffix = d.pick(["core.chinacloudapi.cn", "core.usgovcloudapi.net"])
        return f"DefaultEndpointsProtocol=https;AccountName=data{d.hex(6)};AccountKey={mark(d.b64(64))};EndpointSuffix={suffix}"
    if kind == 3:
        kid = "ASIA" + d.chars(16, string.ascii_uppercase + "234567")
        sec = d.chars(40, ALNUM + "+/")
        tok = "IQoJb3JpZ2luX2VjE" + d.token(300, 300, ALNUM + "+/")
        return (
            f"[china]\nregion = cn-north-1\naws_access_key_id = {mark(kid)}\n"
            f"aws_secret_access_key = {mark(sec)}\naws_session_token = {mark(tok)}"
        )
    ak = d.chars(20, string.ascii_uppercase + string.digits)
    sk = d.token(40, 40)
    return f"export HUAWEICLOUD_SDK_AK={mark(ak)}\nexport HUAWEICLOUD_SDK_SK={mark(sk)}\nexport HUAWEICLOUD_REGION=cn-north-4"


# -- private keys in other containers and encodings --

_PKCS8_ENC = bytes.fromhex("308204e3301d060a2a864886f70d010c0103300f04")
_DSA = bytes.fromhex("308201bb02010002818100")
_PKCS8_ED = bytes.fromhex("302e020100300506032b657004220420")
_PKCS12 = bytes.fromhex("30820a0a0201033082098006092a864886f70d010701a0820971048209")


def pem_other(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        body = wrap64(base64.b64encode(_PKCS8_ENC + d.raw(1240)).decode())
        return f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{mark(body)}\n-----END ENCRYPTED PRIVATE KEY-----"
    if kind == 1:
        body = wrap64(base64.b64encode(_DSA + d.raw(430)).decode())
        return f"-----BEGIN DSA PRIVATE KEY-----\n{mark(body)}\n-----END DSA PRIVATE KEY-----"
    body = wrap64(base64.b64encode(b"\x95\x03\xc6\x04" + d.raw(900)).decode())
    crc = base64.b64encode(d.raw(3)).decode()
    return (
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{mark(body)}\n={crc}\n-----END PGP PRIVATE KEY BLOCK-----"
    )


def der_and_p12(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        v = base64.b64encode(_PKCS8_ED + d.raw(32)).decode()
        return d.pick([f"SIGNING_KEY={mark(v)}", f'"key": "{mark(v)}"'])
    if kind == 1:
        v = base64.b64encode(
            bytes.fromhex("308204bd020100300d06092a864886f70d0101010500") + d.raw(1180)
        ).decode()
        return f"tls:\n  key: {mark(v)}"
    v = base64.b64encode(_PKCS12 + d.raw(2400)).decode()
    return d.pick(
        [f"CERT_P12_BASE64={mark(v)}", f'"pfx": "{mark(v)}"', f"certificate.p12 (base64): {mark(v)}"]
    )


def jwk_keypair(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        x, dd = d.b64url(32), d.b64url(32)
        return f'{{"kty":"OKP","crv":"Ed25519","x":"{x}","d":"{mark(dd)}","kid":"{d.hex(8)}"}}'
    if kind == 1:
        x, y, dd = d.b64url(32), d.b64url(32), d.b64url(32)
        return f'{{\n  "kty": "EC",\n  "crv": "P-256",\n  "x": "{x}",\n  "y": "{y}",\n  "d": "{mark(dd)}",\n  "use": "sig"\n}}'
    numbers = ",".join(str(b) for b in d.raw(64))
    return f"$ cat ~/.config/solana/id.json\n[{mark(numbers)}]"


def nostr_age(d: Draw) -> str:
    kind = d.r.randrange(2)
    if kind == 0:
        v = bech32("nsec", d.raw(32))
        return d.pick([f"nsec: {mark(v)}", f"my nostr key {mark(v)}", f'NOSTR_SECRET="{mark(v)}"'])
    v = bech32("age-secret-key-", d.raw(32)).upper()
    return f"# created: 2026-10-01T10:00:00Z\n# public key: {bech32('age', d.raw(32))}\n{mark(v)}"


# -- values split over lines: the terminal and string concatenation --


def terminal_wrap(d: Draw) -> str:
    prefix = d.pick(["TOKEN=", "api_key: ", "Authorization: Bearer ", "export SECRET_VALUE="])
    v = d.token(100, 150, URLSAFE)
    width = d.pick([80, 100])
    line = prefix + v
    pieces = [line[i : i + width] for i in range(0, len(line), width)]
    out = []
    consumed = 0
    for p in pieces:
        start = max(0, len(prefix) - consumed)
        out.append(p[:start] + (mark(p[start:]) if p[start:] else ""))
        consumed += len(p)
    return "\n".join(out)


def concatenation(d: Draw) -> str:
    v = d.token(48, 80)
    cut = d.r.randint(16, len(v) - 16)
    a, b = v[:cut], v[cut:]
    return d.pick(
        [
            f'API_KEY = "{mark(a)}" + \\\n    "{mark(b)}"',
            f'const secret = "{mark(a)}" +\n  "{mark(b)}";',
            f'token = (\n    "{mark(a)}"\n    "{mark(b)}"\n)',
            f'String key = "{mark(a)}"\n    + "{mark(b)}";',
        ]
    )


# -- prose in the evaluation languages (their words, their ways of saying "is") --

PROSE: dict[str, list[str]] = {
    "ko": ["비밀번호는 {pw}입니다", "서버 암호: {pw}", "PIN 번호는 {pin}이에요", "API 키는 {key} 입니다"],
    "vi": ["Mật khẩu là {pw}", "mật khẩu máy chủ: {pw}", "Mã PIN là {pin}", "Khóa API là {key}"],
    "id": ["Kata sandinya adalah {pw}", "sandi: {pw}", "PIN-nya {pin}", "Kunci API-nya {key}"],
    "uk": ["Пароль до сервера — {pw}", "Мій пароль: {pw}", "PIN-код: {pin}", "Ключ API — {key}"],
    "ar": ["كلمة المرور هي {pw}", "كلمة السر: {pw}", "الرقم السري هو {pin}", "مفتاح API هو {key}"],
    "he": ["הסיסמה היא {pw}", "סיסמא: {pw}", "הקוד הסודי הוא {pin}", "מפתח ה-API הוא {key}"],
    "el": [
        "Ο κωδικός πρόσβασης είναι {pw}",
        "συνθηματικό: {pw}",
        "Το PIN είναι {pin}",
        "Το κλειδί API είναι {key}",
    ],
    "hu": ["A jelszó {pw}", "jelszó: {pw}", "A PIN-kód {pin}", "Az API-kulcs {key}"],
    "fi": ["Salasana on {pw}", "palvelimen salasana: {pw}", "PIN-koodi on {pin}", "API-avain on {key}"],
    "ro": ["Parola este {pw}", "parola serverului: {pw}", "Codul PIN este {pin}", "Cheia API este {key}"],
    "da": ["Adgangskoden er {pw}", "kodeordet er {pw}", "Pinkoden er {pin}", "API-nøglen er {key}"],
    "nb": ["Passordet er {pw}", "passord: {pw}", "PIN-koden er {pin}", "API-nøkkelen er {key}"],
    "th": ["รหัสผ่านคือ {pw}", "รหัสผ่านของเซิร์ฟเวอร์: {pw}", "รหัส PIN คือ {pin}", "คีย์ API คือ {key}"],
    "fa": ["رمز عبور {pw} است", "گذرواژه: {pw}", "پین {pin} است", "کلید API {key} است"],
    "bg": ["Паролата е {pw}", "парола: {pw}", "ПИН кодът е {pin}", "API ключът е {key}"],
    "sk": ["Prístupové heslo je {pw}", "heslo: {pw}", "PIN kód je {pin}", "API kľúč je {key}"],
    "ca": ["La contrasenya és {pw}", "contrasenya: {pw}", "El PIN és {pin}", "La clau de l'API és {key}"],
    "zh-Hant": ["密碼是{pw}", "資料庫密碼：{pw}", "PIN碼為{pin}", "金鑰為 {key}"],
    "en-passphrase": [
        "the passphrase for the backup disk is {phrase}",
        "unlock it with {phrase}",
        "GPG passphrase: {phrase}",
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


# -- mail configuration, other programs --


def mail_other(d: Draw) -> str:
    pw = d.password().replace('"', "").replace("'", "")
    user = f"{d.user()}@example.test"
    return d.pick(
        [
            f'set smtp_url = "smtps://{user}@smtp.example.test:465/"\nset smtp_pass = "{mark(pw)}"',
            f'EMAIL_HOST = "smtp.example.test"\nEMAIL_HOST_USER = "{user}"\nEMAIL_HOST_PASSWORD = "{mark(pw)}"',
            f"const transport = nodemailer.createTransport({{ host: 'smtp.example.test', port: 587,\n"
            f"  auth: {{ user: '{user}', pass: '{mark(pw)}' }} }});",
            f'poll imap.example.test protocol IMAP user "{user}" password "{mark(pw)}" ssl',
            f"root=postmaster\nmailhub=smtp.example.test:587\nAuthUser={user}\nAuthPass={mark(pw)}\nUseSTARTTLS=YES",
            f"swaks --to ops@example.test --server smtp.example.test --auth-user {user} --auth-password '{mark(pw)}'",
            f"$mail->Username = '{user}';\n$mail->Password = '{mark(pw)}';",
        ]
    )


# -- look-alikes that must be kept: other kinds --


def la_digest(d: Draw) -> str:
    return d.pick(
        [
            f"{mark(d.hex(32))}  backup-2026-11-30.tar",
            f"image: ghcr.io/acme/api@{mark('sha256:' + d.hex(64))}",
            f"Digest: {mark('sha256:' + d.hex(64))}",
            f"SHA1 ({d.pick(['setup.exe', 'README'])}) = {mark(d.hex(40))}",
            f"Merge pull request #{d.r.randint(10, 999)} from acme/fix ({mark(d.hex(40))})",
        ]
    )


def la_resource_id(d: Draw) -> str:
    acct = d.chars(12, string.digits)
    return d.pick(
        [
            f"arn: {mark(f'arn:aws:iam::{acct}:role/deploy-{d.hex(6)}')}",
            f"--scope {mark(f'/subscriptions/{d.uuid()}/resourceGroups/rg-prod/providers/Microsoft.Storage/storageAccounts/data{d.hex(6)}')}",
            f"instance {mark('i-' + d.hex(17))} is running",
            f"project: {mark(f'projects/acme-{d.hex(6)}/locations/europe-west1/keyRings/prod')}",
            f"vpc_id = {mark('vpc-' + d.hex(17))}",
        ]
    )


def la_address(d: Draw) -> str:
    pgp = wrap64(base64.b64encode(b"\x99\x01\x0d\x04" + d.raw(300)).decode())
    return d.pick(
        [
            f"send to {mark(bech32('bc', d.raw(20), witness_version=0))}",
            f"wallet: {mark('0x' + d.hex(40))}",
            f"my nostr: {mark(bech32('npub', d.raw(32)))}",
            f"recipient {mark(bech32('age', d.raw(32)))}",
            f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{mark(pgp)}\n-----END PGP PUBLIC KEY BLOCK-----",
        ]
    )


def la_placeholder(d: Draw) -> str:
    return d.pick(
        [
            f"API_KEY={mark('<YOUR_API_KEY>')}",
            f"token: {mark('your-token-here')}",
            f"password: {mark('********')}",
            f'"client_secret": "{mark("REPLACE_ME")}"',
            f"STRIPE_KEY={mark('sk_test_4eC39HqLyjWDarjtT1zdp7dc')}",
            f"password={mark('[REDACTED]')}",
        ]
    )


def la_vault(d: Draw) -> str:
    lines = "\n".join(d.hex(80) for _ in range(d.r.randint(3, 6)))
    return d.pick(
        [
            f"db_password: !vault |\n  {mark('$ANSIBLE_VAULT;1.1;AES256')}\n  {mark(lines.replace(chr(10), chr(10) + '  '))}",
            f"DB_PASSWORD={mark('op://Production/postgres/password')}",
            f"password: {mark('vault:secret/data/app#db_password')}",
            f"secret: {mark(f'arn:aws:secretsmanager:eu-west-1:{d.chars(12, string.digits)}:secret:prod/db-{d.chars(6, ALNUM)}')}",
            f"valueFrom:\n  secretKeyRef:\n    name: {mark('db-credentials')}\n    key: {mark('password')}",
        ]
    )


def la_blob(d: Draw) -> str:
    return d.pick(
        [
            f'"integrity": "{mark("sha512-" + d.b64(64))}"',
            f"binaryData:\n  dump.gz: {mark('H4sIAAAAAAAA/' + d.b64(90))}",
            f'"thumbnail": "{mark(base64.b64encode(b"GIF89a" + d.raw(60)).decode())}"',
        ]
    )


def la_prose_other(d: Draw) -> str:
    return d.pick(
        [
            mark("Salasana on vaihdettava 90 päivän välein."),
            mark("Heslo musí mít alespoň dvanáct znaků."),
            mark("Das Passwort ist abgelaufen, bitte ein neues setzen."),
            mark("La contraseña es demasiado corta."),
            mark("The password is stored in the keychain, not in the repo."),
            mark("the token is invalid"),
            mark("Passordet er utløpt."),
        ]
    )


def la_config_other(d: Draw) -> str:
    return d.pick(
        [
            mark("token_url: https://auth.example.test/oauth/token"),
            mark("ssh_key_path: ~/.ssh/id_ed25519"),
            mark('password_hash_algorithm = "argon2id"'),
            mark("secret_name: prod-db-credentials"),
            mark("AUTH_PROVIDER=github"),
            mark("private_key_file = /etc/ssl/private/server.key"),
        ]
    )


def specs() -> list[Spec]:
    out = [
        Spec("slot", "http-header", "secret", "http", http_header),
        Spec("slot", "toml", "secret", "file", toml_key),
        Spec("slot", "ini", "secret", "file", ini_key),
        Spec("slot", "xml", "secret", "file", xml_key),
        Spec("slot", "properties", "secret", "file", properties_key),
        Spec("slot", "hcl", "secret", "file", hcl_key),
        Spec("slot", "url-userinfo-other-schemes", "secret", "inline", url_userinfo_other),
        Spec("slot", "conn-string-pwd", "secret", "inline", conn_pwd),
        Spec("cookie", "set-cookie", "secret", "http", set_cookie),
        Spec("cookie", "cookie-stores-and-code", "secret", "inline", cookie_stores),
        Spec("token-near-word", "other-words", "secret", "prose", token_other_words),
        Spec("prefix-token", "devops", "secret", "inline", devops),
        Spec("prefix-token", "provider", "secret", "inline", provider),
        Spec("cloud-key", "regional", "secret", "inline", regional_cloud),
        Spec("private-key", "pem-other-labels", "secret", "file", pem_other),
        Spec("private-key", "der-pkcs12-base64", "secret", "inline", der_and_p12),
        Spec("private-key", "jwk-json-keypair", "secret", "file", jwk_keypair),
        Spec("private-key", "nsec-age", "secret", "inline", nostr_age),
        Spec("split", "terminal-wrap", "secret", "command", terminal_wrap),
        Spec("split", "concatenation", "secret", "file", concatenation),
        Spec("mail", "other-programs", "secret", "file", mail_other),
        Spec("lookalike-hash", "digests-and-checksums", "lookalike", "inline", la_digest),
        Spec("lookalike-id", "cloud-resource-ids", "lookalike", "inline", la_resource_id),
        Spec("lookalike-public", "addresses-and-public-keys", "lookalike", "inline", la_address),
        Spec("lookalike-example", "placeholders-and-doc-keys", "lookalike", "file", la_placeholder),
        Spec("lookalike-reference", "vault-op-secret-refs", "lookalike", "file", la_vault),
        Spec("lookalike-data", "integrity-and-blobs", "lookalike", "inline", la_blob),
        Spec("lookalike-prose", "no-value-other-languages", "lookalike", "prose", la_prose_other),
        Spec("lookalike-prose", "non-secret-config", "lookalike", "file", la_config_other),
    ]
    out += [Spec("prose", lang, "secret", "prose", prose(t)) for lang, t in PROSE.items()]
    return out
