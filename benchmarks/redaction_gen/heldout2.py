"""The second held-out half, LOOKED AT, now development ("dev-4"): measured once with ``--heldout``
on 2026-12-07 (figures in docs/redaction-measured.md), so it no longer measures generalisation; a
new held-out half has to be written (by someone who does not read the rules) before rules are tuned.

Written after ``heldout.py`` had been measured (its figures read), so that it became development
material ("dev-3") and a split nobody has measured against while writing rules had to exist again.
Its classes were designed from what developers paste into agent sessions, not from memd's rules:
its author read ``dev.py``, ``eval.py`` and ``heldout.py`` only to stay clear of them, never
``pipeline/redaction`` or its tests, and never ran memd's redactor on it. None of its syntaxes,
secret-ish names, languages, key containers, token prefixes, cloud formats, ways of splitting a
value or look-alike kinds is held as a literal shape by those three files. Every family of issue 33
is covered, in transcript text of its own (agent tool renderings, SEARCH/REPLACE edit blocks,
tool-call XML, tmux and cmd consoles, REPLs, container and journal logs, chat exports), with its
own seed. Measure it once, at the end (``generalise_bench.py --heldout``); once its figures have
been read, relabel it as development and write a new one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import string
from collections.abc import Callable, Iterator

from benchmarks.redaction_gen import (
    ALNUM,
    URLSAFE,
    Draw,
    Frame,
    Spec,
    b64url_json,
    base58check,
    bech32,
    mark,
    nth,
    prefixed,
    spell,
    wrap64,
)

HALF = "heldout2"
SEED = 0x2B0B_7A11  # neither the development seed nor dev-3's
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
Maker = Callable[[], str]

# -- secret-ish names (this half's spellings; none of them in dev.py, eval.py or heldout.py) --

NAMES = [
    ["license", "key"],
    ["oauth", "secret"],
    ["access", "secret"],
    ["ingest", "key"],
    ["vault", "token"],
    ["registry", "password"],
    ["keystore", "password"],
    ["sa", "password"],
    ["otp", "secret"],
    ["aes", "key"],
    ["pswd"],
    ["pw"],
    ["id", "token"],
    ["cookie", "secret"],
    ["master", "password"],
    ["unlock", "code"],
]


def name(d: Draw, *styles: str) -> str:
    return spell(d.pick(NAMES), d.pick(styles))


def one(d: Draw, *makers: Maker) -> str:
    """One of ``makers``, called: only the chosen one draws its values."""
    return d.pick(makers)()


def plain_pw(d: Draw) -> str:
    """A password that needs no quoting or escaping in a URL, a DSN or a shell word."""
    return "".join(c if c.isalnum() else d.pick("-_.") for c in d.password())


def secretish(d: Draw) -> str:
    """A value for a slot: a password, a random token or hex, never needing a shell quote."""
    return one(d, lambda: plain_pw(d), lambda: d.token(24, 44), lambda: d.hex(d.pick([32, 48, 64])))


def jwt(d: Draw, claims: dict[str, object]) -> str:
    head = b64url_json({"alg": d.pick(["HS256", "RS256", "ES256"]), "typ": "JWT"})
    return f"{head}.{b64url_json(claims)}.{d.b64url(d.pick([32, 64]))}"


def b32(raw: bytes) -> str:
    return base64.b32encode(raw).decode().rstrip("=")


def crc16_xmodem(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def strkey(version: int, payload: bytes) -> str:
    """Stellar's StrKey: version byte, payload, CRC16-XModem (little-endian), in base 32."""
    body = bytes([version]) + payload
    return b32(body + crc16_xmodem(body).to_bytes(2, "little"))


def onion_v3(pubkey: bytes) -> str:
    check = hashlib.sha3_256(b".onion checksum" + pubkey + b"\x03").digest()[:2]
    return b32(pubkey + check + b"\x03").lower() + ".onion"


# -- values in credential slots, by syntax --


def package_auth_files(d: Draw) -> str:
    """Credential files of package managers and registries, as ``cat`` prints them."""
    pw, user = plain_pw(d), d.user()
    return one(
        d,
        lambda: (
            f"machine {d.pick(['api.heroku.com', 'git.example.test', 'artifacts.example.test'])}\n"
            f"  login {user}\n  password {mark(pw)}"
        ),
        lambda: (
            f"registry=https://npm.example.test/\n//npm.example.test/:_authToken={mark(d.token(36, 36))}\n"
            "always-auth=true"
        ),
        lambda: (
            '{\n\t"auths": {\n\t\t"registry.example.test:5000": {\n\t\t\t"auth": "'
            + mark(base64.b64encode(f"{user}:{pw}".encode()).decode())
            + '"\n\t\t}\n\t},\n\t"credsStore": ""\n}'
        ),
        lambda: f'[registry]\ntoken = "{mark("cio" + d.token(32, 32))}"',
        lambda: (
            '{\n    "http-basic": {\n        "repo.example.test": {\n            "username": "'
            + user
            + '",\n            "password": "'
            + mark(pw)
            + '"\n        }\n    }\n}'
        ),
        lambda: (
            f"npmScopes:\n  acme:\n    npmAlwaysAuth: true\n    npmAuthToken: {mark(d.token(36, 36, URLSAFE))}\n"
            f'    npmRegistryServer: "https://npm.example.test"'
        ),
        lambda: f"BUNDLE_GEMS__EXAMPLE__TEST={user}:{mark(pw)}",
        lambda: (
            f"signing.keyId=24875D73\nsigning.password={mark(pw)}\nsigning.secretKeyRingFile=/home/ci/.gnupg/secring.gpg\n"
            f"ossrhUsername={user}\nossrhPassword={mark(plain_pw(d))}"
        ),
        lambda: (
            f"git.example.test:\n    user: {user}\n    oauth_token: {mark(d.token(40, 40))}\n    git_protocol: https"
        ),
        lambda: f"---\n:rubygems_api_key: {mark(d.hex(32))}",
    )


def ops_command_args(d: Draw) -> str:
    """Secrets handed to operations tools on their command lines, in each tool's own syntax."""
    pw, v, user, host = plain_pw(d), secretish(d), d.user(), d.host()
    return one(
        d,
        lambda: f"docker run -d --name db -e MYSQL_ROOT_PASSWORD={mark(pw)} -p 3306:3306 mysql:8.4",
        lambda: f"kubectl create secret generic billing --from-literal={name(d, 'kebab')}={mark(v)} -n prod",
        lambda: (
            f"helm upgrade --install pg oci://registry.example.test/charts/postgresql --set auth.postgresPassword={mark(pw)}"
        ),
        lambda: f"vault kv put secret/billing {name(d, 'snake')}={mark(v)}",
        lambda: (
            f"aws ssm put-parameter --name /prod/{name(d, 'kebab')} --type SecureString --value '{mark(v)}'"
        ),
        lambda: f"redis-cli -h {host} -a '{mark(pw)}' --no-auth-warning ping",
        lambda: f'ansible-playbook site.yml -i hosts.ini -e "ansible_become_password={mark(pw)}"',
        lambda: f"poetry config http-basic.internal {user} {mark(pw)}",
        lambda: f"openssl pkcs12 -export -in site.crt -inkey site.key -out site.p12 -passout pass:{mark(pw)}",
        lambda: f"7z a -p{mark(pw)} -mhe=on backup-2026-12.7z ./exports",
        lambda: f"net use Z: \\\\nas\\projects /user:CORP\\{user} {mark(pw)} /persistent:no",
        lambda: (
            f"sudo mount -t cifs //nas/backup /mnt/backup -o username={user},password={mark(pw)},vers=3.0"
        ),
        lambda: (
            f"wget --http-user={user} --http-password={mark(pw)} https://artifacts.example.test/build.tar.gz"
        ),
        lambda: (
            f"ldapsearch -x -H ldaps://{host} -D 'cn={user},dc=corp,dc=example' -w '{mark(pw)}' '(uid=*)'"
        ),
    )


def language_literals(d: Draw) -> str:
    """A secret-ish name given a literal in one of the languages and DSLs not seen elsewhere."""
    parts = d.pick(NAMES)
    up, snake, camel = spell(parts, "UPPER"), spell(parts, "snake"), spell(parts, "camel")
    pascal, kebab = spell(parts, "pascal"), spell(parts, "kebab")
    v, pw = secretish(d), plain_pw(d)
    return one(
        d,
        lambda: (
            f"FROM node:22-alpine\nWORKDIR /app\nENV NODE_ENV=production \\\n    {up}={mark(v)}\nCOPY . ."
        ),
        lambda: f'ARG {up}="{mark(v)}"\nRUN ./configure --quiet',
        lambda: f"{up} ?= {mark(v)}\n\ndeploy:\n\t./scripts/deploy.sh",
        lambda: f'object Config {{\n    const val {up} = "{mark(v)}"\n}}',
        lambda: f"class Env {{\n  static const String {camel} = '{mark(v)}';\n}}",
        lambda: f'val {camel} = "{mark(v)}"',
        lambda: f'Sys.setenv({up} = "{mark(v)}")',
        lambda: f'ENV["{up}"] = "{mark(v)}"',
        lambda: f"my ${snake} = '{mark(v)}';",
        lambda: f'{{:db/host "{d.host()}"\n :db/{kebab} "{mark(v)}"}}',
        lambda: f'credentials {{\n  {snake}: "{mark(v)}"\n}}',
        lambda: f"{{\n  {snake}:: '{mark(v)}',\n  region: 'eu-west-1',\n}}",
        lambda: f"environment {{\n    {up} = '{mark(v)}'\n}}",
        lambda: f"param {camel} string = '{mark(v)}'",
        lambda: f'Dim {pascal} As String = "{mark(v)}"',
        lambda: f"[web]\nweb1 ansible_host=10.0.4.11 ansible_user={d.user()} ansible_password={mark(pw)}",
        lambda: (
            f'Vagrant.configure("2") do |config|\n  config.ssh.username = "vagrant"\n  config.ssh.password = "{mark(pw)}"\nend'
        ),
    )


def url_pw(d: Draw) -> str:
    return "".join(c for c in plain_pw(d) if c != ".")


def urls_and_dsns(d: Draw) -> str:
    """Userinfo of device, proxy and database schemes, and DSNs that are not URLs."""
    pw, user, host = url_pw(d), d.user(), d.host()
    return one(
        d,
        lambda: f"ffplay 'rtsp://{user}:{mark(pw)}@192.168.1.64:554/Streaming/Channels/101'",
        lambda: f"ALL_PROXY=socks5h://{user}:{mark(pw)}@proxy.corp.example:1080",
        lambda: f"register => sip:{d.chars(4, string.digits)}:{mark(pw)}@pbx.example.test",
        lambda: f'driver = GraphDatabase.driver("bolt://{user}:{mark(pw)}@{host}:7687")',
        lambda: f"CLICKHOUSE_URL=clickhouse://{user}:{mark(pw)}@{host}:9000/analytics",
        lambda: f"open vnc://:{mark(pw)}@{host}:5900",
        lambda: f'ws = websocket.create_connection("wss://{user}:{mark(pw)}@stream.example.test/feed")',
        lambda: f'db, err := sql.Open("sqlserver", "sqlserver://{user}:{mark(pw)}@{host}:1433?database=app")',
        lambda: f'dsn := "{user}:{mark(pw)}@tcp({host}:3306)/app?parseTime=true"',
        lambda: f"sqlplus system/{mark(pw)}@//{host}:1521/XEPDB1",
        lambda: f"url=jdbc:oracle:thin:{user}/{mark(pw)}@{host}:1521:ORCL",
        lambda: f'psql "host={host} port=5432 dbname=app user={user} password={mark(pw)} sslmode=require"',
        lambda: (
            f"SQLALCHEMY_DATABASE_URI=oracle+oracledb://{user}:{mark(pw)}@{host}:1521/?service_name=ORCLPDB1"
        ),
    )


def xml_and_agent_configs(d: Draw) -> str:
    """XML attributes and elements of server configs, and HCL of agents and variable files."""
    pw, user = plain_pw(d), d.user()
    return one(
        d,
        lambda: (
            f'<tomcat-users>\n  <role rolename="manager-gui"/>\n  <user username="{user}" password="{mark(pw)}" '
            'roles="manager-gui,admin-gui"/>\n</tomcat-users>'
        ),
        lambda: (
            f'<Resource name="jdbc/app" auth="Container" type="javax.sql.DataSource"\n          username="{user}" '
            f'password="{mark(pw)}"\n          url="jdbc:postgresql://{d.host()}:5432/app"/>'
        ),
        lambda: (
            f"<Server>\n\t<Host>{d.host()}</Host>\n\t<Port>21</Port>\n\t<User>{user}</User>\n"
            f'\t<Pass encoding="base64">{mark(base64.b64encode(pw.encode()).decode())}</Pass>\n</Server>'
        ),
        lambda: (
            '<!DOCTYPE properties SYSTEM "http://java.sun.com/dtd/properties.dtd">\n<properties>\n'
            f'  <entry key="ldap.url">ldaps://{d.host()}</entry>\n  <entry key="app.{name(d, "dot")}">{mark(secretish(d))}</entry>\n'
            "</properties>"
        ),
        lambda: (
            f'datacenter = "eu-west"\ndata_dir = "/opt/consul"\nencrypt = "{mark(d.b64(32))}"\nretry_join = ["10.0.1.10"]'
        ),
        lambda: (
            f'acl {{\n  enabled = true\n  tokens {{\n    initial_management = "{mark(d.uuid())}"\n  }}\n}}'
        ),
        lambda: (
            f'vault {{\n  enabled = true\n  address = "https://vault.example.test:8200"\n  token   = "{mark("s." + d.token(24, 24))}"\n}}'
        ),
        lambda: f'# prod.tfvars\nregion = "eu-west-1"\n{name(d, "snake")} = "{mark(secretish(d))}"',
    )


def vendor_headers(d: Draw) -> str:
    """Vendors' own request headers and authorization schemes carrying a key or a ticket."""
    rapid = d.hex(18) + "msh" + d.hex(15) + "p1" + d.hex(4) + "jsn" + d.hex(12)
    return one(
        d,
        lambda: (
            f'curl -X POST https://api.datadoghq.eu/api/v1/series -H "DD-API-KEY: {mark(d.hex(32))}" '
            f'-H "DD-APPLICATION-KEY: {mark(d.hex(40))}" -d @series.json'
        ),
        lambda: (
            f"curl 'http://plex.lan:32400/library/sections' -H 'X-Plex-Token: {mark(d.token(20, 20, URLSAFE))}'"
        ),
        lambda: (
            f"> GET /v1/quotes HTTP/2\n> X-RapidAPI-Host: quotes.p.rapidapi.com\n> X-RapidAPI-Key: {mark(rapid)}"
        ),
        lambda: (
            f"curl -H 'Circle-Token: {mark('CCIPAT_' + d.token(22, 22) + '_' + d.hex(40))}' https://circleci.com/api/v2/me"
        ),
        lambda: f"> PUT /v1/secret/data/app HTTP/1.1\n> X-Vault-Token: {mark('s.' + d.token(24, 24))}",
        lambda: (
            f"curl https://api.honeycomb.io/1/events/prod -H 'X-Honeycomb-Team: {mark(d.token(22, 22))}' -d '{{}}'"
        ),
        lambda: (
            f"> GET /api/v1/users?limit=25 HTTP/1.1\n> Authorization: SSWS {mark('00' + d.token(40, 40, URLSAFE))}"
        ),
        lambda: (
            f"curl -k https://splunk.example.test:8088/services/collector -H 'Authorization: Splunk {mark(d.uuid())}'"
        ),
        lambda: (
            "> Authorization: ApiKey "
            + mark(base64.b64encode(f"{d.token(20, 20)}:{d.token(22, 22, URLSAFE)}".encode()).decode())
        ),
        lambda: f"> Authorization: Negotiate {mark('YII' + d.b64(600))}",
    )


# -- cookies and session values --


def session_cookie(d: Draw) -> tuple[str, str]:
    """A session cookie of a product none of the other splits names, with its value's shape."""
    return one_pair(
        d,
        lambda: ("__Secure-1PSID", "g.a000" + d.token(140, 150, URLSAFE)),
        lambda: ("sp_dc", "AQ" + d.token(150, 170, URLSAFE)),
        lambda: ("li_at", "AQEDA" + d.token(140, 150, URLSAFE)),
        lambda: ("auth_token", d.hex(40)),
        lambda: (
            "cf_clearance",
            f"{d.token(43, 43, URLSAFE)}-{d.chars(10, string.digits)}-1.2.1.1-{d.token(150, 180, URLSAFE)}",
        ),
        lambda: ("grafana_session", d.hex(32)),
        lambda: ("_oauth2_proxy", f"{d.b64url(96)}|{d.chars(10, string.digits)}|{d.b64url(32)}="),
        lambda: ("authelia_session", d.token(32, 32)),
        lambda: ("PLAY_SESSION", jwt(d, {"data": {"uid": d.chars(6, string.digits)}, "nbf": 1796000000})),
        lambda: ("ci_session", d.chars(40, LOWER_ALNUM)),
        lambda: ("jupyterhub-session-id", d.hex(32)),
        lambda: (
            f"remember_web_{d.hex(40)}",
            d.b64(160).replace("=", "%3D").replace("+", "%2B").replace("/", "%2F"),
        ),
        lambda: ("__session", jwt(d, {"sid": "sess_" + d.token(27, 27), "exp": 1796000000})),
    )


def one_pair(d: Draw, *makers: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    return d.pick(makers)()


def cookie_captures(d: Draw) -> str:
    """A session cookie where a browser database, an access log, a URL or a downloader shows it."""
    n, v = session_cookie(d)
    return one(
        d,
        lambda: (
            "sqlite3 -separator '|' cookies.sqlite \"select host, name, value from moz_cookies where host like "
            f"'%example%'\"\n.app.example.test|{n}|{mark(v)}\n.example.test|_ga|GA1.1.{d.chars(9, string.digits)}"
        ),
        lambda: (
            f'203.0.113.9 - - [07/Dec/2026:10:42:01 +0000] "GET /dashboard HTTP/1.1" 200 5123 "-" '
            f'"Mozilla/5.0 (X11; Linux x86_64)" "{n}={mark(v)}; theme=dark"'
        ),
        lambda: f"GET /shop/cart;jsessionid={mark(d.hex(32).upper())}?item=42 HTTP/1.1",
        lambda: f'yt-dlp --add-header "Cookie: {n}={mark(v)}" https://video.example.test/watch/8812',
        lambda: (
            "$session = New-Object Microsoft.PowerShell.Commands.WebRequestSession\n"
            f'$session.Cookies.Add((New-Object System.Net.Cookie("{n}", "{mark(v)}", "/", "app.example.test")))\n'
            'Invoke-WebRequest -UseBasicParsing -Uri "https://app.example.test/api/me" -WebSession $session'
        ),
        lambda: (
            f"    > GET /api/projects HTTP/1.1\n    > Host: app.example.test\n    > cookie: {n}={mark(v)}"
        ),
    )


def cookie_code(d: Draw) -> str:
    """A session cookie set in code: test clients, scrapers, load tests and servers."""
    n, v = session_cookie(d)
    return one(
        d,
        lambda: f'req.AddCookie(&http.Cookie{{Name: "{n}", Value: "{mark(v)}"}})',
        lambda: f's = requests.Session()\ns.cookies.set("{n}", "{mark(v)}", domain="app.example.test")',
        lambda: f'const res = await request(app)\n  .get("/api/me")\n  .set("Cookie", ["{n}={mark(v)}"]);',
        lambda: f'const jar = http.cookieJar();\njar.set("https://app.example.test", "{n}", "{mark(v)}");',
        lambda: f'Cookie session = new Cookie("{n}", "{mark(v)}");\nsession.setPath("/");',
        lambda: (
            f'handler.CookieContainer.Add(new Uri("https://app.example.test"), new Cookie("{n}", "{mark(v)}"));'
        ),
        lambda: f'page.driver.browser.manage.add_cookie(name: "{n}", value: "{mark(v)}")',
        lambda: f"scrapy.Request(url, cookies={{'{n}': '{mark(v)}'}}, callback=self.parse)",
    )


# -- random-looking tokens near credential words --


def near(d: Draw) -> str:
    return one(d, lambda: d.token(28, 44), lambda: d.hex(d.pick([40, 48])), lambda: d.token(30, 48, URLSAFE))


def cli_prompts(d: Draw) -> str:
    """Interactive setup wizards echoing what was pasted at their prompt."""
    v = near(d)
    tool = d.pick(["acme-cli init", "npx create-acme-app", "./setup.sh", "relay login"])
    return one(
        d,
        lambda: f"{tool}\n? Enter your API token › {mark(v)}\n✔ Saved to ~/.config/acme/config.json",
        lambda: f"{tool}\nPaste your license key: {mark(v)}\nLicense activated for 5 seats.",
        lambda: f"{tool}\nIngest key [none]: {mark(v)}\nRegion [eu]: eu",
        lambda: f"{tool}\n✔ Vault token … {mark(v)}\n✔ Namespace … admin",
        lambda: f"{tool}\nAccess secret: {mark(v)}\nRepeat for confirmation: {mark(v)}",
        lambda: f"{tool}\nPlease enter your OTP secret: {mark(d.chars(32, B32))}\nTwo-factor enabled.",
        lambda: f"{tool}\nEnter the deploy credential for {d.host()}: {mark(v)}\nConnected.",
    )


def commits_and_tickets(d: Draw) -> str:
    """Tokens named in commit messages, tickets, scanner alerts and review comments."""
    v = near(d)
    return one(
        d,
        lambda: (
            f"commit {d.hex(40)}\nAuthor: Dev <dev@example.test>\nDate:   Mon Dec 7 09:12:44 2026 +0000\n\n"
            f"    Remove hard-coded ingest key {mark(v)} from settings"
        ),
        lambda: (
            f"SEC-{d.r.randint(100, 9999)}: Rotate leaked webhook credential {mark(v)} (found in build logs)"
        ),
        lambda: (
            f"🔎 Secret scanner found a Generic High Entropy Secret in src/client.ts:\n    secret: {mark(v)}"
        ),
        lambda: (
            f"nit: this literal looks like a real access secret, `{mark(v)}` — can it come from the vault?"
        ),
        lambda: f"# TODO(ana): swap this OAuth secret ({mark(v)}) for the keychain lookup",
        lambda: f"- Rotated the staging vault token; new value {mark(v)}",
    )


# -- known prefixes' bodies: families none of the other splits hold --


def ai_and_devinfra(d: Draw) -> str:
    def token() -> str:
        return one(
            d,
            lambda: "sk-or-v1-" + d.hex(64),
            lambda: "xai-" + d.token(80, 80),
            lambda: "nvapi-" + d.token(64, 64, URLSAFE),
            lambda: "pcsk_" + d.token(5, 5) + "_" + d.token(63, 63),
            lambda: "lsv2_" + d.pick(["pt", "sk"]) + "_" + d.hex(32) + "_" + d.hex(10),
            lambda: "tvly-" + d.pick(["", "dev-"]) + d.token(32, 32),
            lambda: "fc-" + d.hex(32),
            lambda: "dckr_pat_" + d.token(27, 27, URLSAFE),
            lambda: (
                "sntrys_"
                + b64url_json(
                    {
                        "iat": 1796000000,
                        "url": "https://sentry.io",
                        "region_url": "https://de.sentry.io",
                        "org": "acme",
                    }
                )
                + "_"
                + d.token(43, 43, URLSAFE)
            ),
            lambda: "sntryu_" + d.hex(64),
            lambda: "nfp_" + d.token(36, 36),
            lambda: "rnd_" + d.token(32, 32),
            lambda: "NRAK-" + d.chars(27, UPPER_ALNUM),
            lambda: f"dt0c01.{d.chars(24, UPPER_ALNUM)}.{d.chars(64, UPPER_ALNUM)}",
            lambda: "bkua_" + d.hex(40),
            lambda: "pscale_tkn_" + d.token(43, 43, URLSAFE),
            lambda: "sbp_" + d.hex(40),
            lambda: "oy2" + d.chars(43, LOWER_ALNUM),
            lambda: "rubygems_" + d.hex(48),
            lambda: (
                "ops_"
                + b64url_json(
                    {
                        "signInAddress": "my.1password.com",
                        "email": f"{d.chars(13, LOWER_ALNUM)}@1passwordserviceaccounts.com",
                        "srpX": d.hex(64),
                        "muk": {"k": d.b64url(32), "kty": "oct"},
                        "secretKey": "A3-" + d.chars(26, UPPER_ALNUM),
                    }
                )
            ),
            lambda: "fm2_" + d.b64(180).rstrip("=") + ",fm2_" + d.b64(120).rstrip("="),
        )

    v = token()
    return d.pick(
        [f"{mark(v)}", f"→ {mark(v)}", f'client = Client("{mark(v)}")', f"echo '{mark(v)}' | pbcopy"]
    )


def consumer_and_payments(d: Draw) -> str:
    def token() -> str:
        user_id = str(d.r.randint(10**17, 10**18))
        return one(
            d,
            lambda: "ya29." + d.token(160, 200, URLSAFE),
            lambda: "1//0" + d.token(2, 2) + d.token(96, 100, URLSAFE),
            lambda: "EAA" + d.pick(["B", "G", "J"]) + d.token(170, 190),
            lambda: d.pick(["sq0atp-", "sq0csp-"]) + d.token(22, 43, URLSAFE),
            lambda: "access-production-" + d.uuid(),
            lambda: "whsec_" + d.token(32, 32),
            lambda: "figd_" + d.token(40, 40, URLSAFE),
            lambda: "ntn_" + d.chars(11, string.digits) + d.token(35, 35),
            lambda: (
                "sk.eyJ"
                + b64url_json({"u": d.user(), "a": "cl" + d.chars(23, LOWER_ALNUM)})[3:]
                + "."
                + d.token(22, 22, URLSAFE)
            ),
            lambda: f"2/{d.chars(16, string.digits)}/{d.chars(16, string.digits)}:{d.hex(32)}",
            lambda: f"{d.r.randint(10**8, 8 * 10**9)}:AA{d.token(33, 33, URLSAFE)}",
            lambda: (
                base64.b64encode(user_id.encode()).decode().rstrip("=")
                + "."
                + d.token(6, 6, URLSAFE)
                + "."
                + d.token(38, 38, URLSAFE)
            ),
        )

    v = token()
    return d.pick([f"{mark(v)}", f"use {mark(v)} for the sandbox run", f"'{mark(v)}'", f"[{mark(v)}]"])


def webhook_urls(d: Draw) -> str:
    """Incoming-webhook URLs whose path or query is the secret."""
    return one(
        d,
        lambda: (
            f"https://hooks.slack.com/services/T{d.chars(10, UPPER_ALNUM)}/B{d.chars(10, UPPER_ALNUM)}/{mark(d.token(24, 24))}"
        ),
        lambda: (
            f"https://discord.com/api/webhooks/{d.r.randint(10**17, 10**18)}/{mark(d.token(68, 68, URLSAFE))}"
        ),
        lambda: (
            f"https://acme.webhook.office.com/webhookb2/{d.uuid()}@{d.uuid()}/IncomingWebhook/"
            f"{mark(d.hex(32) + '/' + d.uuid() + '/V2' + d.token(43, 43, URLSAFE))}"
        ),
        lambda: (
            f"https://chat.googleapis.com/v1/spaces/AAAA{d.token(7, 7, URLSAFE)}/messages?"
            f"key=AIzaSy{d.token(33, 33, URLSAFE)}&token={mark(d.token(43, 43, URLSAFE))}"
        ),
        lambda: f"https://maker.ifttt.com/trigger/deploy_done/with/key/{mark(d.token(22, 22, URLSAFE))}",
        lambda: f"https://chat.example.test/hooks/{mark(d.chars(26, LOWER_ALNUM))}",
        lambda: (
            f"curl -X POST https://hooks.zapier.com/hooks/catch/{d.chars(8, string.digits)}/{mark(d.chars(7, LOWER_ALNUM))}/ -d @event.json"
        ),
    )


# -- cloud keys: formats none of the other splits hold --


def sa_and_principals(d: Draw) -> str:
    """Service-account JSON, service principals and HMAC/bearer keys as the cloud tools print them."""

    def gcp() -> str:
        der = bytes.fromhex(
            "308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100"
        ) + d.raw(1180)
        body = "\\n".join(wrap64(base64.b64encode(der).decode()).split("\n"))
        proj = f"acme-{d.chars(6, LOWER_ALNUM)}"
        return (
            f'{{\n  "type": "service_account",\n  "project_id": "{proj}",\n  "private_key_id": "{d.hex(40)}",\n'
            f'  "private_key": "-----BEGIN PRIVATE KEY-----\\n{mark(body)}\\n-----END PRIVATE KEY-----\\n",\n'
            f'  "client_email": "deployer@{proj}.iam.gserviceaccount.com",\n  "client_id": "{d.chars(21, string.digits)}"\n}}'
        )

    def azure_secret() -> str:
        return d.token(3, 3, URLSAFE + "~.") + d.pick(string.digits) + "Q~" + d.token(31, 34, URLSAFE + "~.")

    return one(
        d,
        gcp,
        lambda: (
            f'{{\n  "appId": "{d.uuid()}",\n  "displayName": "gh-deployer",\n  "password": "{mark(azure_secret())}",\n'
            f'  "tenant": "{d.uuid()}"\n}}'
        ),
        lambda: f"az login --service-principal -u {d.uuid()} -p '{mark(azure_secret())}' --tenant {d.uuid()}",
        lambda: f'$env:ARM_CLIENT_SECRET = "{mark(azure_secret())}"',
        lambda: (
            f"gsutil hmac create deployer@acme.iam.gserviceaccount.com\nAccess ID:   {mark('GOOG1E' + d.chars(55, UPPER_ALNUM))}\n"
            f"Secret:      {mark(d.b64(30))}"
        ),
        lambda: (
            "export AWS_BEARER_TOKEN_BEDROCK="
            + mark(
                "ABSK"
                + base64.b64encode(
                    b"BedrockAPIKey-"
                    + d.token(4, 4).encode()
                    + b"-at-"
                    + d.chars(12, string.digits).encode()
                    + b":"
                    + d.b64(42).encode()
                ).decode()
            )
        ),
    )


def azure_connection_keys(d: Draw) -> str:
    """Keys inside Azure messaging, function and configuration connection strings and headers."""
    ns = f"acme-{d.chars(5, LOWER_ALNUM)}"
    return one(
        d,
        lambda: (
            f"Endpoint=sb://{ns}.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={mark(d.b64(32))}"
        ),
        lambda: (
            f"Endpoint=sb://{ns}.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={mark(d.b64(32))};EntityPath=orders"
        ),
        lambda: (
            f"https://{ns}.azurewebsites.net/api/HttpTrigger1?code={mark(d.token(54, 54, URLSAFE) + '==')}"
        ),
        lambda: (
            f"curl -H 'Ocp-Apim-Subscription-Key: {mark(d.hex(32))}' https://{ns}.cognitiveservices.azure.com/vision/v3.2/analyze"
        ),
        lambda: f"Endpoint=https://{ns}.service.signalr.net;AccessKey={mark(d.b64(32))};Version=1.0;",
        lambda: (
            f"Endpoint=https://{ns}.azconfig.io;Id={d.token(4, 4)}-l1-s0:{d.token(20, 20)};Secret={mark(d.b64(32))}"
        ),
        lambda: f"> api-key: {mark(d.token(52, 52))}\n> Content-Type: application/json",
    )


def small_clouds(d: Draw) -> str:
    """Credentials of OpenStack and of smaller hosting providers in their own config files."""
    return one(
        d,
        lambda: (
            "clouds:\n  ovh-gra:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: https://auth.cloud.example.test/v3\n"
            f"      application_credential_id: {d.hex(32)}\n      application_credential_secret: {mark(d.token(86, 86, URLSAFE))}"
        ),
        lambda: (
            f"export OS_AUTH_TYPE=v3applicationcredential\nexport OS_APPLICATION_CREDENTIAL_ID={d.hex(32)}\n"
            f"export OS_APPLICATION_CREDENTIAL_SECRET={mark(d.token(86, 86, URLSAFE))}"
        ),
        lambda: (
            f"[DEFAULT]\ndefault-user = {d.user()}\n\n[{d.user()}]\ntoken = {mark(d.hex(64))}\nregion = eu-central"
        ),
        lambda: f"VULTR_API_KEY={mark(d.chars(36, UPPER_ALNUM))}",
        lambda: f"CLOUDFLARE_API_TOKEN={mark(d.token(40, 40, URLSAFE))}\nCLOUDFLARE_ACCOUNT_ID={d.hex(32)}",
        lambda: f"HEROKU_API_KEY={mark(d.uuid())}",
        lambda: (
            f"AWS_ENDPOINT_URL_S3=https://fly.storage.tigris.dev\nAWS_ACCESS_KEY_ID={mark('tid_' + d.token(30, 30))}\n"
            f"AWS_SECRET_ACCESS_KEY={mark('tsec_' + d.token(60, 60, URLSAFE))}"
        ),
        lambda: f"CIVO_TOKEN={mark(d.token(50, 50))}",
        lambda: f"export UPCLOUD_USERNAME={d.user()}\nexport UPCLOUD_PASSWORD={mark(plain_pw(d))}",
    )


# -- private keys: containers and encodings none of the other splits hold --


def ppk_wireguard_xml(d: Draw) -> str:
    def ppk() -> str:
        pub = base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0 " + d.raw(32)).decode()
        priv = base64.b64encode(b"\0\0\0 " + d.raw(32)).decode()
        return (
            f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20261207\nPublic-Lines: 2\n"
            f"{pub[:64]}\n{pub[64:]}\nPrivate-Lines: 1\n{mark(priv)}\nPrivate-MAC: {d.hex(64)}"
        )

    def rsa_xml() -> str:
        parts = {"P": 128, "Q": 128, "DP": 128, "DQ": 128, "InverseQ": 128, "D": 256}
        inner = "".join(f"<{k}>{mark(base64.b64encode(d.raw(n)).decode())}</{k}>" for k, n in parts.items())
        return f"<RSAKeyValue><Modulus>{base64.b64encode(d.raw(256)).decode()}</Modulus><Exponent>AQAB</Exponent>{inner}</RSAKeyValue>"

    def jwk_rsa() -> str:
        parts = (("d", 256), ("p", 128), ("q", 128), ("dp", 128), ("dq", 128), ("qi", 128))
        fields = ",".join(f'"{k}":"{mark(d.b64url(n))}"' for k, n in parts)
        head = f'"kty":"RSA","kid":"{d.hex(8)}","alg":"RS256","n":"{d.b64url(256)}","e":"AQAB"'
        return f"JWKS='{{\"keys\":[{{{head},{fields}}}]}}'"

    return one(
        d,
        ppk,
        lambda: (
            f"[Interface]\nAddress = 10.8.0.2/32\nPrivateKey = {mark(base64.b64encode(d.raw(32)).decode())}\nDNS = 1.1.1.1\n\n"
            f"[Peer]\nPublicKey = {base64.b64encode(d.raw(32)).decode()}\nEndpoint = vpn.example.test:51820"
        ),
        rsa_xml,
        jwk_rsa,
        lambda: (
            f'  "Identity": {{\n    "PeerID": "12D3KooW{d.chars(44, "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")}",\n'
            f'    "PrivKey": "{mark(base64.b64encode(bytes.fromhex("08011240") + d.raw(64)).decode())}"\n  }},'
        ),
        lambda: f'{{"_machinekey": "privkey:{mark(d.hex(64))}", "_current-profile": "profile-{d.hex(4)}"}}',
    )


def chain_secrets(d: Draw) -> str:
    """Wallet secrets in their chains' own encodings, with valid checksums."""

    def xprv() -> str:
        payload = bytes.fromhex("0488ade4") + b"\x03" + d.raw(4) + d.raw(4) + d.raw(32) + b"\0" + d.raw(32)
        return base58check(payload)

    return one(
        d,
        lambda: f"Extended private key: {mark(xprv())}",
        lambda: f"stellar keys show deployer\n{mark(strkey(18 << 3, d.raw(32)))}",
        lambda: f"cat payment.skey | jq -r .bech32\n{mark(bech32('ed25519e_sk', d.raw(64)))}",
        lambda: (
            "sui keytool export --key-identity main\n│ exportedPrivateKey │ "
            + mark(bech32("suiprivkey", b"\0" + d.raw(32)))
            + " │"
        ),
        lambda: (
            f"tezos-client import secret key deployer unencrypted:{mark(base58check(bytes([13, 15, 58, 7]) + d.raw(32)))}"
        ),
        lambda: f"OPERATOR_KEY={mark('302e020100300506032b657004220420' + d.hex(64))}",
        lambda: (
            "Private Keys\n==================\n\n"
            + "\n".join(f"({i}) 0x{mark(d.hex(64))}" for i in range(2))
            + "\n\nWallet\n=================="
        ),
    )


def pem_flattened(d: Draw) -> str:
    """PEM bodies flattened into one line or a JSON string, under labels and dash counts the other splits
    lack, and DER (PKCS#8, PKCS#12) in base64 literals handed to a language's key API."""
    rsa = bytes.fromhex("308204a40201000282010100") + d.raw(1180)
    ec = bytes.fromhex("308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420") + d.raw(
        109
    )

    openssh = b"openssh-key-v1\0" + b"\0\0\0\x04none\0\0\0\x04none\0\0\0\0\0\0\0\x01" + d.raw(380)
    pkcs8_rsa = bytes.fromhex(
        "308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100"
    ) + d.raw(1180)
    pkcs12 = bytes.fromhex("30820a0a0201033082098006092a864886f70d010701a0820971048209") + d.raw(2400)

    def lines(der: bytes) -> list[str]:
        return wrap64(base64.b64encode(der).decode()).split("\n")

    return one(
        d,
        lambda: (
            'JWT_SIGNING_KEY="-----BEGIN RSA PRIVATE KEY-----\\n'
            + mark("\\n".join(lines(rsa)))
            + '\\n-----END RSA PRIVATE KEY-----\\n"'
        ),
        lambda: (
            f"PRIVATE_KEY=-----BEGIN PRIVATE KEY----- {mark(' '.join(lines(ec)))} -----END PRIVATE KEY-----"
        ),
        lambda: (
            f"-----BEGIN TSS2 PRIVATE KEY-----\n{mark(chr(10).join(lines(bytes.fromhex('308201a2') + d.raw(400))))}\n"
            "-----END TSS2 PRIVATE KEY-----"
        ),
        lambda: (
            '---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "rsa-key-20261207"\n'
            f"{mark(chr(10).join(wrap64(base64.b64encode(bytes.fromhex('3f6ff9eb') + d.raw(1200)).decode(), 70).split(chr(10))))}\n"
            "---- END SSH2 ENCRYPTED PRIVATE KEY ----"
        ),
        lambda: (
            '"private_key_openssh": "-----BEGIN OPENSSH PRIVATE KEY-----\\n'
            + mark("\\n".join(wrap64(base64.b64encode(openssh).decode(), 70).split("\n")))
            + '\\n-----END OPENSSH PRIVATE KEY-----\\n",'
        ),
        lambda: (
            "PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getDecoder().decode(\n"
            f'    "{mark(base64.b64encode(pkcs8_rsa).decode())}"));\n'
            'PrivateKey key = KeyFactory.getInstance("RSA").generatePrivate(spec);'
        ),
        lambda: (
            "var cert = new X509Certificate2(Convert.FromBase64String(\n"
            f'    "{mark(base64.b64encode(pkcs12).decode())}"), "{plain_pw(d)}");'
        ),
        lambda: (
            f"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{d.hex(32).upper()}\n\n"
            f"{mark(chr(10).join(lines(d.raw(1190))))}\n-----END RSA PRIVATE KEY-----"
        ),
    )


# -- values split over lines, by means the other splits lack --


def join_calls(d: Draw) -> str:
    v = d.token(48, 84)
    n = 3 if len(v) >= 66 else 2
    size = -(-len(v) // n)
    parts = [v[i : i + size] for i in range(0, len(v), size)]
    quoted = [f'"{mark(p)}"' for p in parts]
    single = [f"'{mark(p)}'" for p in parts]
    return one(
        d,
        lambda: 'VAULT_TOKEN = "".join([\n    ' + ",\n    ".join(quoted) + ",\n])",
        lambda: "SELECT CONCAT(\n  " + ",\n  ".join(single) + "\n) AS ingest_key;",
        lambda: "const licenseKey = [\n  " + ",\n  ".join(quoted) + ',\n].join("");',
        lambda: "accessSecret := strings.Join([]string{\n\t" + ",\n\t".join(quoted) + ',\n}, "")',
        lambda: "parts=(\n  " + "\n  ".join(single) + '\n)\nexport OTP_SECRET="$(printf %s "${parts[@]}")"',
        lambda: "=CONCATENATE(" + ";\n  ".join(quoted) + ")",
        lambda: "Dim accessSecret As String = " + " & _\n    ".join(quoted),
    )


def pieces_apart(d: Draw) -> str:
    v = d.token(56, 90, URLSAFE)
    cut = d.r.randint(20, len(v) - 20)
    a, b = v[:cut], v[cut:]

    def xxd() -> str:
        rows = [v[i : i + 16] for i in range(0, len(v), 16)]
        out = ["$ xxd ~/.config/acme/token"]
        for i, row in enumerate(rows):
            hexes = " ".join(row[j : j + 2].encode().hex() for j in range(0, len(row), 2))
            out.append(f"{i * 16:08x}: {hexes:<39}  {mark(row)}")
        return "\n".join(out)

    return one(
        d,
        lambda: f"INGEST_KEY_PART1={mark(a)}\nINGEST_KEY_PART2={mark(b)}\n# joined in entrypoint.sh",
        lambda: (
            f"first half of the vault token: {mark(a)}\n(sending the rest separately)\nsecond half: {mark(b)}"
        ),
        xxd,
        lambda: f"set LICENSE_KEY={mark(a)}^\n{mark(b)}",
        lambda: f"stringData:\n  access-secret: {mark(a)}\n    {mark(b)}\n  region: eu-west-1",
        lambda: f'id_token: "{mark(a)}\\\n  {mark(b)}"',
    )


# -- mail configuration: servers and programs none of the other splits hold --


def mail_servers_and_apps(d: Draw) -> str:
    pw, user = plain_pw(d), f"{d.user()}@example.test"
    return one(
        d,
        lambda: f"{user}:{{PLAIN}}{mark(pw)}::::::",
        lambda: f"smtp_sasl_password_maps = static:{user}:{mark(pw)}\nsmtp_sasl_auth_enable = yes",
        lambda: (
            f"[mailer]\nENABLED = true\nSMTP_ADDR = smtp.example.test\nUSER = {user}\nPASSWD = {mark(pw)}"
        ),
        lambda: (
            f'"EmailSettings": {{\n    "SMTPUsername": "{user}",\n    "SMTPPassword": "{mark(pw)}",\n    "SMTPServer": "smtp.example.test"\n}}'
        ),
        lambda: f'DISCOURSE_SMTP_USER_NAME: {user}\nDISCOURSE_SMTP_PASSWORD: "{mark(pw)}"',
        lambda: (
            f'[accounts.work]\nemail = "{user}"\nbackend.auth.type = "password"\nbackend.auth.raw = "{mark(pw)}"'
        ),
        lambda: (
            f"mail.host: 'smtp.example.test'\nmail.username: '{user}'\nmail.password: '{mark(pw)}'\nmail.use-tls: true"
        ),
        lambda: (
            f'"smtpServer": {{\n  "host": "smtp.example.test",\n  "auth": "true",\n  "user": "{user}",\n  "password": "{mark(pw)}"\n}}'
        ),
        lambda: f"MAILGUN_API_KEY={mark('key-' + d.hex(32))}\nMAILGUN_DOMAIN=mg.example.test",
        lambda: f"BREVO_API_KEY={mark('xkeysib-' + d.hex(64) + '-' + d.token(16, 16))}",
        lambda: f"RESEND_API_KEY={mark('re_' + d.token(8, 8) + '_' + d.token(24, 24))}",
        lambda: (
            f'mandrill_client = mailchimp_transactional.Client("{mark("md-" + d.token(22, 22, URLSAFE))}")'
        ),
    )


# -- prose, in languages none of the other splits hold (their words, their ways of saying "is") --

PROSE_GROUPS: dict[str, dict[str, list[str]]] = {
    "south-asia": {
        "bn": ["সার্ভারের পাসওয়ার্ড হলো {pw}", "আমার পিন নম্বর {pin}", "API কী হল {key}"],
        "ta": ["கடவுச்சொல் {pw}", "சர்வர் கடவுச்சொல்: {pw}", "PIN எண் {pin}", "API விசை {key}"],
        "kn": ["ಪಾಸ್‌ವರ್ಡ್ {pw} ಆಗಿದೆ", "ಸರ್ವರ್ ಗುಪ್ತಪದ: {pw}", "ಪಿನ್ ಸಂಖ್ಯೆ {pin}", "API ಕೀ {key} ಆಗಿದೆ"],
        "ml": ["പാസ്‌വേഡ് {pw} ആണ്", "സെർവറിന്റെ പാസ്‌വേഡ്: {pw}", "പിൻ നമ്പർ {pin} ആണ്", "API കീ {key} ആണ്"],
        "ne": ["सर्भरको पासवर्ड {pw} हो", "गोप्य शब्द: {pw}", "पिन नम्बर {pin} हो", "API साँचो {key} हो"],
        "or": ["ପାସୱାର୍ଡ {pw} ଅଟେ", "ସର୍ଭର ପାସୱାର୍ଡ: {pw}", "PIN ନମ୍ବର {pin}", "API ଚାବି {key}"],
        "as": ["পাছৱৰ্ড হৈছে {pw}", "ছাৰ্ভাৰৰ পাছৱৰ্ড: {pw}", "পিন নম্বৰ {pin}", "API চাবি {key}"],
        "sd": ["پاسورڊ {pw} آهي", "سرور جو پاسورڊ: {pw}", "پن ڪوڊ {pin} آهي", "API ڪنجي {key} آهي"],
    },
    "africa": {
        "af": [
            "Die wagwoord is {pw}",
            "wagwoord vir die bediener: {pw}",
            "Jou PIN-nommer is {pin}",
            "Die toegangsleutel is {key}",
        ],
        "ha": [
            "Kalmar sirri ita ce {pw}",
            "kalmar sirrin sabar: {pw}",
            "Lambar PIN ita ce {pin}",
            "Mabuɗin API shi ne {key}",
        ],
        "zu": [
            "Iphasiwedi ngu-{pw}",
            "iphasiwedi yeseva: {pw}",
            "Inombolo ye-PIN ngu-{pin}",
            "Ukhiye we-API ngu-{key}",
        ],
        "xh": [
            "Igama lokugqitha ngu {pw}",
            "iphaswedi yeseva: {pw}",
            "I-PIN yakho ngu {pin}",
            "Isitshixo se-API ngu {key}",
        ],
        "so": [
            "Erayga sirta ah waa {pw}",
            "furaha sirta ee server-ka: {pw}",
            "Lambarka PIN-ka waa {pin}",
            "Furaha API-ga waa {key}",
        ],
        "rw": [
            "Ijambo ry'ibanga ni {pw}",
            "ijambo ry'ibanga rya seriveri: {pw}",
            "Umubare w'ibanga ni {pin}",
            "Urufunguzo rwa API ni {key}",
        ],
        "mg": [
            "Ny tenimiafina dia {pw}",
            "tenimiafin'ny mpizara: {pw}",
            "Ny kaody PIN dia {pin}",
            "Ny lakilen'ny API dia {key}",
        ],
        "ig": ["Okwuntughe bụ {pw}", "okwuntughe nke sava: {pw}", "PIN gị bụ {pin}", "Igodo API bụ {key}"],
    },
    "europe-and-creole": {
        "is": [
            "Lykilorðið er {pw}",
            "lykilorð á þjóninum: {pw}",
            "PIN-númerið er {pin}",
            "API-lykillinn er {key}",
        ],
        "gl": [
            "O contrasinal é {pw}",
            "contrasinal do servidor: {pw}",
            "O número PIN é {pin}",
            "A clave da API é {key}",
        ],
        "mt": [
            "Il-kelma sigrieta hija {pw}",
            "password tas-server: {pw}",
            "Il-PIN huwa {pin}",
            "Iċ-ċavetta tal-API hija {key}",
        ],
        "gd": [
            "'S e am facal-faire {pw}",
            "facal-faire an fhrithealaiche: {pw}",
            "'S e am PIN {pin}",
            "Iuchair an API: {key}",
        ],
        "br": [
            "Ar ger-tremen eo {pw}",
            "ger-tremen ar servijer: {pw}",
            "Ar c'hod PIN eo {pin}",
            "Alc'hwez an API eo {key}",
        ],
        "fy": [
            "It wachtwurd is {pw}",
            "wachtwurd fan de tsjinner: {pw}",
            "De pinkoade is {pin}",
            "De API-kaai is {key}",
        ],
        "yi": [
            "דאָס פּאַראָל איז {pw}",
            "דער פּאַראָל פֿונעם סערווער: {pw}",
            "דער PIN איז {pin}",
            "דער API שליסל איז {key}",
        ],
        "ht": ["Modpas la se {pw}", "modpas sèvè a: {pw}", "PIN ou se {pin}", "Kle API a se {key}"],
    },
    "central-and-southeast-asia": {
        "ms": [
            "Kata laluan ialah {pw}",
            "kata laluan pelayan: {pw}",
            "Nombor PIN ialah {pin}",
            "Kunci API ialah {key}",
        ],
        "jv": [
            "Tembung sandhine yaiku {pw}",
            "tembung sandhi server: {pw}",
            "PIN-e {pin}",
            "Kunci API-ne yaiku {key}",
        ],
        "su": [
            "Kecap aksés nyaéta {pw}",
            "kecap konci server: {pw}",
            "PIN anjeun nyaéta {pin}",
            "Konci API nyaéta {key}",
        ],
        "ky": ["Сырсөз {pw}", "сервердин сырсөзү: {pw}", "PIN коду {pin}", "API ачкычы {key}"],
        "tt": ["Серсүз {pw}", "серверның серсүзе: {pw}", "PIN-кодыгыз {pin}", "API ачкычы: {key}"],
        "tg": ["Рамзи махфӣ {pw} аст", "рамзи сервер: {pw}", "Рамзи PIN {pin} аст", "Калиди API {key} аст"],
        "ps": ["پټنوم {pw} دی", "د سرور پټنوم: {pw}", "پن کوډ {pin} دی", "د API کیلي {key} ده"],
        "ckb": [
            "وشەی نهێنی بریتییە لە {pw}",
            "تێپەڕەوشەی سێرڤەر: {pw}",
            "ژمارەی PIN: {pin}",
            "کلیلی API: {key}",
        ],
        "ug": ["مەخپىي نومۇر {pw}", "مۇلازىمېتىرنىڭ پارولى: {pw}", "PIN نومۇرى {pin}", "API ئاچقۇچى {key}"],
        "tk": ["Gizlin söz {pw}", "serweriň açar sözi: {pw}", "PIN kody {pin}", "API açary {key}"],
    },
}
PROSE: dict[str, list[str]] = {lang: t for group in PROSE_GROUPS.values() for lang, t in group.items()}


def prose(languages: dict[str, list[str]]) -> Callable[[Draw], str]:
    """Cases take the group's languages in turn, so a dozen cases cover every language of it."""
    order = list(languages)

    def make(d: Draw) -> str:
        lang = order[nth(d, "lang") % len(order)]
        values = {
            "pw": one(d, lambda: d.password(), lambda: d.weak(), lambda: d.phrase().replace(" ", "-")),
            "pin": d.pin(),
            "key": one(d, lambda: d.token(24, 40), lambda: d.hex(40)),
        }
        return d.pick(languages[lang]).format(**{k: mark(v) for k, v in values.items()})

    return make


# -- look-alikes that must be kept: kinds none of the other splits hold --


def la_build_digests(d: Draw) -> str:
    nixbase32 = "0123456789abcdfghijklmnpqrsvwxyz"
    return one(
        d,
        lambda: (
            f"@  {mark(d.chars(8, 'klmnopqrstuvwxyz'))} dev@example.test 2026-12-07 10:42:11 {mark(d.hex(8))}\n│  fix the retry loop"
        ),
        lambda: (
            f"Created entry at index {d.r.randint(10**8, 2 * 10**8)}, available at: "
            f"https://rekor.sigstore.dev/api/v1/log/entries/{mark(d.hex(80))}"
        ),
        lambda: (
            f"golang.org/x/net v0.33.0 {mark('h1:' + d.b64(32))}\ngolang.org/x/net v0.33.0/go.mod {mark('h1:' + d.b64(32))}"
        ),
        lambda: (
            f'provider "registry.terraform.io/hashicorp/aws" {{\n  version = "5.80.0"\n  hashes = [\n'
            f'    "{mark("h1:" + d.b64(32))}",\n    "{mark("zh:" + d.hex(64))}",\n  ]\n}}'
        ),
        lambda: f"requests==2.32.3 \\\n    --hash={mark('sha256:' + d.hex(64))}",
        lambda: f"/nix/store/{mark(d.chars(32, nixbase32))}-openssl-3.3.2",
        lambda: (
            f'http_archive(\n    name = "rules_go",\n    sha256 = "{mark(d.hex(64))}",\n    urls = ["https://mirror.example.test/rules_go.zip"],\n)'
        ),
        lambda: f'  bottle do\n    sha256 cellar: :any, arm64_sequoia: "{mark(d.hex(64))}"\n  end',
        lambda: (
            f'<component group="com.google.guava" name="guava" version="33.3.1-jre">\n'
            f'   <artifact name="guava-33.3.1-jre.jar">\n      <sha256 value="{mark(d.hex(64))}" origin="Generated by Gradle"/>'
        ),
        lambda: f'< etag: W/"{mark(d.hex(32))}"',
        lambda: (
            f"changeset:   {d.r.randint(100, 9000)}:{mark(d.hex(40))}\nuser:        Dev <dev@example.test>"
        ),
    )


def la_object_ids(d: Draw) -> str:
    return one(
        d,
        lambda: f'{{ _id: ObjectId("{mark(d.hex(24))}"), status: "active" }}',
        lambda: f"traceparent: {mark('00-' + d.hex(32) + '-' + d.hex(16) + '-01')}",
        lambda: f'"node_id": "{mark("U_kgDO" + d.token(8, 8))}"',
        lambda: f'zone_id = "{mark(d.hex(32))}"\naccount_id = "{mark(d.hex(32))}"',
        lambda: f'appId: "{mark(f"1:{d.chars(12, string.digits)}:web:{d.hex(22)}")}"',
        lambda: f"TWILIO_ACCOUNT_SID={mark('AC' + d.hex(32))}",
        lambda: f'"projectId": "{mark("prj_" + d.token(28, 28))}"',
        lambda: f"SUPABASE_URL=https://{mark(d.chars(20, string.ascii_lowercase))}.supabase.co",
        lambda: f"message {mark(str(d.r.randint(10**18, 2 * 10**18)))} deleted from #ops",
        lambda: f"GET /share/{mark(d.token(21, 21, URLSAFE))} 200 12ms",
        lambda: f"assuming role {mark(f'acs:ram::{d.chars(16, string.digits)}:role/deployer')}",
        lambda: (
            f"resource: {mark(f'//compute.googleapis.com/projects/acme-prod/zones/europe-west1-b/instances/web-{d.hex(6)}')}"
        ),
    )


def la_public_material(d: Draw) -> str:
    cert = wrap64(base64.b64encode(bytes.fromhex("3082030d308201f5a003020102021400") + d.raw(760)).decode())
    n = base64.urlsafe_b64encode(d.raw(256)).rstrip(b"=").decode()
    return one(
        d,
        lambda: f"[Peer]\nPublicKey = {mark(base64.b64encode(d.raw(32)).decode())}\nAllowedIPs = 10.8.0.0/24",
        lambda: f"NEXT_PUBLIC_STRIPE_PUBLISHABLE_KEY={mark('pk_live_' + d.token(99, 99))}",
        lambda: (
            f"mapboxgl.accessToken = '{mark('pk.eyJ' + b64url_json({'u': d.user(), 'a': 'cl' + d.chars(23, LOWER_ALNUM)})[3:] + '.' + d.token(22, 22, URLSAFE))}';"
        ),
        lambda: f"HiddenServiceDir /var/lib/tor/app\n# hostname: {mark(onion_v3(d.raw(32)))}",
        lambda: f"Destination: {mark(strkey(6 << 3, d.raw(32)))}",
        lambda: "payment address " + mark(bech32("addr", b"\x01" + d.raw(56))),
        lambda: f"-----BEGIN CERTIFICATE-----\n{mark(cert)}\n-----END CERTIFICATE-----",
        lambda: (
            f'{{"keys": [{{"kty": "RSA", "use": "sig", "kid": "{d.hex(8)}", "n": "{mark(n)}", "e": "AQAB"}}]}}'
        ),
    )


def la_vendor_samples(d: Draw) -> str:
    return one(
        d,
        lambda: (
            "Authorization: Bearer "
            + mark(
                "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
                ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
            )
        ),
        lambda: f"export SLACK_BOT_TOKEN={mark('xoxb-not-a-real-token-this-will-not-work')}",
        lambda: (
            f"TWILIO_ACCOUNT_SID={mark('ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX')}\nTWILIO_AUTH_TOKEN={mark('your_auth_token')}"
        ),
        lambda: (
            f"curl -s --user 'api:{mark('key-3ax6xnjp29jd6fds4gc373sgvjxteol0')}' https://api.mailgun.net/v3/samples.mailgun.org/log"
        ),
        lambda: f'stripe.api_key = "{mark("sk_test_BQokikJOvBiI2HlWgH4olfQ2")}"',
        lambda: f"  + master_password = {mark('(sensitive value)')}",
        lambda: f"-----BEGIN PRIVATE KEY-----\n{mark('...')}\n-----END PRIVATE KEY-----",
        lambda: f"OPENROUTER_API_KEY={mark('sk-or-v1-<your-key>')}",
        lambda: f"client_secret: {mark('xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx')}",
        lambda: f"$ docker login -u ci -p {mark('[MASKED]')} registry.example.test\nLogin Succeeded",
    )


def la_template_refs(d: Draw) -> str:
    return one(
        d,
        lambda: (
            f"            - name: PGPASSWORD\n              value: {mark('{{ .Values.postgresql.auth.password | quote }}')}"
        ),
        lambda: f"  password = {mark('random_password.db.result')}",
        lambda: f"POSTGRES_PASSWORD_FILE={mark('/run/secrets/postgres_password')}",
        lambda: f'export SMTP_PASS="$({mark("pass show work/smtp")})"',
        lambda: (
            f"token = {mark('keyring.get_password(' + chr(34) + 'billing' + chr(34) + ', ' + chr(34) + 'ci' + chr(34) + ')')}"
        ),
        lambda: (
            f"  data:\n    - secretKey: password\n      remoteRef:\n        key: {mark('prod/billing/db')}\n        property: password"
        ),
        lambda: f"  env:\n    SYSTEM_ACCESSTOKEN: {mark('$(System.AccessToken)')}",
        lambda: (
            f"  password: {mark(chr(60) + '%= ENV.fetch(' + chr(34) + 'DB_PASSWORD' + chr(34) + ') %' + chr(62))}"
        ),
        lambda: f"spring.datasource.password={mark('${DB_PASSWORD:}')}",
        lambda: f"docker login -u gitlab-ci-token -p {mark('$CI_JOB_TOKEN')} $CI_REGISTRY",
    )


def la_encrypted(d: Draw) -> str:
    laravel = base64.b64encode(
        json.dumps(
            {"iv": d.b64(16), "value": d.b64(96), "mac": d.hex(64), "tag": ""}, separators=(",", ":")
        ).encode()
    ).decode()
    return one(
        d,
        lambda: f"config:\n  billing:dbPassword:\n    secure: {mark('v1:' + d.b64(12) + ':' + d.b64(40))}",
        lambda: (
            f'{{\n  "id": "db",\n  "password": {{\n    "encrypted_data": "{mark(d.b64(48))}",\n'
            f'    "iv": "{mark(d.b64(12))}",\n    "auth_tag": "{mark(d.b64(16))}",\n    "version": 3,\n    "cipher": "aes-256-gcm"\n  }}\n}}'
        ),
        lambda: f"<password>{mark('{AQAAABAAAAAQ' + d.b64(48) + '}')}</password>",
        lambda: f'"password": "{mark("2." + d.b64(16) + "|" + d.b64(32) + "|" + d.b64(32))}"',
        lambda: f'DOTENV_PUBLIC_KEY="{d.hex(66)}"\nAPI_KEY="{mark("encrypted:" + d.b64(96))}"',
        lambda: f'  "smtp_password": "{mark(f"EJ[1:{d.b64(32)}:{d.b64(24)}:{d.b64(32)}]")}"',
        lambda: f"$ head -c 120 .env.production.encrypted\n{mark(laravel[:120])}",
    )


def la_encoded_payloads(d: Draw) -> str:
    script = base64.b64encode(b"#!/bin/bash\nset -euo pipefail\n" + d.token(60, 120).encode()).decode()
    return one(
        d,
        lambda: f'            "user_data": "{mark(script)}",',
        lambda: (
            f"GIT binary patch\nliteral {d.r.randint(200, 4000)}\n{mark('zcmV' + d.token(60, 60, ALNUM + '!#$%&()*+-;<=>?@^_`{|}~'))}"
        ),
        lambda: (
            f"Subject: {mark('=?UTF-8?B?' + base64.b64encode('Rechnung Nr. 2026-118 für Dezember'.encode()).decode() + '?=')}"
        ),
        lambda: (
            f'const wasm = Uint8Array.from(atob("{mark("AGFzbQEAAAA" + d.b64(90))}"), c => c.charCodeAt(0));'
        ),
        lambda: f"> Sec-WebSocket-Key: {mark(d.b64(16))}\n< Sec-WebSocket-Accept: {mark(d.b64(20))}",
        lambda: (
            f'grpcurl -d \'{{"payload": "{mark(d.b64(d.r.randint(30, 60)))}"}}\' localhost:50051 events.Ingest/Push'
        ),
    )


def la_prose_no_value(d: Draw) -> str:
    return d.pick(
        [
            mark("Kata laluan anda telah tamat tempoh."),
            mark("Die wagwoord is verkeerd, probeer weer."),
            mark("Lykilorðið er of stutt."),
            mark("Iphasiwedi ayilungile."),
            mark("O contrasinal caducou onte."),
            mark("Okwuntughe adịghị mma."),
            mark("Modpas la pa kòrèk."),
            mark("Erayga sirta ah waa khalad."),
            mark("The PIN is printed on the back of the card."),
            mark("the new token is scoped to read:packages only"),
            mark("Which password manager do you use for the shared vault?"),
            mark("We rotate the signing keys every quarter; see the runbook."),
        ]
    )


def la_security_settings(d: Draw) -> str:
    return d.pick(
        [
            mark('PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]'),
            mark("token_lifetime: 15m"),
            mark("key_size: 4096"),
            mark("pbkdf2_iterations: 600000"),
            mark("echo $CR_PAT | docker login ghcr.io -u ci --password-stdin"),
            mark("sslmode=verify-full sslrootcert=/etc/ssl/certs/rds.pem"),
            mark("ssh -i ~/.ssh/deploy_ed25519 git@git.example.test"),
            mark("type: kubernetes.io/dockerconfigjson"),
            mark("minimumPasswordLength = 14"),
            mark("otp_digits: 6"),
            mark("keystore.type=PKCS12"),
            mark("session_timeout_minutes = 30"),
        ]
    )


def specs() -> list[Spec]:
    out = [
        Spec("slot", "package-manager-auth-files", "secret", "file", package_auth_files),
        Spec("slot", "ops-tool-arguments", "secret", "command", ops_command_args),
        Spec("slot", "dsl-and-language-literals", "secret", "file", language_literals),
        Spec("slot", "device-proxy-urls-and-dsns", "secret", "inline", urls_and_dsns),
        Spec("slot", "xml-attributes-and-agent-hcl", "secret", "file", xml_and_agent_configs),
        Spec("slot", "vendor-headers-and-auth-schemes", "secret", "inline", vendor_headers),
        Spec("cookie", "captures-logs-and-urls", "secret", "inline", cookie_captures),
        Spec("cookie", "set-in-code-and-test-clients", "secret", "file", cookie_code),
        Spec("token-near-word", "setup-wizard-prompts", "secret", "tty", cli_prompts),
        Spec("token-near-word", "commits-tickets-and-alerts", "secret", "chat", commits_and_tickets),
        Spec("prefix-token", "ai-and-dev-infrastructure", "secret", "inline", ai_and_devinfra),
        Spec("prefix-token", "consumer-payments-and-bots", "secret", "chat", consumer_and_payments),
        Spec("prefix-token", "incoming-webhook-urls", "secret", "inline", webhook_urls),
        Spec("cloud-key", "service-accounts-and-principals", "secret", "file", sa_and_principals),
        Spec("cloud-key", "azure-connection-keys", "secret", "inline", azure_connection_keys),
        Spec("cloud-key", "openstack-and-small-providers", "secret", "file", small_clouds),
        Spec("private-key", "ppk-wireguard-xml-node-keys", "secret", "file", ppk_wireguard_xml),
        Spec("private-key", "chain-secret-encodings", "secret", "output", chain_secrets),
        Spec("private-key", "flattened-pem-rare-labels-der-in-code", "secret", "file", pem_flattened),
        Spec("split", "join-calls-and-arrays", "secret", "file", join_calls),
        Spec("split", "pieces-apart", "secret", "inline", pieces_apart),
        Spec("mail", "servers-apps-and-provider-keys", "secret", "file", mail_servers_and_apps),
        Spec("lookalike-hash", "lock-and-build-digests", "lookalike", "file", la_build_digests),
        Spec("lookalike-id", "object-trace-and-project-ids", "lookalike", "log", la_object_ids),
        Spec("lookalike-public", "peer-keys-certs-and-publishable", "lookalike", "file", la_public_material),
        Spec("lookalike-example", "vendor-doc-samples", "lookalike", "file", la_vendor_samples),
        Spec("lookalike-reference", "templating-and-store-paths", "lookalike", "file", la_template_refs),
        Spec("lookalike-reference", "encrypted-at-rest", "lookalike", "file", la_encrypted),
        Spec("lookalike-data", "encoded-payloads", "lookalike", "inline", la_encoded_payloads),
        Spec("lookalike-prose", "no-value-unseen-languages", "lookalike", "chat", la_prose_no_value),
        Spec("lookalike-prose", "security-settings", "lookalike", "file", la_security_settings),
    ]
    out += [Spec("prose", group, "secret", "chat", prose(langs)) for group, langs in PROSE_GROUPS.items()]
    return out


# -- the transcript text around a snippet of this half --

_FILES = [
    "deploy/.env.prod",
    "config/secrets.local.yml",
    "infra/cloud/main.bicep",
    "ops/notes.txt",
    "src/config.ts",
]
_SAY = [
    "Checking which credentials the worker picks up.",
    "The integration test fails at login; looking at the setup.",
    "Reading the file the container mounts.",
    "Let me see what the previous run left behind.",
]
_TMUX = '[dev] 0:nvim  1:zsh*  2:logs-                          "build-box" 10:42 07-Dec-26'
_FISH = ["dev@build-box ~/src/billing (main)> ", "ana@mbp ~/w/api (feat/login)> "]
_CMD = ["C:\\Users\\dev\\src\\billing>", "C:\\work\\api>"]
_BASH = ["dev@build-box:~/src/billing (main*)$ ", "ana@ws-07:~/api$ "]


def _counting(fmt: str, start: int) -> Iterator[str]:
    n = start
    while True:
        yield fmt.format(n=n)
        n += 1


def _first_then(first: str, rest: str) -> Iterator[str]:
    yield first
    while True:
        yield rest


def _file(draw: Draw, snippet: str) -> str:
    r = draw.r
    path = r.choice(_FILES)
    style = r.randrange(4)
    if style == 0:  # an agent's read tool, rendered with its line numbers
        return f"⏺ Read({path})\n" + prefixed(snippet, _counting("{n:>6}→", r.randint(1, 80)))
    if style == 1:  # a SEARCH/REPLACE edit block
        return f"{path}\n```\n<<<<<<< SEARCH\n=======\n{snippet}\n>>>>>>> REPLACE\n```"
    if style == 2:  # a tool call written as XML
        return f"<write_to_file>\n<path>{path}</path>\n<content>\n{snippet}\n</content>\n</write_to_file>"
    return f"<details><summary>{path}</summary>\n\n```\n{snippet}\n```\n</details>\n\n{r.choice(_SAY)}"


def _command(draw: Draw, snippet: str) -> str:
    r = draw.r
    style = r.randrange(4)
    if style == 0:
        return f"⏺ Bash({snippet})\n  ⎿  (No content)"
    if style == 1:
        prompt = r.choice(_BASH)
        return f"{prompt}{snippet}\n{prompt}\n\n{_TMUX}"
    if style == 2:
        return f"{r.choice(_CMD)}{snippet}\n\n{r.choice(_CMD)}"
    return f"{r.choice(_FISH)}{snippet}\n{r.choice(_FISH)}"


def _session(draw: Draw, snippet: str) -> str:
    """An interactive program: its command line after a prompt, then what it printed and echoed."""
    r = draw.r
    command, _, rest = snippet.partition("\n")
    style = r.randrange(3)
    if style == 0:
        return f"⏺ Bash({command})\n" + prefixed(rest, _first_then("  ⎿  ", "     "))
    if style == 1:
        prompt = r.choice(_BASH)
        return f"{prompt}{command}\n{rest}\n{prompt}\n\n{_TMUX}"
    prompt = r.choice(_FISH)
    return f"{prompt}{command}\n{rest}\n{prompt}"


def _chat(draw: Draw, snippet: str) -> str:
    r = draw.r
    who = r.choice(["ana", "marek", "priya", "tunde", "sigrid"])
    style = r.randrange(3)
    if style == 0:
        stamp = f"[{r.randint(8, 18):02d}:{r.randint(0, 59):02d}]"
        return prefixed(snippet, _first_then(f"{stamp} {who}: ", " " * (len(stamp) + len(who) + 3)))
    if style == 1:
        return prefixed(snippet, _constant_prefix(f"<{who}> "))
    return f"> {r.choice(['the user wrote:', 'from the ticket:', 'pasted by the user:'])}\n\n{snippet}\n\nOk, using that."


def _constant_prefix(prefix: str) -> Iterator[str]:
    while True:
        yield prefix


def _log(draw: Draw, snippet: str) -> str:
    r = draw.r
    style = r.randrange(3)
    if style == 0:
        return prefixed(snippet, _constant_prefix(f"api-{r.randint(1, 3)}  | "))
    if style == 1:
        pod = f"[pod/worker-{draw.hex(5)}-{draw.chars(5, LOWER_ALNUM)}/worker] "
        return prefixed(snippet, _constant_prefix(pod))
    return prefixed(snippet, _counting("Dec 07 10:42:{n:02d} build-box worker[2211]: ", r.randint(0, 40)))


def _output(draw: Draw, snippet: str) -> str:
    """A tool's output as an agent's shell tool renders it, or under a notebook's shell escape."""
    r = draw.r
    if r.randrange(2) == 0:
        return "⏺ Bash(./scripts/wallet.sh)\n" + prefixed(snippet, _first_then("  ⎿  ", "     "))
    return f"In [{r.randint(2, 30)}]: !./scripts/wallet.sh\n{snippet}\n\nIn [{r.randint(31, 60)}]: "


def frame(draw: Draw, snippet: str, kind: Frame) -> str:
    """``snippet`` as it sits in a transcript of this half: an agent's read or shell tool rendered,
    an edit block, a tool call in XML, a tmux/fish/cmd console, a notebook's shell escape, container or journal log
    lines, or a chat export."""
    if kind == "file":
        return _file(draw, snippet)
    if kind == "command":
        return _command(draw, snippet)
    if kind == "tty":
        return _session(draw, snippet)
    if kind == "chat":
        return _chat(draw, snippet)
    if kind == "log":
        return _log(draw, snippet)
    if kind == "output":
        return _output(draw, snippet)
    r = draw.r  # inline
    style = r.randrange(3)
    if style == 0:
        return f"⏺ {r.choice(_SAY)}\n\n{snippet}"
    if style == 1:
        return f"<tool_output>\n{snippet}\n</tool_output>"
    return f"{r.choice(_SAY)}\n```text\n{snippet}\n```"
