"""dev-3: the first held-out half, LOOKED AT, now development material.

It was written after ``eval.py`` had been looked at, as the held-out half: its classes came from
what developers paste into agent sessions, not from memd's rules, and none of its syntaxes,
secret-ish names, languages, key containers, token prefixes, cloud formats or look-alike kinds was
held as a literal shape by ``dev.py``, ``eval.py``, ``tests/pipeline/redaction/``, the
``benchmarks/redaction_*.py`` corpora or ``pipeline/redaction``. The lead measured it once
(``generalise_bench.py --heldout``, figures in docs/redaction-measured.md), so its per-class figures
have been read and it no longer measures generalisation: rules may now be written against it as
against ``dev.py`` and ``eval.py``. The benchmark reports it as "dev-3 (looked at, now
development)" on every run. Its half name ("heldout"), seed, framing and cases are unchanged. The
held-out half is now ``heldout2.py``: never read that one to write a rule.
"""

from __future__ import annotations

import base64
import json
import string
from collections.abc import Callable, Iterator

from benchmarks.redaction_gen import (
    ALNUM,
    MARK_CLOSE,
    MARK_OPEN,
    URLSAFE,
    Draw,
    Frame,
    Spec,
    b58,
    base58check,
    bech32,
    mark,
    prefixed,
    spell,
    wrap64,
)

HALF = "heldout"
SEED = 0x5EED_4E1D  # not the development seed family
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
TRON = bytes([0x41])

# -- secret-ish names (the held-out spellings; none of them in dev.py or eval.py) --

NAMES = [
    ["api", "token"],
    ["shared", "secret"],
    ["consumer", "secret"],
    ["passcode"],
    ["root", "pw"],
    ["totp", "seed"],
    ["app", "key"],
    ["auth", "key"],
    ["secret", "token"],
    ["service", "key"],
    ["signing", "key"],
    ["login", "secret"],
    ["deploy", "key"],
    ["pword"],
    ["api", "secret"],
    ["store", "pass"],
]


def name(d: Draw, *styles: str) -> str:
    return spell(d.pick(NAMES), d.pick(styles))


def quiet_pw(d: Draw) -> str:
    """A password without quotes, colons, semicolons or backslashes (safe in any config)."""
    return d.password().replace(":", "").replace(";", "")


def wrap(text: str, width: int) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


# -- values in credential slots, by syntax --


def sql_statements(d: Draw) -> str:
    pw, user = quiet_pw(d), d.user()
    return d.pick(
        [
            f"CREATE USER {user} WITH PASSWORD '{mark(pw)}';",
            f"ALTER ROLE {user} WITH LOGIN PASSWORD '{mark(pw)}' VALID UNTIL 'infinity';",
            f"CREATE USER '{user}'@'%' IDENTIFIED BY '{mark(pw)}';",
            f"ALTER LOGIN [{user}] WITH PASSWORD = N'{mark(pw)}';",
            f"SET PASSWORD FOR '{user}'@'localhost' = '{mark(pw)}';",
            f'CREATE USER {user} IDENTIFIED BY "{mark(pw)}" DEFAULT TABLESPACE users;',
        ]
    )


def shell_other(d: Draw) -> str:
    n, v = name(d, "UPPER"), d.value()
    return d.pick(
        [
            f"setenv {n} {mark(v)}",
            f'$env.{n} = "{mark(v)}"',
            f'setx {n} "{mark(v)}"',
            f'[Environment]::SetEnvironmentVariable("{n}", "{mark(v)}", "User")',
            f"launchctl setenv {n} {mark(v)}",
            f"fly secrets set {n}={mark(v)} --app api-prod",
            f"gh secret set {n} --body '{mark(v)}'",
            f"heroku config:set {n}={mark(v)} -a billing-eu",
        ]
    )


def code_literals(d: Draw) -> str:
    parts = d.pick(NAMES)
    snake, camel, pascal = spell(parts, "snake"), spell(parts, "camel"), spell(parts, "pascal")
    v, host = d.value(), d.host()
    return d.pick(
        [
            f'client = Api::Client.new(url: "https://{host}", {snake}: "{mark(v)}")',
            f"return [\n    'driver' => 'api',\n    '{snake}' => '{mark(v)}',\n];",
            f'cfg := Config{{\n\tEndpoint: "https://{host}",\n\t{pascal}: "{mark(v)}",\n}}',
            f'builder.set{pascal}("{mark(v)}");',
            f'config :my_app, MyApp.Api,\n  {snake}: "{mark(v)}"',
            f'local opts = {{ {snake} = "{mark(v)}", timeout = 30 }}',
            f'services.myapp.{camel} = "{mark(v)}";',
            f'let {camel} = "{mark(v)}"',
            f'options.{pascal} = "{mark(v)}";',
        ]
    )


def tables(d: Draw) -> str:
    col = spell(d.pick(NAMES), d.pick(["snake", "UPPER"]))
    rows = [(d.pick(["prod-db", "cache", "grafana", "ldap", "nas"]), d.user(), quiet_pw(d)) for _ in range(2)]
    kind = d.r.randrange(4)
    if kind == 0:
        body = "\n".join(f"| {s} | {u} | `{mark(p)}` |" for s, u, p in rows)
        return f"| service | user | {d.pick(['password', 'pass', col])} |\n|---|---|---|\n{body}"
    if kind == 1:
        body = "\n".join(f"{s},https://{s}.example.test/login,{u},{mark(p)}" for s, u, p in rows)
        return f"name,url,username,password\n{body}"
    if kind == 2:
        s, u, p = rows[0]
        return f"-[ RECORD 1 ]-+-------------\nid            | 7\nusername      | {u}\n{col:<14}| {mark(p)}\nactive        | t"
    s, u, p = rows[0]
    return f" id | username | {col}\n----+----------+{'-' * (len(col) + 2)}\n  3 | {u} | {mark(p)}\n(1 row)"


def repr_logfmt(d: Draw) -> str:
    parts = d.pick(NAMES)
    snake, camel, pascal = spell(parts, "snake"), spell(parts, "camel"), spell(parts, "pascal")
    v, host = d.pick([d.token(), d.hex(40), d.b64(24)]), d.host()
    return d.pick(
        [
            f"Settings(base_url='https://{host}', {snake}='{mark(v)}', timeout=30)",
            f'ts=2026-12-01T10:22:03Z level=debug msg="client init" {snake}={mark(v)} retries=3',
            f"config: {{Endpoint:https://{host} {pascal}:{mark(v)} Timeout:30s}}",
            f'Config {{ endpoint: "https://{host}", {snake}: "{mark(v)}", retries: 3 }}',
            f"{{'{snake}': '{mark(v)}', 'region': 'eu-central-1'}}",
            f"{{ {camel}: '{mark(v)}', baseURL: 'https://{host}' }}",
        ]
    )


def query_string(d: Draw) -> str:
    n, v = name(d, "snake", "camel"), d.pick([d.token(), d.hex(40), d.token(24, 40, URLSAFE)])
    return d.pick(
        [
            f"GET /v2/export?format=csv&{n}={mark(v)} HTTP/1.1",
            f'curl "https://api.example.test/v1/items?{n}={mark(v)}&page=2"',
            f"curl -s 'https://hooks.example.test/notify?channel=ops&{n}={mark(v)}'",
            f"curl -X POST https://auth.example.test/exchange -d '{n}={mark(v)}&grant=refresh'",
        ]
    )


def name_value_env(d: Draw) -> str:
    n, v = name(d, "UPPER"), d.value()
    return d.pick(
        [
            f'env:\n  - name: LOG_LEVEL\n    value: info\n  - name: {n}\n    value: "{mark(v)}"',
            f'"environment": [\n  {{"name": "REGION", "value": "eu-west-1"}},\n  {{"name": "{n}", "value": "{mark(v)}"}}\n]',
            f"environment:\n  - TZ=UTC\n  - {n}={mark(v)}",
            f"gcloud run deploy api --region europe-west4 --set-env-vars={n}={mark(v)},MODE=prod",
            f'[\n  {{\n    "name": "{n}",\n    "slotSetting": false,\n    "value": "{mark(v)}"\n  }}\n]',
            f'env {{\n  name  = "{n}"\n  value = "{mark(v)}"\n}}',
        ]
    )


def positional_files(d: Draw) -> str:
    pw, user, host = quiet_pw(d), d.user(), d.host()
    return d.pick(
        [
            f"$ cat ~/.pgpass\n{host}:5432:billing:{user}:{mark(pw)}",
            f"$ cat /etc/openvpn/client/auth.txt\n{user}\n{mark(pw)}\n$ grep auth-user-pass client.ovpn\nauth-user-pass auth.txt",
            f'# client\tserver\tsecret\t\tIP addresses\n"{user}"\t*\t"{mark(pw)}"\t*',
            f'network={{\n    ssid="office-5G"\n    psk="{mark(pw)}"\n}}',
            f"interface=wlan0\nssid=lab\nwpa=2\nwpa_passphrase={mark(pw)}",
            f"$ sudo cat /etc/davfs2/secrets\nhttps://dav.example.test/remote.php/webdav {user} {mark(pw)}",
        ]
    )


def auth_schemes(d: Draw) -> str:
    return d.pick(
        [
            f"> Authorization: GenieKey {mark(d.uuid())}",
            f"curl -H 'Authorization: Klaviyo-API-Key {mark('pk_' + d.hex(34))}' https://a.klaviyo.example.test/api/lists",
            f'headers = {{"Authorization": "DeepL-Auth-Key {mark(d.uuid() + ":fx")}"}}',
            f"> Authorization: Zoho-oauthtoken {mark('1000.' + d.hex(32) + '.' + d.hex(32))}",
            f"curl -H 'X-Auth-Email: ops@example.test' -H 'X-Auth-Key: {mark(d.hex(37))}' https://api.example.test/zones",
        ]
    )


# -- cookies and session values --

_COOKIE_NAMES = ["aspnet", "wordpress", "drupal", "rails", "host", "console"]


def cookie_pair(d: Draw) -> tuple[str, str]:
    kind = d.pick(_COOKIE_NAMES)
    if kind == "aspnet":
        return ".AspNetCore.Cookies", "CfDJ8" + d.token(200, 300, URLSAFE)
    if kind == "wordpress":
        exp = d.r.randint(1790000000, 1799999999)
        return f"wordpress_logged_in_{d.hex(32)}", f"{d.user()}%7C{exp}%7C{d.token(43, 43)}%7C{d.hex(64)}"
    if kind == "drupal":
        return f"SSESS{d.hex(32)}", d.token(43, 43, URLSAFE)
    if kind == "rails":
        return "_forum_session", d.b64(90).replace("=", "%3D") + "--" + d.hex(40)
    if kind == "host":
        return "__Host-sid", d.token(43, 43, URLSAFE)
    return "sessionKey", "sk-ant-sid01-" + d.token(86, 86, URLSAFE) + "-" + d.token(6, 6, URLSAFE) + "AA"


def exported_jars(d: Draw) -> str:
    n, v = cookie_pair(d)
    kind = d.r.randrange(4)
    if kind == 0:
        return (
            f'[\n{{\n    "domain": ".app.example.test",\n    "expirationDate": 1798761600,\n    "hostOnly": false,\n'
            f'    "httpOnly": true,\n    "name": "{n}",\n    "path": "/",\n    "sameSite": "lax",\n'
            f'    "secure": true,\n    "session": false,\n    "storeId": "0",\n    "value": "{mark(v)}",\n    "id": 3\n}}\n]'
        )
    if kind == 1:
        return (
            f'{{"cookies": [{{"name": "{n}", "value": "{mark(v)}", "domain": "app.example.test", "path": "/",'
            f' "expires": 1798761600, "httpOnly": true, "secure": true, "sameSite": "Lax"}}], "origins": []}}'
        )
    if kind == 2:
        return f'"cookies": [\n  {{\n    "name": "{n}",\n    "value": "{mark(v)}",\n    "path": "/",\n    "httpOnly": true\n  }}\n]'
    return f"[{{'domain': 'app.example.test', 'httpOnly': True, 'name': '{n}', 'path': '/', 'secure': True, 'value': '{mark(v)}'}}]"


def copied_requests(d: Draw) -> str:
    n, v = cookie_pair(d)
    return d.pick(
        [
            f"curl 'https://app.example.test/api/graphql' -H 'accept: */*' -H 'cookie: theme=dark; {n}={mark(v)}; tz=UTC' --compressed",
            f'fetch("https://app.example.test/api/me", {{"headers": {{"accept": "application/json", "cookie": "{n}={mark(v)}"}}, "method": "GET"}});',
            f'curl ^"https://app.example.test/^" -H ^"cookie: {n}={mark(v)}^" --compressed',
            f"http GET app.example.test/api/me 'Cookie:{n}={mark(v)}'",
            f'wget --header="Cookie: {n}={mark(v)}" https://app.example.test/export.csv',
        ]
    )


def browser_storage(d: Draw) -> str:
    n, v = cookie_pair(d)
    t = d.token(32, 64, URLSAFE)
    return d.pick(
        [
            f"> localStorage.getItem('session')\n< '{mark(t)}'",
            f'localStorage.setItem("refresh", "{mark(t)}");',
            f"> document.cookie\n< 'theme=dark; {n}={mark(v)}; _ga=GA1.1.{d.chars(9, string.digits)}.{d.chars(10, string.digits)}'",
            f"sessionStorage['auth'] = '{mark(t)}'",
            f"Name\tValue\tDomain\tPath\n{n}\t{mark(v)}\t.app.example.test\t/",
        ]
    )


# -- random-looking tokens near credential words --


def near_value(d: Draw) -> str:
    return d.pick([d.token(24, 44), d.hex(40), d.token(28, 44, URLSAFE), d.b64(30)])


def chat_handoff(d: Draw) -> str:
    v = near_value(d)
    return d.pick(
        [
            f"rotated it, the new PAT is {mark(v)} — old one's revoked",
            f"creds for staging → {mark(v)}",
            f"pasting the app secret here so you have it: {mark(v)}",
            f"{mark(v)} ← that's the bearer for the sandbox",
            f"ok the passcode they sent is {mark(v)}",
            f"try with this one instead: {mark(v)} (it's the service account's key)",
            f"new deploy key: `{mark(v)}`",
        ]
    )


def log_lines(d: Draw) -> str:
    v = near_value(d)
    return d.pick(
        [
            f"2026-11-30 10:02:11,482 DEBUG auth: loaded credential {mark(v)} from cache",
            f"[WARN] bearer {mark(v)} expires in 300s, refreshing",
            f"I, [2026-11-30T10:02:11.482 #4821]  INFO -- : Using secret {mark(v)} for signing",
            f"DEBUG:urllib3.connectionpool: authenticating with key {mark(v)}",
            f'time=2026-11-30T10:02:11Z msg="retrying with fallback credential {mark(v)}"',
        ]
    )


def comments(d: Draw) -> str:
    v = near_value(d)
    return d.pick(
        [
            f"# temporary key for local testing: {mark(v)}",
            f"// staging secret {mark(v)} (rotate before launch)",
            f"<!-- api token {mark(v)} -->",
            f"-- the reporting user's password is {mark(quiet_pw(d))}",
            f"/* TODO: move to the vault: bearer {mark(v)} */",
            f"REM creds {mark(v)}",
        ]
    )


# -- known prefixes' bodies: held-out families --


def devtools_prefixes(d: Draw) -> str:
    kind = d.r.randrange(5)
    if kind == 0:
        v = "ory_pat_" + d.token(32, 32)
    elif kind == 1:
        v = "sgp_" + d.hex(16) + "_" + d.hex(40)
    elif kind == 2:
        v = "pnu_" + d.token(36, 36)
    elif kind == 3:
        v = "apify_api_" + d.token(36, 36)
    else:
        v = "EZAK" + d.token(54, 54, LOWER_ALNUM)
    return d.pick(
        [f"{mark(v)}", f"echo {mark(v)} > ~/.config/tool/auth", f'"{mark(v)}"', f"tool login {mark(v)}"]
    )


def ai_analytics_prefixes(d: Draw) -> str:
    kind = d.r.randrange(5)
    if kind == 0:
        v = "jina_" + d.token(60, 60)
    elif kind == 1:
        v = "phx_" + d.token(43, 43)
    elif kind == 2:
        v = "sk-lf-" + d.uuid()
        return (
            f"LANGFUSE_PUBLIC_KEY=pk-lf-{d.uuid()}\nLANGFUSE_SECRET_KEY={mark(v)}\n"
            f"LANGFUSE_HOST=https://cloud.langfuse.com"
        )
    elif kind == 3:
        v = "pat" + d.token(14, 14) + "." + d.hex(64)
    else:
        v = "ATCTT3xFfGN0" + d.token(180, 180, URLSAFE) + "=" + d.hex(8).upper()
    return d.pick([f"{mark(v)}", f'client = Client("{mark(v)}")', f"→ {mark(v)}"])


def messaging_prefixes(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        v = "AAAA" + d.token(7, 7, URLSAFE) + ":APA91b" + d.token(134, 134, URLSAFE)
        return d.pick([f"> Authorization: key={mark(v)}", f"server key: {mark(v)}", f"{mark(v)}"])
    if kind == 1:
        v = "mlsn." + d.hex(64)
    else:
        v = (
            "os_v2_app_"
            + d.chars(26, "abcdefghijklmnopqrstuvwxyz234567")
            + d.chars(d.r.randint(60, 80), "abcdefghijklmnopqrstuvwxyz234567")
        )
    return d.pick([f"{mark(v)}", f'init("{mark(v)}")', f"key → {mark(v)}"])


# -- cloud keys: other regions and providers --


def cloud_ru_kr_jp(d: Draw) -> str:
    kind = d.r.randrange(4)
    if kind == 0:
        kid, sec = "YCAJE" + d.token(20, 20, URLSAFE), "YCM" + d.token(37, 37, URLSAFE)
        sa = "aje" + d.chars(17, LOWER_ALNUM)
        return (
            f"$ yc iam access-key create --service-account-name deployer\naccess_key:\n  id: aje{d.chars(17, LOWER_ALNUM)}\n"
            f'  service_account_id: {sa}\n  created_at: "2026-11-30T10:02:11Z"\n  key_id: {mark(kid)}\nsecret: {mark(sec)}'
        )
    if kind == 1:
        return d.pick(
            [
                f"export YC_API_KEY={mark('AQVN' + d.token(36, 36, URLSAFE))}",
                f"yc config set token {mark('y0_' + d.token(55, 55, URLSAFE))}",
            ]
        )
    if kind == 2:
        return (
            f"$ ncloud configure\nNcloud Access Key ID []: {mark(d.chars(20, UPPER_ALNUM))}\n"
            f"Ncloud Secret Access Key []: {mark(d.token(40, 40))}\nNcloud API URL (default:https://ncloud.apigw.ntruss.com) []:"
        )
    return (
        f"export SAKURACLOUD_ACCESS_TOKEN={mark(d.uuid())}\n"
        f"export SAKURACLOUD_ACCESS_TOKEN_SECRET={mark(d.token(64, 64))}\nexport SAKURACLOUD_ZONE=is1a"
    )


def cloud_cn_other(d: Draw) -> str:
    kind = d.r.randrange(4)
    if kind == 0:
        return (
            f"[Defaults]\nDomain = bj.bcebos.com\n\n[Credentials]\nAccessKeyId = {mark(d.hex(32))}\n"
            f"SecretAccessKey = {mark(d.hex(32))}"
        )
    if kind == 1:
        return (
            f"export VOLCENGINE_ACCESS_KEY={mark('AKLT' + d.token(43, 43))}\n"
            f"export VOLCENGINE_SECRET_KEY={mark(d.b64(45))}\nexport VOLCENGINE_REGION=cn-beijing"
        )
    if kind == 2:
        return (
            f"jdc configure add --access-key {mark('JDC_' + d.chars(28, '0123456789ABCDEF'))} "
            f"--secret-key {mark(d.chars(32, '0123456789ABCDEF'))} --region-id cn-north-1"
        )
    return f"qshell account {mark(d.token(40, 40, URLSAFE))} {mark(d.token(40, 40, URLSAFE))} media-admin"


def cloud_s3_compatible(d: Draw) -> str:
    kind = d.r.randrange(5)
    if kind == 0:
        return f"b2 account authorize {mark('005' + d.hex(22))} {mark('K005' + d.token(27, 27))}"
    if kind == 1:
        return (
            f"scw init access-key={mark('SCW' + d.chars(17, UPPER_ALNUM))} secret-key={mark(d.uuid())} "
            f"organization-id={d.uuid()}"
        )
    if kind == 2:
        return f"mc alias set r2 https://{d.hex(32)}.r2.cloudflarestorage.com {mark(d.hex(32))} {mark(d.hex(64))}"
    if kind == 3:
        return (
            f"s3cmd --access_key={mark('DO00' + d.chars(16, UPPER_ALNUM))} --secret_key={mark(d.b64(32).rstrip('='))} "
            f"--host=fra1.digitaloceanspaces.com ls"
        )
    return (
        f"rclone config create wasabi s3 provider Wasabi access_key_id {mark(d.chars(20, UPPER_ALNUM))} "
        f"secret_access_key {mark(d.token(40, 40))} endpoint s3.eu-central-1.wasabisys.com"
    )


def cloud_eu_hosting(d: Draw) -> str:
    kind = d.r.randrange(4)
    if kind == 0:
        return (
            f"[default]\nendpoint=ovh-eu\n\n[ovh-eu]\napplication_key={d.token(16, 16)}\n"
            f"application_secret={mark(d.token(32, 32))}\nconsumer_key={mark(d.token(32, 32))}"
        )
    if kind == 1:
        return f"$ hcloud context create prod\nToken: {mark(d.token(64, 64))}\nContext prod created and activated"
    if kind == 2:
        return f"$ exo config add\n? API Key: {mark('EXO' + d.hex(24))}\n? Secret Key: {mark(d.token(43, 43, URLSAFE))}\n? Name: prod"
    return f"export IBMCLOUD_API_KEY={mark(d.token(44, 44, URLSAFE))}\nibmcloud login -r eu-de"


# -- private keys: other files, containers and encodings --


def minisign_signify(d: Draw) -> str:
    if d.r.random() < 0.5:
        raw = b"EdScB2" + d.raw(32) + d.raw(16) + d.raw(104)
        return f"$ cat ~/.minisign/minisign.key\nuntrusted comment: minisign encrypted secret key\n{mark(base64.b64encode(raw).decode())}"
    raw = b"EdBK" + (42).to_bytes(4, "big") + d.raw(16) + d.raw(8) + d.raw(8) + d.raw(64)
    return f"$ cat /etc/signify/release.sec\nuntrusted comment: signify secret key\n{mark(base64.b64encode(raw).decode())}"


_PKCS8_RSA_HEAD = bytes.fromhex(
    "308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100"
)
_PKCS8_EC_HEAD = bytes.fromhex("308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420")
_CERT_HEAD = bytes.fromhex("3082030d308201f5a003020102021400")


def _pem(label: str, der: bytes) -> str:
    return f"-----BEGIN {label}-----\n{wrap64(base64.b64encode(der).decode())}\n-----END {label}-----\n"


def base64_of_pem(d: Draw) -> str:
    if d.r.random() < 0.5:
        key = _pem("PRIVATE KEY", _PKCS8_RSA_HEAD + d.raw(1180))
    else:
        key = _pem("PRIVATE KEY", _PKCS8_EC_HEAD + d.raw(109))
    v = base64.b64encode(key.encode()).decode()
    cert = base64.b64encode(_pem("CERTIFICATE", _CERT_HEAD + d.raw(760)).encode()).decode()
    return d.pick(
        [
            f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-tls\ntype: kubernetes.io/tls\ndata:\n"
            f"  tls.crt: {cert}\n  tls.key: {mark(v)}",
            f"JWT_PRIVATE_KEY_B64={mark(v)}",
            f'echo "{mark(v)}" | base64 -d > deploy.key && chmod 600 deploy.key',
        ]
    )


def signing_key_files(d: Draw) -> str:
    kind = d.r.randrange(4)
    if kind == 0:
        v = base64.b64encode(d.raw(32)).decode().rstrip("=")
        return f"$ cat /data/homeserver.signing.key\ned25519 a_{d.token(4, 4)} {mark(v)}"
    if kind == 1:
        raw = b"== ed25519v1-secret: type0 ==\0\0\0" + d.raw(64)
        lines = wrap(base64.b64encode(raw).decode(), 76)
        body = "\n".join(mark(line) for line in lines)
        return f"$ sudo base64 /var/lib/tor/hidden_service/hs_ed25519_secret_key\n{body}"
    if kind == 2:
        return f"Export Private Key\n\nYour private key (keep it secret):\n{mark(b58(d.raw(64)))}"
    return f"SODIUM_SEED_B64={mark(base64.b64encode(d.raw(64)).decode())}"


def keystore_base64(d: Draw) -> str:
    if d.r.random() < 0.6:
        raw = b"\xfe\xed\xfe\xed\0\0\0\x02\0\0\0\x01\0\0\0\x01" + d.raw(d.r.randint(1800, 2600))
    else:
        raw = b"\xce\xce\xce\xce\0\0\0\x02\0\0\0\x01\0\0\0\x01" + d.raw(d.r.randint(1800, 2600))
    v = base64.b64encode(raw).decode()
    return d.pick(
        [
            f"$ base64 -w0 app/release.jks\n{mark(v)}",
            f"ANDROID_KEYSTORE_BASE64={mark(v)}",
            f"  - name: Decode keystore\n    run: echo '{mark(v)}' | base64 --decode > upload.keystore",
        ]
    )


def pem_indented(d: Draw) -> str:
    kind = d.r.randrange(3)
    if kind == 0:
        raw = b"openssh-key-v1\0" + b"\0\0\0\x04none\0\0\0\x04none\0\0\0\0\0\0\0\x01" + d.raw(380)
        lines = wrap(base64.b64encode(raw).decode(), 70)
        body = "\n    ".join(mark(line) for line in lines)
        return (
            f"deploy:\n  host: {d.host()}\n  ssh_key: |\n    -----BEGIN OPENSSH PRIVATE KEY-----\n    {body}\n"
            f"    -----END OPENSSH PRIVATE KEY-----"
        )
    if kind == 1:
        lines = wrap(base64.b64encode(_PKCS8_EC_HEAD + d.raw(109)).decode(), 64)
        body = "\n    ".join(mark(line) for line in lines)
        return f"  private_key = <<-EOT\n    -----BEGIN PRIVATE KEY-----\n    {body}\n    -----END PRIVATE KEY-----\n  EOT"
    lines = wrap(base64.b64encode(_PKCS8_RSA_HEAD + d.raw(1180)).decode(), 64)
    body = "\n\t\t".join(mark(line) for line in lines)
    return f"\tconst key = `\n\t\t-----BEGIN PRIVATE KEY-----\n\t\t{body}\n\t\t-----END PRIVATE KEY-----`"


def byte_arrays(d: Draw) -> str:
    raw = d.raw(32)
    kind = d.r.randrange(3)
    if kind == 0:
        inner = ", ".join(f"0x{b:02x}" for b in raw)
        return f"var signingSeed = []byte{{{mark(inner)}}}"
    if kind == 1:
        inner = ", ".join(str(b) for b in raw)
        return f"const SECRET_SEED: [u8; 32] = [{mark(inner)}];"
    raw = d.raw(64)
    rows = [", ".join(f"0x{b:02x}" for b in raw[i : i + 12]) for i in range(0, 64, 12)]
    inner = ",\n    ".join(mark(row) for row in rows)
    return f"static const uint8_t sk[64] = {{\n    {inner}\n}};"


# -- values split over lines, by other means --


def editor_gutter(d: Draw) -> str:
    v = d.token(90, 140, URLSAFE)
    width = d.pick([40, 56, 64])
    n = d.r.randint(9, 80)
    prefix = d.pick(['TOKEN = "', "auth_key: ", "SECRET_TOKEN="])
    first = width - len(prefix)
    pieces = [v[:first], *wrap(v[first:], width)]
    if len(pieces[-1]) < 8:
        pieces[-2] += pieces.pop()
    style = d.r.randrange(2)
    if style == 0:
        lines = [f"{n - 1:>4} │ [service]", f"{n:>4} │ {prefix}{mark(pieces[0])}"]
        lines += [f"     │ {mark(p)}" for p in pieces[1:]]
        lines.append(f"{n + 1:>4} │ timeout = 30")
    else:
        lines = [f"{n:>6} {prefix}{mark(pieces[0])}"]
        lines += [f"       {mark(p)}" for p in pieces[1:]]
        lines.append(f"{n + 1:>6} timeout = 30")
    return "\n".join(lines)


def shell_append(d: Draw) -> str:
    v = d.token(48, 80)
    cut = d.r.randint(16, len(v) - 16)
    a, b = v[:cut], v[cut:]
    return d.pick(
        [
            f'API_TOKEN="{mark(a)}"\nAPI_TOKEN+="{mark(b)}"\nexport API_TOKEN',
            f"echo -n '{mark(a)}' > ~/.token\necho '{mark(b)}' >> ~/.token",
            f'$t = "{mark(a)}"\n$t += "{mark(b)}"\n$env:API_TOKEN = $t',
            f"printf '%s' '{mark(a)}' '{mark(b)}' | gh auth login --with-token",
        ]
    )


def concat_other(d: Draw) -> str:
    v = d.token(48, 84)
    cuts = sorted(d.r.sample(range(16, len(v) - 16), 1 if len(v) < 64 else 2))
    if len(cuts) == 2 and cuts[1] - cuts[0] < 12:
        cuts = cuts[:1]
    parts = [v[i:j] for i, j in zip([0, *cuts], [*cuts, len(v)], strict=True)]
    kind = d.r.randrange(5)
    if kind == 0:
        return "$apiKey = " + " .\n    ".join(f"'{mark(p)}'" for p in parts) + ";"
    if kind == 1:
        joined = " ||\n  ".join(f"'{mark(p)}'" for p in parts)
        return f"UPDATE settings SET value = {joined} WHERE name = 'webhook_key';"
    if kind == 2:
        return "local key = " + " ..\n  ".join(f'"{mark(p)}"' for p in parts)
    if kind == 3:
        return "const KEY: &str = concat!(\n" + "".join(f'    "{mark(p)}",\n' for p in parts) + ");"
    return "#define API_KEY " + " \\\n                ".join(f'"{mark(p)}"' for p in parts)


def quoted_reply(d: Draw) -> str:
    v = d.token(80, 130, URLSAFE)
    q = d.pick(["> ", ">> ", "| "])
    width = d.pick([60, 70, 72]) - len(q)
    pieces = wrap(v, width)
    if len(pieces[-1]) < 8:
        pieces[-2] += pieces.pop()
    body = "\n".join(f"{q}{mark(p)}" for p in pieces)
    intro = d.pick(
        ["here's the token for the importer:", "new service token below", "use this for the sync job:"]
    )
    return f"{q}On Mon, ops wrote:\n{q}{intro}\n{body}\n\nthanks, trying it now"


# -- prose in the held-out languages (their words, their ways of saying "is") --

PROSE: dict[str, list[str]] = {
    "fil": [
        "Ang password ng server ay {pw}",
        "eto yung password: {pw}",
        "Ang PIN ay {pin}",
        "Ang susi ng API ay {key}",
    ],
    "ur": ["پاس ورڈ {pw} ہے", "سرور کا پاس ورڈ: {pw}", "پن کوڈ {pin} ہے", "API کلید {key} ہے"],
    "te": ["పాస్‌వర్డ్ {pw}", "సర్వర్ పాస్‌వర్డ్: {pw}", "పిన్ {pin}", "API కీ {key}"],
    "mr": ["संकेतशब्द {pw} आहे", "सर्व्हरचा गुप्त शब्द: {pw}", "पिन {pin} आहे", "API की {key} आहे"],
    "sw": ["Nenosiri ni {pw}", "nywila ya seva: {pw}", "PIN yako ni {pin}", "Ufunguo wa API ni {key}"],
    "lt": ["Slaptažodis yra {pw}", "serverio slaptažodis: {pw}", "PIN kodas {pin}", "API raktas: {key}"],
    "lv": ["Parole ir {pw}", "servera parole: {pw}", "PIN kods ir {pin}", "API atslēga ir {key}"],
    "et": ["Parool on {pw}", "serveri salasõna: {pw}", "PIN-kood on {pin}", "API võti on {key}"],
    "sl": ["Geslo je {pw}", "geslo za strežnik: {pw}", "Koda PIN: {pin}", "API ključ je {key}"],
    "hr": ["Lozinka je {pw}", "zaporka za poslužitelj: {pw}", "PIN broj je {pin}", "API ključ: {key}"],
    "sr": ["Лозинка је {pw}", "лозинка за сервер: {pw}", "ПИН је {pin}", "АПИ кључ је {key}"],
    "ka": ["პაროლი არის {pw}", "სერვერის პაროლი: {pw}", "PIN კოდი {pin}", "API გასაღები {key}"],
    "hy": ["Գաղտնաբառը {pw} է", "սերվերի գաղտնաբառ՝ {pw}", "PIN կոդը {pin} է", "API բանալին {key} է"],
    "az": ["Şifrə {pw}", "serverin parolu: {pw}", "PIN nömrəsi {pin}", "API açarı {key}"],
    "kk": ["Құпиясөз: {pw}", "сервердің құпия сөзі {pw}", "PIN-коды {pin}", "API кілті {key}"],
    "uz": ["Maxfiy so'z {pw}", "serverning paroli — {pw}", "PIN kodi {pin}", "API kaliti {key}"],
    "eu": ["Pasahitza {pw} da", "zerbitzariaren pasahitza: {pw}", "PIN kodea {pin} da", "API gakoa {key} da"],
    "cy": ["Y cyfrinair yw {pw}", "cyfrinair y gweinydd: {pw}", "Y PIN yw {pin}", "Allwedd yr API yw {key}"],
    "ga": [
        "Is é an pasfhocal ná {pw}",
        "pasfhocal an fhreastalaí: {pw}",
        "Is é an UAP ná {pin}",
        "Eochair API: {key}",
    ],
    "sq": [
        "Fjalëkalimi është {pw}",
        "fjalëkalimi i serverit: {pw}",
        "Kodi PIN është {pin}",
        "Çelësi API është {key}",
    ],
    "mk": ["Лозинката е {pw}", "лозинка за серверот: {pw}", "ПИН кодот е {pin}", "API клучот е {key}"],
    "mn": ["Нууц үг {pw}", "серверийн нууц үг: {pw}", "ПИН дугаар {pin}", "API түлхүүр {key}"],
    "am": ["የይለፍ ቃሉ {pw} ነው", "የሰርቨሩ የይለፍ ቃል፦ {pw}", "ፒን {pin} ነው", "የAPI ቁልፉ {key} ነው"],
    "km": ["ពាក្យសម្ងាត់គឺ {pw}", "ពាក្យសម្ងាត់ម៉ាស៊ីនមេ៖ {pw}", "លេខ PIN គឺ {pin}", "កូនសោ API គឺ {key}"],
    "si": ["මුරපදය {pw}", "සර්වරයේ මුරපදය: {pw}", "PIN අංකය {pin}", "API යතුර {key}"],
    "pa": ["ਪਾਸਵਰਡ {pw} ਹੈ", "ਸਰਵਰ ਦਾ ਪਾਸਵਰਡ: {pw}", "ਪਿੰਨ {pin} ਹੈ", "API ਕੁੰਜੀ {key} ਹੈ"],
    "eo": [
        "La pasvorto estas {pw}",
        "pasvorto de la servilo: {pw}",
        "La PIN-kodo estas {pin}",
        "La API-ŝlosilo estas {key}",
    ],
    "yo": ["Ọ̀rọ̀ aṣínà ni {pw}", "ọ̀rọ̀ aṣínà sáfà: {pw}", "PIN rẹ ni {pin}", "Kọ́kọ́rọ́ API ni {key}"],
    "lb": [
        "D'Passwuert ass {pw}",
        "Passwuert fir de Server: {pw}",
        "De PIN ass {pin}",
        "Den API-Schlëssel ass {key}",
    ],
    "lo": ["ລະຫັດຜ່ານແມ່ນ {pw}", "ລະຫັດຜ່ານເຊີບເວີ: {pw}", "ລະຫັດ PIN ແມ່ນ {pin}", "ກະແຈ API ແມ່ນ {key}"],
    "my": ["စကားဝှက်က {pw} ပါ", "ဆာဗာ စကားဝှက်: {pw}", "PIN နံပါတ်က {pin}", "API ကီးက {key}"],
    "gu": ["પાસવર્ડ {pw} છે", "સર્વરનો પાસવર્ડ: {pw}", "પિન {pin} છે", "API કી {key} છે"],
    "en-chat": [
        "pw's {pw}",
        "u: admin  p: {pw}",
        "login is ops / {pw} for now",
        "door code {pin}, the passphrase for the safe is {phrase}",
    ],
}


def prose(templates: list[str]) -> Callable[[Draw], str]:
    def make(d: Draw) -> str:
        values = {
            "pw": d.pick([d.password(), d.weak()]),
            "pin": d.pin(),
            "phrase": d.phrase(),
            "key": d.pick([d.token(20, 40), d.hex(32)]),
        }
        return d.pick(templates).format(**{k: mark(v) for k, v in values.items()})

    return make


# -- mail configuration, held-out programs --


def mail_sync_clients(d: Draw) -> str:
    pw, user = quiet_pw(d).replace('"', ""), f"{d.user()}@example.test"
    enc = user.replace("@", "%40")
    safe = (
        pw.replace("%", "%25").replace("@", "%40").replace("#", "%23").replace("/", "%2F").replace("?", "%3F")
    )
    return d.pick(
        [
            f"IMAPAccount work\nHost imap.example.test\nUser {user}\nPass {mark(pw)}\nSSLType IMAPS",
            f"[Repository Remote]\ntype = IMAP\nremotehost = imap.example.test\nremoteuser = {user}\nremotepass = {mark(pw)}",
            f"[Work]\nsource   = imaps://{enc}:{mark(safe)}@imap.example.test:993\noutgoing = smtps://{enc}@smtp.example.test:465",
            f'AuthInfo:smtp.example.test "U:{user}" "P:{mark(pw)}" "M:PLAIN"',
            f"$ cat /etc/exim4/passwd.client\n*.example.test:{user}:{mark(pw)}",
        ]
    )


def mail_app_settings(d: Draw) -> str:
    pw, user = quiet_pw(d).replace('"', ""), f"{d.user()}@example.test"
    return d.pick(
        [
            f"[sendemail]\n\tsmtpServer = smtp.example.test\n\tsmtpUser = {user}\n\tsmtpPass = {mark(pw)}\n\tsmtpEncryption = tls",
            f'config.action_mailer.smtp_settings = {{\n  address: "smtp.example.test",\n  user_name: "{user}",\n'
            f'  password: "{mark(pw)}",\n  authentication: :plain\n}}',
            f"define( 'SMTP_PASS', '{mark(pw)}' );",
            f"  'mail_smtphost' => 'smtp.example.test',\n  'mail_smtpname' => '{user}',\n  'mail_smtppassword' => '{mark(pw)}',",
            f"gitlab_rails['smtp_user_name'] = \"{user}\"\ngitlab_rails['smtp_password'] = \"{mark(pw)}\"",
            f'[smtp]\nenabled = true\nhost = smtp.example.test:587\nuser = {user}\npassword = """{mark(pw)}"""',
            f"SMTP_SERVER=smtp.example.test\nSMTP_LOGIN={user}\nSMTP_PASSWORD={mark(pw)}",
        ]
    )


def mail_provider_keys(d: Draw) -> str:
    kind = d.r.randrange(4)
    if kind == 0:
        return f"MJ_APIKEY_PUBLIC={d.hex(32)}\nMJ_APIKEY_PRIVATE={mark(d.hex(32))}"
    if kind == 1:
        sec = "B" + d.token(43, 43, ALNUM + "+/")
        return f"SMTP credentials\nSMTP user name: AKIA{d.chars(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}\nSMTP password: {mark(sec)}"
    if kind == 2:
        return f"> X-Postmark-Server-Token: {mark(d.uuid())}"
    return f"SPARKPOST_API_KEY={mark(d.hex(40))}"


# -- look-alikes that must be kept: held-out kinds --


def la_lockfiles(d: Draw) -> str:
    return d.pick(
        [
            f'[[package]]\nname = "serde"\nversion = "1.0.215"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\n'
            f'checksum = "{mark(d.hex(64))}"',
            f'      "narHash": "{mark("sha256-" + d.b64(32))}",\n      "rev": "{mark(d.hex(40))}",',
            f"100644 blob {mark(d.hex(40))}\tREADME.md\n040000 tree {mark(d.hex(40))}\tsrc",
            f"$ b2sum release.tar.zst\n{mark(d.hex(128))}  release.tar.zst",
            f"REPOSITORY   TAG   IMAGE ID       CREATED\nacme/api     1.4   {mark(d.hex(12))}   2 days ago",
            f'"left-pad@npm:1.3.0":\n  version: 1.3.0\n  checksum: {mark("10c0/" + d.hex(128))}',
        ]
    )


def la_api_object_ids(d: Draw) -> str:
    ulid = d.chars(1, "01234567") + d.chars(25, CROCKFORD)
    return d.pick(
        [
            f'"customer": "{mark("cus_" + d.token(14, 14))}",\n"payment_intent": "{mark("pi_" + d.token(24, 24))}"',
            f"order {mark(ulid)} created",
            f'"id": "{mark("chatcmpl-" + d.token(29, 29))}", "object": "chat.completion"',
            f"posted to channel {mark('C0' + d.chars(9, UPPER_ALNUM))}",
            f"event_id={mark(d.token(27, 27))}",
            f"Sentry event {mark(d.hex(32))} captured",
        ]
    )


def la_ids_near_words(d: Draw) -> str:
    acct = d.chars(12, string.digits)
    fp = ":".join(d.hex(2) for _ in range(16))
    return d.pick(
        [
            f"AZURE_CLIENT_ID={mark(d.uuid())}\nAZURE_TENANT_ID={mark(d.uuid())}",
            f'{{"alg": "RS256", "kid": "{mark(d.hex(40))}", "typ": "JWT"}}',
            f'kms_key_id = "{mark(f"arn:aws:kms:eu-west-1:{acct}:key/{d.uuid()}")}"',
            f"key_file=~/.oci/oci_api_key.pem\nfingerprint={mark(fp)}\n"
            f"tenancy={mark('ocid1.tenancy.oc1..aaaaaaaa' + d.chars(52, LOWER_ALNUM))}",
            f'"key_id": "{mark(d.uuid())}",\n"key_name": "ci-runner"',
        ]
    )


def la_public_configs(d: Draw) -> str:
    ecdsa = b"\0\0\0\x13ecdsa-sha2-nistp256\0\0\0\x08nistp256\0\0\0\x41\x04" + d.raw(64)
    spki = bytes.fromhex("30820122300d06092a864886f70d01010105000382010f00") + d.raw(270)
    return d.pick(
        [
            f"untrusted comment: minisign public key {d.hex(16).upper()}\n{mark(base64.b64encode(b'Ed' + d.raw(40)).decode())}",
            f'default._domainkey IN TXT "v=DKIM1; k=rsa; p={mark(base64.b64encode(spki).decode())}"',
            f"{mark('git.example.test ecdsa-sha2-nistp256 ' + base64.b64encode(ecdsa).decode())}",
            f"ED25519 key fingerprint is {mark('SHA256:' + d.b64(32).rstrip('='))}.",
            f"pub   ed25519 2025-03-01 [SC]\n      {mark(d.hex(40).upper())}\nuid           [ultimate] Dev <dev@example.test>",
            f'Public-Key-Pins: pin-sha256="{mark(d.b64(32))}"; max-age=5184000',
        ]
    )


def la_chain(d: Draw) -> str:
    return d.pick(
        [
            f"send SOL to {mark(b58(d.raw(32)))}",
            f"tx {mark('0x' + d.hex(64))} confirmed in block {d.r.randint(21000000, 21999999)}",
            f"delegator: {mark(bech32('cosmos', d.raw(20)))}",
            f"deposit address {mark(bech32('ltc', d.raw(20), witness_version=0))}",
            f"TRC-20 address: {mark(base58check(TRON + d.raw(20)))}",
            f"ipfs://{mark('bafybei' + d.chars(52, 'abcdefghijklmnopqrstuvwxyz234567'))}",
        ]
    )


def la_doc_examples(d: Draw) -> str:
    return d.pick(
        [
            f"aws_access_key_id = {mark('AKIAI44QH8DHBEXAMPLE')}\naws_secret_access_key = {mark('je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY')}",
            f"GITLAB_TOKEN={mark('glpat-' + 'x' * 20)}",
            f"api_secret: {mark('<insert-secret-here>')}",
            f"Your key looks like {mark('sk_live_...')} (find it in the dashboard)",
            f'token = "{mark("TOKEN_GOES_HERE")}"',
            f"SENTRY_DSN={mark('https://examplePublicKey@o0.ingest.sentry.io/0')}",
        ]
    )


def la_masked(d: Draw) -> str:
    last4 = d.hex(4)
    return d.pick(
        [
            f"Secret key: {mark('sk-lf-' + '•' * 8 + last4)}",
            f"AWS_SECRET_ACCESS_KEY={mark('*' * 36 + d.chars(4, ALNUM))}",
            f'Parameters: {{"user"=>{{"email"=>"dev@example.test", "password"=>"{mark("[FILTERED]")}"}}}}',
            f"Data\n====\npassword:  {mark('16 bytes')}\nusername:  {mark('5 bytes')}",
            f"Personal access token {mark('ghp_' + '•' * 12 + last4)} (expires in 30 days)",
            f"api_token: {mark('<redacted>')}",
        ]
    )


def la_template_refs(d: Draw) -> str:
    return d.pick(
        [
            f"db_password: {mark('{{ vault_db_password }}')}",
            f"  password = {mark('data.aws_secretsmanager_secret_version.db.secret_string')}",
            f'"value": "{mark("@Microsoft.KeyVault(SecretUri=https://kv-prod.vault.azure.net/secrets/db-password/)")}"',
            f"MasterUserPassword: {mark('{{resolve:secretsmanager:prod/db:SecretString:password}}')}",
            f"Value: {mark('{{resolve:ssm-secure:/prod/api/token:3}}')}",
            f"API_TOKEN={mark('sm://acme-prod/api-token')}",
            f'"token": "{mark("${env:API_TOKEN}")}"',
            f"  - name: DB_URL\n    value: {mark('postgres://app:$(DB_PASSWORD)@db:5432/app')}",
        ]
    )


def la_ciphertext(d: Draw) -> str:
    kind = d.r.randrange(6)
    if kind == 0:
        return f"spec:\n  encryptedData:\n    password: {mark('AgB' + d.b64(d.r.randint(280, 420)))}"
    if kind == 1:
        return f"spring.datasource.password={mark('ENC(' + d.b64(32) + ')')}"
    if kind == 2:
        return f'{{"data": {{"ciphertext": "{mark("vault:v1:" + d.b64(48))}"}}}}'
    if kind == 3:
        raw = b"age-encryption.org/v1\n-> X25519 " + d.b64(32).encode() + b"\n" + d.raw(180)
        body = wrap64(base64.b64encode(raw).decode())
        return f"-----BEGIN AGE ENCRYPTED FILE-----\n{mark(body)}\n-----END AGE ENCRYPTED FILE-----"
    if kind == 4:
        return f"$ cat config/credentials.yml.enc\n{mark(d.b64(180) + '--' + d.b64(12) + '--' + d.b64(16))}"
    return f'{{\n    "KeyId": "arn:aws:kms:eu-west-1:{d.chars(12, string.digits)}:key/{d.uuid()}",\n    "CiphertextBlob": "{mark("AQICAHh" + d.b64(180))}"\n}}'


def la_b64_payloads(d: Draw) -> str:
    pdf = base64.b64encode(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n" + d.raw(d.r.randint(150, 300))).decode()
    kind = d.r.randrange(4)
    if kind == 0:
        content = "\\n".join(wrap(pdf, 60))
        return (
            f'{{\n  "name": "invoice.pdf",\n  "path": "docs/invoice.pdf",\n  "sha": "{d.hex(40)}",\n'
            f'  "size": {len(pdf) * 3 // 4},\n  "encoding": "base64",\n  "content": "{mark(content)}"\n}}'
        )
    if kind == 1:
        return (
            f'Content-Type: application/pdf; name="invoice.pdf"\nContent-Transfer-Encoding: base64\n\n'
            f"{mark(chr(10).join(wrap(pdf, 76)))}"
        )
    if kind == 2:
        zipped = base64.b64encode(b"PK\x03\x04\x14\0\0\0\x08\0" + d.raw(d.r.randint(120, 260))).decode()
        return f'"attachment": {{"filename": "export.zip", "data": "{mark(zipped)}"}}'
    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01" + d.raw(d.r.randint(150, 300))).decode()
    return f'"outputs": [{{"data": {{"image/jpeg": "{mark(jpeg)}"}}, "output_type": "display_data"}}]'


def la_prose_new(d: Draw) -> str:
    return d.pick(
        [
            mark("La pasvorto devas havi almenaŭ 12 signojn."),
            mark("Nenosiri lako limeisha muda wake."),
            mark("Lozinka je istekla, postavite novu."),
            mark("Slaptažodis turi būti bent 12 simbolių."),
            mark("Mae'r cyfrinair wedi dod i ben."),
            mark("Pasahitza aldatu behar duzu."),
            mark("I rotated the deploy key yesterday; the new one is in the vault."),
            mark("Never paste the token into chat, use the secret store instead."),
            mark("the API key only has read-only scope"),
        ]
    )


def la_config_keys(d: Draw) -> str:
    return d.pick(
        [
            mark("PasswordAuthentication no"),
            mark("token_endpoint_auth_method: client_secret_basic"),
            mark("grant_type=client_credentials"),
            mark("auth_type = password"),
            mark('"passwordless": true'),
            mark("secret_scanning: enabled"),
            mark("api_key_header: X-API-Key"),
            mark("session_cookie_secure = true"),
            mark("password_reset_timeout = 3600"),
            mark("JWT_ALGORITHM=RS256"),
        ]
    )


def specs() -> list[Spec]:
    out = [
        Spec("slot", "sql-statements", "secret", "sql", sql_statements),
        Spec("slot", "other-shells-and-platform-clis", "secret", "command", shell_other),
        Spec("slot", "code-literals", "secret", "file", code_literals),
        Spec("slot", "tables-and-csv", "secret", "file", tables),
        Spec("slot", "repr-and-logfmt", "secret", "log", repr_logfmt),
        Spec("slot", "query-string", "secret", "command", query_string),
        Spec("slot", "name-value-env", "secret", "file", name_value_env),
        Spec("slot", "positional-credential-files", "secret", "session", positional_files),
        Spec("slot", "auth-schemes", "secret", "command", auth_schemes),
        Spec("cookie", "exported-jars", "secret", "file", exported_jars),
        Spec("cookie", "copied-requests", "secret", "command", copied_requests),
        Spec("cookie", "browser-storage", "secret", "chat", browser_storage),
        Spec("token-near-word", "chat-handoff", "secret", "chat", chat_handoff),
        Spec("token-near-word", "log-lines", "secret", "log", log_lines),
        Spec("token-near-word", "code-comments", "secret", "file", comments),
        Spec("prefix-token", "devtools", "secret", "inline", devtools_prefixes),
        Spec("prefix-token", "ai-and-analytics", "secret", "inline", ai_analytics_prefixes),
        Spec("prefix-token", "messaging", "secret", "inline", messaging_prefixes),
        Spec("cloud-key", "russia-korea-japan", "secret", "session", cloud_ru_kr_jp),
        Spec("cloud-key", "china-other", "secret", "file", cloud_cn_other),
        Spec("cloud-key", "s3-compatible", "secret", "command", cloud_s3_compatible),
        Spec("cloud-key", "eu-hosting-and-ibm", "secret", "session", cloud_eu_hosting),
        Spec("private-key", "minisign-signify", "secret", "session", minisign_signify),
        Spec("private-key", "base64-of-pem", "secret", "file", base64_of_pem),
        Spec("private-key", "signing-key-files", "secret", "session", signing_key_files),
        Spec("private-key", "keystore-base64", "secret", "file", keystore_base64),
        Spec("private-key", "pem-indented", "secret", "file", pem_indented),
        Spec("private-key", "byte-arrays", "secret", "file", byte_arrays),
        Spec("split", "editor-gutter-wrap", "secret", "inline", editor_gutter),
        Spec("split", "shell-append", "secret", "command", shell_append),
        Spec("split", "concat-other-operators", "secret", "file", concat_other),
        Spec("split", "quoted-reply-wrap", "secret", "chat", quoted_reply),
        Spec("mail", "sync-and-mta-clients", "secret", "file", mail_sync_clients),
        Spec("mail", "app-settings", "secret", "file", mail_app_settings),
        Spec("mail", "provider-keys", "secret", "inline", mail_provider_keys),
        Spec("lookalike-hash", "lockfiles-and-object-ids", "lookalike", "file", la_lockfiles),
        Spec("lookalike-id", "api-object-ids", "lookalike", "log", la_api_object_ids),
        Spec("lookalike-id", "ids-near-credential-words", "lookalike", "file", la_ids_near_words),
        Spec("lookalike-public", "keys-fingerprints-pins", "lookalike", "inline", la_public_configs),
        Spec("lookalike-public", "chain-addresses-and-tx", "lookalike", "chat", la_chain),
        Spec("lookalike-example", "doc-examples", "lookalike", "file", la_doc_examples),
        Spec("lookalike-example", "masked-and-filtered", "lookalike", "log", la_masked),
        Spec("lookalike-reference", "template-and-platform-refs", "lookalike", "file", la_template_refs),
        Spec("lookalike-reference", "ciphertext", "lookalike", "file", la_ciphertext),
        Spec("lookalike-data", "base64-payloads", "lookalike", "inline", la_b64_payloads),
        Spec("lookalike-prose", "no-value-new-languages", "lookalike", "chat", la_prose_new),
        Spec("lookalike-prose", "config-keys-plain-values", "lookalike", "file", la_config_keys),
    ]
    out += [Spec("prose", lang, "secret", "chat", prose(t)) for lang, t in PROSE.items()]
    return out


# -- the transcript text around a held-out snippet --

_PROMPTS = [
    "dev@laptop:~/src/api$ ",
    "ubuntu@ip-10-0-3-17:~$ ",
    "❯ ",
    "PS C:\\work\\api> ",
    "[ops@bastion ~]$ ",
]
_FILES = [
    "deploy/values.yaml",
    "config/app.toml",
    ".env.staging",
    "src/settings.py",
    "infra/main.tf",
    "notes.md",
]
_SAY = [
    "I'll read the config to see which credentials the job uses.",
    "Let me look at what the script actually sends.",
    "The failing step is the upload; checking its settings.",
    "Found the file the service loads at start-up.",
]
_LOGS = [
    "2026-12-01T08:15:22.104Z INFO  http: listening on :8080",
    "2026-12-01T08:15:22.311Z WARN  pool: slow acquire (212ms)",
    "2026-12-01T08:15:23.002Z INFO  worker: 3 jobs queued",
]


def _json_string(snippet: str) -> str:
    """``snippet`` JSON-escaped, marks kept where they were."""
    out: list[str] = []
    for part in snippet.replace(MARK_CLOSE, MARK_OPEN).split(MARK_OPEN):
        out.append(json.dumps(part, ensure_ascii=False)[1:-1])
    text, i = "", 0
    for ch in snippet:
        if ch in (MARK_OPEN, MARK_CLOSE):
            text += out[i] + ch
            i += 1
    return text + out[i]


def _numbered(start: int) -> Iterator[str]:
    n = start
    while True:
        yield f"{n:>6}\t"
        n += 1


def _constant(prefix: str) -> Iterator[str]:
    while True:
        yield prefix


def _frame_shell(draw: Draw, snippet: str, kind: Frame, prompt: str) -> str:
    """A command line after a prompt (``command``), or a session whose ``$ `` lines get the prompt
    (``session``): plain, in a console fence, or as a JSON tool call or result."""
    r = draw.r
    if kind == "session":
        text = "\n".join(prompt + line[2:] if line.startswith("$ ") else line for line in snippet.split("\n"))
        style = r.randrange(3)
        if style == 0:
            return f"{text}\n{prompt}"
        if style == 1:
            return f"```console\n{text}\n```\n{r.choice(_SAY)}"
        return f'{{"output": "{_json_string(text)}", "exit_code": 0}}'
    style = r.randrange(3)
    if style == 0:
        return f"{prompt}{snippet}\n{prompt}"
    if style == 1:
        body = _json_string(snippet).replace("\\", "\\\\").replace('"', '\\"')
        return f'{{"type":"function_call","name":"shell","arguments":"{{\\"command\\":\\"{body}\\"}}"}}'
    return f"{r.choice(_SAY)}\n\n```console\n{prompt}{snippet}\n```"


def _frame_file(draw: Draw, snippet: str, prompt: str) -> str:
    """A file printed by ``cat``, read with line numbers, changed in a diff, or read by a tool."""
    r = draw.r
    name = r.choice(_FILES)
    style = r.randrange(4)
    if style == 0:
        return f"{prompt}cat {name}\n{snippet}\n{prompt}"
    if style == 1:
        start = r.randint(1, 60)
        return prefixed(snippet, _numbered(start))
    if style == 2:
        n = snippet.count("\n") + 1
        head = (
            f"diff --git a/{name} b/{name}\nindex {draw.hex(7)}..{draw.hex(7)} 100644\n--- a/{name}\n+++ b/{name}\n"
            f"@@ -{r.randint(3, 40)},2 +{r.randint(3, 40)},{n + 2} @@\n context line\n"
        )
        return head + prefixed(snippet, _constant("+")) + "\n context line"
    lines = snippet.count("\n") + 1
    return f'{{"file_path": "/home/dev/src/api/{name}", "content": "{_json_string(snippet)}", "numLines": {lines}}}'


def frame(draw: Draw, snippet: str, kind: Frame) -> str:
    """``snippet`` as it sits in a held-out transcript: a shell session with a prompt, a diff, a
    file read with line numbers, a JSON tool result, a log excerpt, a SQL console, or chat."""
    r = draw.r
    prompt = r.choice(_PROMPTS)
    if kind == "chat":
        lead = r.choice(["", "hey, ", "so ", "small thing: ", "context: "])
        tail = r.choice(
            [
                "",
                "\n\ncan you wire that in?",
                "\n\nnot sure why it still fails",
                "\n\n(for the demo tomorrow)",
            ]
        )
        return f"{lead}{snippet}{tail}"
    if kind == "sql":
        db = r.choice(["postgres=# ", "mysql> ", "SQL> ", "1> "])
        done = r.choice(
            ["CREATE ROLE", "Query OK, 0 rows affected (0.01 sec)", "ALTER ROLE", "User created."]
        )
        return f"{db}{snippet}\n{done}"
    if kind == "log":
        logs = r.sample(_LOGS, 2)
        return f"{logs[0]}\n{snippet}\n{logs[1]}"
    if kind in ("command", "session"):
        return _frame_shell(draw, snippet, kind, prompt)
    if kind == "file":
        return _frame_file(draw, snippet, prompt)
    style = r.randrange(3)  # inline
    if style == 0:
        return f"{r.choice(_SAY)}\n{snippet}"
    if style == 1:
        return f'{{"stdout": "{_json_string(snippet)}", "stderr": "", "exit_code": 0}}'
    return f"{prompt}./scripts/show-config.sh\n{snippet}\n{prompt}"
