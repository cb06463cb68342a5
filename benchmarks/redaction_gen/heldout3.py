"""The third held-out half: the ONLY held-out split. Never tune a rule against it.

Written after ``heldout2.py`` had been measured (its figures read), so that a split nobody has
measured against while writing rules exists again before the final measurement. Its classes were
designed from what developers paste into coding-agent sessions, not from memd's rules: its author
read ``dev.py``, ``eval.py``, ``heldout.py`` and ``heldout2.py`` only to stay clear of them, never
``pipeline/redaction``, its tests or the pages listing its rules and figures, and never ran memd's
redactor on it. None of its class names, secret-ish slot spellings, prose languages, token
prefixes, key containers, cloud formats, ways of splitting a value, cookie names or look-alike
kinds is held as a literal shape by those four files. Every family of issue 33 is covered, in
transcript text of its own (Aider chat history, Gemini CLI and Codex shell-tool results, Cline and
OpenHands observations, ``bat`` file views, PowerShell, starship and root consoles, CI and BuildKit
log prefixes, GitHub comments and Discord copies), with its own seed. Measure it once, at the end
(``generalise_bench.py --heldout``); once its figures have been read, relabel it as development and
write a new one.
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
    b64url_json,
    base62_crc32,
    bech32,
    mark,
    nth,
    prefixed,
    spell,
    wrap64,
)

HALF = "heldout3"
SEED = 0x3D_5EC7_0B  # none of the other splits' seeds
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
Maker = Callable[[], str]

# Literal shapes this half uses that none of the other four splits' files holds (a test checks both
# sides): token prefixes, cookie names, URL schemes, key labels and look-alike kinds.
UNSEEN = (
    "qnt_live_",
    "hlx-sk-",
    "orb1.",
    "pnd_pat_",
    "zrk_",
    "mrl-api-v2-",
    "kv8_",
    "lmn_sk_prod_",
    "cfx.",
    "trv_tok_",
    "ASTRA-",
    "wbx_",
    "glrt-",
    "GR1348941",
    "sqp_",
    "VENWMiJ9",
    "SWMTKN-1-",
    "CFPAT-",
    "fo1_",
    "rdme_",
    "glc_",
    "napi_",
    "unkey_",
    "tr_prod_",
    "signkey-prod-",
    "xaat-",
    "sk-helicone-",
    "vercel_blob_rw_",
    "hvb.",
    "akab-",
    "cloudinary://",
    "GCORE_",
    "ALTAK",
    "JDC_SECRET_KEY",
    "outscale",
    "mgc config",
    "SELECTEL",
    "TWC_TOKEN",
    "nhncloud",
    "STACKIT",
    "pass_phrase",
    "mod_auth_openidc_session",
    "MoodleSession",
    "i_like_gitea",
    "_gh_sess",
    "roundcube_sessid",
    "oc_sessionPassphrase",
    "KEYCLOAK_IDENTITY",
    "authjs.session-token",
    "beaker.session.id",
    "koa.sess",
    "directus_session_token",
    "pb_auth",
    "-auth-token",
    "__client",
    "git+https://",
    "sasl.jaas.config",
    "stomp+ssl://",
    "rest:https://",
    "b2://",
    "rtmp://",
    "cockroachdb://",
    "couchbases://",
    ".LOGON",
    "hdbuserstore",
    "concatStrings",
    "KeyChunks",
    "turn:",
    "trojan://",
    "k4.secret.",
    "k4.local.",
    "EncryptionConfiguration",
    "APP_KEY=base64:",
    "master.key",
    "identity.secret",
    "NEBULA",
    "ed25519_key.priv",
    "BitLocker",
    "manage-bde",
    "Security Key",
    "recovery-codes",
    "quoted-printable",
    "pset format wrapped",
    "fold -w",
    "<<'EOF'",
    "nullmailer",
    "smtps+plain://",
    "smtp-auth-password",
    "WPMS_SMTP_PASS",
    "SMTP_USER_PWD",
    "mail__options__auth__pass",
    "there with password",
    "SimpleIMAPSSLRetriever",
    "MailPace-Server-Token",
    "X-Server-API-Key",
    "LETTERMINT",
    "MAILTRAP",
    "SMTP2GO",
    "Zoho-enczapikey",
    "ELASTICEMAIL",
    "b3sum",
    "BLAKE2B",
    "Checksums-Sha256",
    "git-lfs",
    "ocid1.instance",
    "cf-ray",
    "dpl_",
    "gid://",
    "ksuid",
    "TLSA",
    "VAPID",
    "SSHFP",
    "DNSKEY",
    "cert-authority",
    "devstoreaccount1",
    "${ssm:",
    "berglas://",
    "from_secret",
    "((db-password))",
    "ref+vault://",
    "requireSecret",
    "availableSecrets",
    "with secret",
    "{cipher}",
    "ENC[PKCS7",
    "k8s:enc:",
    "PGP MESSAGE",
    "Salted__",
    "image/gif",
    "report.pdf",
    "grpc-web",
    "begin 644",
)

# -- secret-ish names (this half's spellings; none of them in the other splits' NAMES) --

NAMES = [
    ["bind", "password"],
    ["app", "password"],
    ["private", "token"],
    ["personal", "access", "token"],
    ["apikey"],
    ["secretkey"],
    ["auth", "secret"],
    ["encryption", "passphrase"],
    ["senha"],
    ["mot", "de", "passe"],
    ["passwort"],
    ["clave", "api"],
    ["admin", "secret"],
    ["sasl", "password"],
    ["bearer", "token"],
    ["upload", "token"],
    ["keyphrase"],
    ["access", "key", "secret"],
]


def name(d: Draw, *styles: str) -> str:
    return spell(d.pick(NAMES), d.pick(styles))


def one(d: Draw, *makers: Maker) -> str:
    """The next of ``makers`` in turn (so a class's dozen cases show each of its shapes), called:
    only the chosen one draws its values."""
    code = makers[0].__code__
    return makers[nth(d, f"one:{code.co_firstlineno}") % len(makers)]()


def turn(d: Draw, items: list[str]) -> str:
    """The next of ``items`` in turn."""
    return items[nth(d, f"turn:{items[0]}") % len(items)]


def safe_pw(d: Draw) -> str:
    """A password that needs no quoting or escaping in a URL, a DSN, a shell word or a string."""
    return "".join(c if c.isalnum() else d.pick("-_") for c in d.password())


def slot_value(d: Draw) -> str:
    return one(d, lambda: safe_pw(d), lambda: d.token(26, 46), lambda: d.hex(d.pick([32, 40, 56])))


def jwt(d: Draw, claims: dict[str, object]) -> str:
    head = b64url_json({"alg": d.pick(["HS256", "HS512", "EdDSA"]), "typ": "JWT"})
    return f"{head}.{b64url_json(claims)}.{d.b64url(d.pick([32, 64]))}"


# -- values in credential slots, by syntax --


def config_dialects(d: Draw) -> str:
    """A secret-ish key in configuration languages none of the other splits write."""
    parts = d.pick(NAMES)
    snake, camel, kebab = spell(parts, "snake"), spell(parts, "camel"), spell(parts, "kebab")
    v = slot_value(d)
    return one(
        d,
        lambda: f'package app\n\ndatabase: {{\n\thost:  "{d.host()}"\n\t{camel}: "{mark(v)}"\n}}',
        lambda: f'let Config = ./schema.dhall\nin  Config::{{ host = "{d.host()}", {camel} = "{mark(v)}" }}',
        lambda: f'  services.acme = {{\n    enable = true;\n    {camel} = "{mark(v)}";\n  }};',
        lambda: f'server "{d.host()}" {{\n    port 8443\n    {kebab} "{mark(v)}"\n}}',
        lambda: f'amends "package://pkg.example.test/app@1.0#/App.pkl"\n{camel} = "{mark(v)}"',
        lambda: f"{{\n  // local only\n  {camel}: '{mark(v)}',\n  retries: 3,\n}}",
        lambda: f'akka.remote {{\n  {kebab} = "{mark(v)}"\n  port = 2552\n}}',
        lambda: f'(\n    host: "{d.host()}",\n    {snake}: "{mark(v)}",\n)',
        lambda: f'return {{\n  host = "{d.host()}",\n  {snake} = "{mark(v)}",\n}}',
        lambda: f'config :billing, Billing.Repo,\n  username: "{d.user()}",\n  {snake}: "{mark(v)}"',
        lambda: f'[{{billing, [{{{snake}, "{mark(v)}"}}, {{port, 8080}}]}}].',
        lambda: f"return [\n    'host' => '{d.host()}',\n    '{snake}' => '{mark(v)}',\n];",
    )


def call_kwargs(d: Draw) -> str:
    """A secret handed to a client constructor as a keyword or named argument."""
    pw, tok, user, host = safe_pw(d), d.token(30, 48), d.user(), d.host()
    return one(
        d,
        lambda: f'conn = psycopg.connect(host="{host}", user="{user}", password="{mark(pw)}", dbname="app")',
        lambda: f'r = redis.Redis(host="{host}", port=6379, password="{mark(pw)}", ssl=True)',
        lambda: f'ssh.connect("{host}", username="{user}", password="{mark(pw)}", timeout=10)',
        lambda: f'client = MongoClient("{host}", 27017, username="{user}", password="{mark(pw)}")',
        lambda: (
            f'ctx = snowflake.connector.connect(user="{user}", password="{mark(pw)}", account="acme-eu1")'
        ),
        lambda: f'val client = ApiClient(baseUrl = "https://api.example.test", apiKey = "{mark(tok)}")',
        lambda: (
            f'var client = new ApiClient(endpoint: "https://api.example.test", secretKey: "{mark(tok)}");'
        ),
        lambda: f'let client = Client(host: "{host}", user: "{user}", password: "{mark(pw)}")',
        lambda: f'Net::SFTP.start("{host}", "{user}", password: "{mark(pw)}") do |sftp|',
        lambda: f'let conn = Db.connect ~host:"{host}" ~user:"{user}" ~password:"{mark(pw)}" ()',
        lambda: (
            f'{{:ok, pid}} = Postgrex.start_link(hostname: "{host}", username: "{user}", password: "{mark(pw)}")'
        ),
        lambda: (
            f'val transactor = Transactor.fromDriverManager[IO](url, user = "{user}", pass = "{mark(pw)}")'
        ),
    )


def api_collections(d: Draw) -> str:
    """Credentials in API-client files: Postman environments, .http files, Bruno, Hurl, HTTPie, k6."""
    tok, pw, user = d.token(32, 52, URLSAFE), safe_pw(d), d.user()
    return one(
        d,
        lambda: (
            '{\n  "name": "staging",\n  "values": [\n    {"key": "baseUrl", "value": "https://api.example.test", '
            f'"enabled": true}},\n    {{"key": "apiKey", "value": "{mark(tok)}", "type": "secret", "enabled": true}}\n  ]\n}}'
        ),
        lambda: (
            f"@host = https://api.example.test\n@token = {mark(tok)}\n\nGET {{{{host}}}}/v1/me\nAuthorization: Bearer {{{{token}}}}"
        ),
        lambda: (
            f"get {{\n  url: https://api.example.test/v1/orders\n}}\n\nauth:bearer {{\n  token: {mark(tok)}\n}}"
        ),
        lambda: f"GET https://api.example.test/v1/orders\n[BasicAuth]\n{user}: {mark(pw)}\nHTTP 200",
        lambda: f"http --auth {user}:{mark(pw)} GET https://api.example.test/v1/orders",
        lambda: f"https -A bearer -a {mark(tok)} api.example.test/v1/me",
        lambda: (
            "export default function () {\n  http.get('https://api.example.test/v1/orders', {\n"
            f"    headers: {{ 'X-Auth-Secret': '{mark(tok)}' }},\n  }});\n}}"
        ),
        lambda: (
            f"_type: environment\nname: Base Environment\ndata:\n  base_url: https://api.example.test\n  auth_secret: {mark(tok)}"
        ),
        lambda: f"curlie -H 'X-Bearer-Token: {mark(tok)}' https://api.example.test/v1/me",
    )


def platform_setters(d: Draw) -> str:
    """Platform CLIs that set a secret from their command line."""
    v, up = slot_value(d), spell(d.pick(NAMES), "UPPER")
    return one(
        d,
        lambda: f"doppler secrets set {up}='{mark(v)}' --project billing --config prd",
        lambda: f"pulumi config set --secret {spell(d.pick(NAMES), 'camel')} {mark(v)}",
        lambda: f"netlify env:set {up} {mark(v)} --context production",
        lambda: f'railway variables --set "{up}={mark(v)}" --service api',
        lambda: f"supabase secrets set {up}={mark(v)} --project-ref {d.chars(20, string.ascii_lowercase)}",
        lambda: f'firebase functions:config:set payments.{name(d, "snake")}="{mark(v)}"',
        lambda: f'dotnet user-secrets set "Billing:{name(d, "pascal")}" "{mark(v)}"',
        lambda: f"echo '{mark(v)}' | npx wrangler secret put {up}",
        lambda: f"vercel env add {up} production <<< '{mark(v)}'",
        lambda: f"flyctl deploy --build-secret {up}={mark(v)}",
        lambda: f"render env set {up}={mark(v)} --service srv-{d.chars(20, LOWER_ALNUM)}",
        lambda: f"az webapp config appsettings set -g rg-prod -n api-prod --settings {up}={mark(v)}",
    )


def manifests_and_init(d: Draw) -> str:
    """Values in service manifests: Secret data in base64, cloud-init, unit files, server directives."""
    pw, user, up = safe_pw(d), d.user(), spell(d.pick(NAMES), "UPPER")
    return one(
        d,
        lambda: (
            f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: billing-db\ntype: Opaque\ndata:\n  username: "
            f"{base64.b64encode(user.encode()).decode()}\n  {name(d, 'camel')}: {mark(base64.b64encode(pw.encode()).decode())}"
        ),
        lambda: (
            f"#cloud-config\nchpasswd:\n  expire: false\n  users:\n    - name: {user}\n      password: {mark(pw)}\n      type: text"
        ),
        lambda: (
            f'[Service]\nUser=billing\nEnvironment="{up}={mark(pw)}"\nExecStart=/usr/local/bin/billing serve'
        ),
        lambda: (
            f'[program:worker]\ncommand=/srv/app/bin/worker\nenvironment=APP_ENV="prod",{up}="{mark(pw)}"'
        ),
        lambda: f'$ cat /etc/pgbouncer/userlist.txt\n"{user}" "{mark(pw)}"',
        lambda: f"userlist admins\n    user {user} insecure-password {mark(pw)}",
        lambda: f"bind 0.0.0.0\nport 6379\nrequirepass {mark(pw)}\nmaxmemory 256mb",
        lambda: f"listeners.tcp.default = 5672\ndefault_user = {user}\ndefault_pass = {mark(pw)}",
        lambda: (
            f'<Location /admin>\n  AuthLDAPBindDN "cn={user},dc=corp,dc=example"\n  AuthLDAPBindPassword "{mark(pw)}"\n</Location>'
        ),
        lambda: (
            f'location /api/ {{\n    proxy_pass http://backend;\n    proxy_set_header X-Upload-Token "{mark(d.token(32, 40))}";\n}}'
        ),
        lambda: (
            f"services:\n  api:\n    image: acme/api:2.4\n    environment:\n      - {up}={mark(pw)}\n      - LOG_LEVEL=info"
        ),
    )


def url_userinfo_rare(d: Draw) -> str:
    """Userinfo in URL schemes, and driver and login strings, none of the other splits write."""
    pw, user, host = safe_pw(d), d.user(), d.host()
    return one(
        d,
        lambda: (
            f"git+https://{user}:{mark(d.token(36, 40))}@git.example.test/acme/shared-lib.git@v1.4.2#egg=shared-lib"
        ),
        lambda: f"hdbuserstore SET BILLING {host}:30015 {user.upper()} {mark(pw)}",
        lambda: f"BROKER_URL=stomp+ssl://{user}:{mark(pw)}@mq.example.test:61614",
        lambda: f"export RESTIC_REPOSITORY=rest:https://{user}:{mark(pw)}@backup.example.test:8000/{user}",
        lambda: f"duplicity /srv/data b2://{d.hex(12)}:{mark('K' + d.token(30, 30))}@acme-backups/srv",
        lambda: f"ffmpeg -re -i in.mp4 -f flv 'rtmp://{user}:{mark(pw)}@live.example.test/app/stream'",
        lambda: f"DATABASE_URL=cockroachdb://{user}:{mark(pw)}@{host}:26257/defaultdb?sslmode=verify-full",
        lambda: f'cluster = Cluster("couchbases://{user}:{mark(pw)}@{host}")',
        lambda: f"bteq <<'EOF'\n.LOGON tdprod/{user},{mark(pw)};\nSELECT SESSION;\n.LOGOFF;\nEOF",
        lambda: (
            f'sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{mark(pw)}";'
        ),
        lambda: (
            f'{{"urls": "turn:turn.example.test:3478", "username": "{user}", "credential": "{mark(pw)}"}}'
        ),
        lambda: f"trojan://{mark(d.token(20, 32))}@{host}:443?security=tls#eu-1",
    )


# -- cookies and session values --


def session_cookie(d: Draw) -> tuple[str, str]:
    """A session cookie of a product none of the other splits names, with its value's shape."""
    makers: list[Callable[[], tuple[str, str]]] = [
        lambda: ("mod_auth_openidc_session", d.uuid()),
        lambda: ("MoodleSession", d.chars(26, LOWER_ALNUM)),
        lambda: ("i_like_gitea", d.hex(16)),
        lambda: ("_gh_sess", d.b64(120).replace("=", "%3D").replace("+", "%2B").replace("/", "%2F")),
        lambda: ("roundcube_sessid", d.chars(32, LOWER_ALNUM)),
        lambda: ("oc_sessionPassphrase", d.token(128, 128)),
        lambda: ("KEYCLOAK_IDENTITY", jwt(d, {"sid": d.uuid(), "typ": "Serialized-ID"})),
        lambda: ("authjs.session-token", d.b64url(40) + "." + d.b64url(200)),
        lambda: ("beaker.session.id", d.hex(32)),
        lambda: ("koa.sess", d.b64(48).rstrip("=")),
        lambda: ("directus_session_token", jwt(d, {"id": d.uuid(), "session": d.token(64, 64)})),
        lambda: ("pb_auth", "%7B%22token%22%3A%22" + jwt(d, {"collectionId": d.token(15, 15)}) + "%22%7D"),
        lambda: (
            "sb-" + d.chars(20, string.ascii_lowercase) + "-auth-token",
            "base64-" + d.b64(180).rstrip("="),
        ),
        lambda: ("__client", jwt(d, {"id": "client_" + d.token(27, 27), "rotating_token": d.token(20, 20)})),
    ]
    return d.pick(makers)()


def cookie_devtools(d: Draw) -> str:
    """A session cookie in browser-automation and devtools exports."""
    n, v = session_cookie(d)
    return one(
        d,
        lambda: (
            f'{{\n  "cookies": [\n    {{\n      "name": "{n}",\n      "value": "{mark(v)}",\n      "domain": "app.example.test",\n'
            '      "path": "/",\n      "httpOnly": true,\n      "secure": true,\n      "sameSite": "Lax"\n    }\n  ],\n  "origins": []\n}'
        ),
        lambda: (
            f'        "cookies": [\n          {{\n            "name": "{n}",\n            "value": "{mark(v)}",\n            "path": "/"'
        ),
        lambda: f"cy.setCookie('{n}', '{mark(v)}')\ncy.visit('/settings')",
        lambda: f"await page.setCookie({{ name: '{n}', value: '{mark(v)}', domain: 'app.example.test' }});",
        lambda: (
            f'fetch("https://app.example.test/api/me", {{\n  "headers": {{\n    "accept": "*/*",\n    "cookie": "{n}={mark(v)}"\n  }},\n  "method": "GET"\n}});'
        ),
        lambda: f"{n}\t{mark(v)}\tapp.example.test\t/\tSession\t{len(n) + len(v)}\t✓\t✓\tLax",
        lambda: (
            f"await context.addCookies([{{ name: '{n}', value: '{mark(v)}', url: 'https://app.example.test' }}]);"
        ),
    )


def session_stores(d: Draw) -> str:
    """Session identifiers where the server keeps them: tables, key-value stores, session files."""
    sid = one(d, lambda: d.token(32, 32), lambda: d.hex(40), lambda: d.chars(26, LOWER_ALNUM))
    return one(
        d,
        lambda: (
            f"app=> select sid, expire from session order by expire desc limit 1;\n"
            f"               sid                |         expire\n----------------------------------+-------------------------\n"
            f" {mark(sid)} | 2026-12-08 10:42:01+00\n(1 row)"
        ),
        lambda: (
            f'127.0.0.1:6379> KEYS sess:*\n1) "sess:{mark(sid)}"\n127.0.0.1:6379> TTL sess:{mark(sid)}\n(integer) 86211'
        ),
        lambda: (
            f"$ sudo ls -l /var/lib/php/sessions\n-rw------- 1 www-data www-data 412 Dec  7 10:42 sess_{mark(sid)}"
        ),
        lambda: (
            f"mysql> select session_key, expire_date from django_session limit 1;\n| {mark(sid)} | 2026-12-21 10:42:01.118 |"
        ),
        lambda: f"memcached: get session:{mark(sid)}\nVALUE session:{mark(sid)} 0 118",
        lambda: f"DEBUG session resumed: store=redis key=koa:sess:{mark(sid)} user=42",
        lambda: (
            f"> db.sessions.findOne()\n{{ _id: '{mark(sid)}', expires: ISODate('2026-12-21T10:42:01Z') }}"
        ),
    )


# -- random-looking tokens near credential words --


def near(d: Draw) -> str:
    return one(d, lambda: d.token(30, 48), lambda: d.hex(d.pick([32, 40])), lambda: d.b64(d.pick([24, 32])))


def console_banners(d: Draw) -> str:
    """Tools printing a credential once, as it was created, with their own words around it."""
    v = near(d)
    user = d.user()
    return one(
        d,
        lambda: (
            f"$ influx auth create --all-access --org acme\nID\t\t\tDescription\tToken\n{d.hex(16)}\t\tci\t\t{mark(v)}"
        ),
        lambda: (
            f"Unseal Key 1: {mark(d.b64(33))}\nUnseal Key 2: {mark(d.b64(33))}\n\nInitial Root Token: {mark('hvb.' + d.token(24, 24))}"
        ),
        lambda: (
            f"$ consul acl bootstrap\nAccessorID:       {d.uuid()}\nSecretID:         {mark(d.uuid())}\nDescription:      Bootstrap Token"
        ),
        lambda: (
            f"$ nomad acl bootstrap\nAccessor ID  = {d.uuid()}\nSecret ID    = {mark(d.uuid())}\nName         = Bootstrap Token"
        ),
        lambda: (
            f"$ mc admin user svcacct add local ci\nAccess Key: {d.chars(20, UPPER_ALNUM)}\nSecret Key: {mark(d.token(40, 40))}"
        ),
        lambda: (
            f"Your new API key (it will not be shown again):\n\n    {mark(v)}\n\nStore it somewhere safe."
        ),
        lambda: f"✔ Created deploy credential 'ci-eu'\n  value: {mark(v)}\n  expires: 2027-03-07",
        lambda: f'$ rabbitmqctl add_user {user} {mark(safe_pw(d))}\nAdding user "{user}" ...',
        lambda: (
            f"Generated app password for mail: {mark(' '.join(d.chars(4, string.ascii_lowercase) for _ in range(4)))}"
        ),
    )


def traceback_locals(d: Draw) -> str:
    """Tracebacks and failed assertions that print the local variables and values they held."""
    v, nm = near(d), name(d, "snake")
    return one(
        d,
        lambda: (
            f"    def test_refund(client):\n>       assert resp.status_code == 200\nE       assert 401 == 200\n\n"
            f"client     = <FlaskClient <Flask 'billing'>>\n{nm:<10} = '{mark(v)}'\nresp       = <WrapperTestResponse 401>"
        ),
        lambda: (
            f"│ ╭──────────── locals ─────────────╮\n│ │ {nm} = '{mark(v)}' │\n│ │    url = 'https://api.example.test' │\n│ ╰─────────────────────────────────╯"
        ),
        lambda: f"E       AssertionError: expected header Authorization: Bearer {mark(v)} to be rejected",
        lambda: f"Frame run in /srv/app/worker.py at line 88\n    {nm} = '{mark(v)}'\n    retries = 3",
        lambda: (
            f"thread 'main' panicked at src/auth.rs:41:9:\ninvalid api token {mark(v)}: expected a signed value\nnote: run with `RUST_BACKTRACE=1`"
        ),
        lambda: f'● signs requests with the webhook secret\n\n    Expected: ""\n    Received: "{mark(v)}"',
        lambda: f"(Pdb) p settings.{nm}\n'{mark(v)}'\n(Pdb) c",
    )


# -- known prefixes' bodies --


def invented_prefixes(d: Draw) -> str:
    """Keys of made-up providers, in the shapes real providers use (prefix, random body, checksum)."""

    def checked(prefix: str, n: int) -> str:
        body = d.token(n, n)
        return prefix + body + base62_crc32(body)

    token = one(
        d,
        lambda: checked("qnt_live_", 32),
        lambda: "hlx-sk-" + d.hex(48),
        lambda: f"orb1.{d.b64url(24)}.{d.b64url(32)}",
        lambda: checked("pnd_pat_", 36),
        lambda: "zrk_" + d.chars(40, LOWER_ALNUM),
        lambda: "mrl-api-v2-" + d.hex(40),
        lambda: "kv8_" + d.chars(52, B32.lower()),
        lambda: "lmn_sk_prod_" + d.token(48, 48),
        lambda: f"cfx.{d.hex(32)}.{d.b64url(32)}",
        lambda: checked("trv_tok_", 30),
        lambda: "ASTRA-" + "-".join(d.chars(8, UPPER_ALNUM) for _ in range(4)),
        lambda: "wbx_" + d.pick(["test", "live"]) + "_" + d.token(40, 40, URLSAFE),
    )
    return d.pick(
        [
            f"{mark(token)}",
            f"client = Acme(api_key=os.getenv('ACME_KEY', '{mark(token)}'))",
            f"Authorization: Bearer {mark(token)}",
            f"- key: {mark(token)}",
            f"got {mark(token)} from the dashboard",
        ]
    )


def ci_and_cluster(d: Draw) -> str:
    """Runner registration, analysis and cluster-join tokens of CI and orchestration tools."""
    swarm = f"SWMTKN-1-{d.chars(50, LOWER_ALNUM)}-{d.chars(25, LOWER_ALNUM)}"
    return one(
        d,
        lambda: (
            f"gitlab-runner register --url https://git.example.test --token {mark('glrt-' + d.token(20, 20, URLSAFE))}"
        ),
        lambda: (
            f"gitlab-runner register --non-interactive --registration-token {mark('GR1348941' + d.token(20, 20, URLSAFE))}"
        ),
        lambda: (
            f"sonar-scanner -Dsonar.host.url=https://sonar.example.test -Dsonar.token={mark(d.pick(['sqp_', 'squ_', 'sqa_']) + d.hex(40))}"
        ),
        lambda: (
            f"curl -u {d.user()}:{mark('11' + d.hex(32))} https://jenkins.example.test/job/build/buildWithParameters"
        ),
        lambda: (
            f"TEAMCITY_TOKEN={mark('eyJ0eXAiOiAiVENWMiJ9.' + d.token(36, 36, URLSAFE) + '.' + d.b64url(48))}"
        ),
        lambda: (
            f"octo push --package app.1.4.2.zip --server https://octopus.example.test --apiKey {mark('API-' + d.chars(27, UPPER_ALNUM))}"
        ),
        lambda: (
            f"kubeadm join 10.0.0.10:6443 --token {mark(d.chars(6, LOWER_ALNUM) + '.' + d.chars(16, LOWER_ALNUM))} --discovery-token-ca-cert-hash sha256:{d.hex(64)}"
        ),
        lambda: f"docker swarm join --token {mark(swarm)} 10.0.0.10:2377",
        lambda: f"contentful space export --management-token {mark('CFPAT-' + d.token(43, 43, URLSAFE))}",
        lambda: f"FLY_API_TOKEN={mark('fo1_' + d.token(43, 43, URLSAFE))}",
        lambda: f"rdme openapi ./openapi.json --key={mark('rdme_' + d.chars(70, LOWER_ALNUM))}",
    )


def backend_platforms(d: Draw) -> str:
    """Keys of backend, observability and job platforms none of the other splits name."""
    token = one(
        d,
        lambda: (
            "glc_"
            + base64.b64encode(
                json.dumps(
                    {"o": str(d.r.randint(10**5, 10**6)), "n": "ci", "k": d.token(24, 24), "m": {"r": "eu"}},
                    separators=(",", ":"),
                ).encode()
            )
            .decode()
            .rstrip("=")
        ),
        lambda: "napi_" + d.chars(64, LOWER_ALNUM),
        lambda: "unkey_" + d.token(24, 24),
        lambda: d.pick(["tr_dev_", "tr_prod_"]) + d.token(20, 20),
        lambda: "signkey-prod-" + d.hex(64),
        lambda: "xaat-" + d.uuid(),
        lambda: "sk-helicone-" + "-".join(d.chars(7, LOWER_ALNUM) for _ in range(4)),
        lambda: "vercel_blob_rw_" + d.token(16, 16) + "_" + d.token(30, 30),
        lambda: (
            "prod:"
            + d.pick(["happy", "brave", "quiet"])
            + "-otter-"
            + d.chars(3, string.digits)
            + "|"
            + d.b64url(60)
        ),
    )
    return d.pick(
        [
            f"export PLATFORM_KEY={mark(token)}",
            f"    key: {mark(token)}",
            f"└─ {mark(token)}",
            f"const api = createClient({{ token: '{mark(token)}' }});",
        ]
    )


# -- cloud keys --


def edge_and_storage(d: Draw) -> str:
    """Credentials of CDN, edge and object-storage providers none of the other splits name."""
    return one(
        d,
        lambda: (
            f"[default]\nclient_secret = {mark(d.b64(32))}\nhost = akab-{d.chars(16, LOWER_ALNUM)}-{d.chars(16, LOWER_ALNUM)}.luna.akamaiapis.net\n"
            f"access_token = {mark('akab-' + d.chars(16, LOWER_ALNUM) + '-' + d.chars(16, LOWER_ALNUM))}\n"
            f"client_token = {mark('akab-' + d.chars(16, LOWER_ALNUM) + '-' + d.chars(16, LOWER_ALNUM))}"
        ),
        lambda: (
            f"CLOUDINARY_URL=cloudinary://{d.chars(15, string.digits)}:{mark(d.token(27, 27, URLSAFE))}@acme-media"
        ),
        lambda: f"export LINODE_TOKEN={mark(d.hex(64))}",
        lambda: f"curl -H 'AccessKey: {mark(d.uuid() + '-' + d.uuid()[:23])}' https://api.bunny.net/pullzone",
        lambda: f"GCORE_PERMANENT_API_TOKEN={mark(str(d.r.randint(1000, 99999)) + '$' + d.hex(128))}",
        lambda: f"fastly compute publish --token {mark(d.token(32, 32, URLSAFE))}",
        lambda: (
            f"[r2]\ntype = s3\nprovider = Cloudflare\naccess_key_id = {d.hex(32)}\nsecret_access_key = {mark(d.hex(64))}"
        ),
        lambda: f"export IONOS_TOKEN={mark(jwt(d, {'iss': 'ionoscloud', 'kid': d.uuid()}))}",
    )


def regional_clouds(d: Draw) -> str:
    """Keys of regional clouds none of the other splits name, in their own config syntaxes."""
    return one(
        d,
        lambda: (
            f'bce_access_key_id = "{"ALTAK" + d.token(17, 17)}"\nbce_secret_access_key = "{mark(d.hex(32))}"'
        ),
        lambda: f"export JDC_ACCESS_KEY={d.hex(32).upper()}\nexport JDC_SECRET_KEY={mark(d.hex(32).upper())}",
        lambda: (
            f"[default]\naccess_key = {d.chars(20, UPPER_ALNUM)}\nsecret_key = {mark(d.chars(40, UPPER_ALNUM))}\nregion = eu-west-2\nendpoint = fcu.eu-west-2.outscale.com"
        ),
        lambda: (
            f"OS_ACCESS_KEY={d.chars(20, UPPER_ALNUM)}\nOS_SECRET_KEY={mark(d.token(40, 40))}\nOS_REGION_NAME=eu-de"
        ),
        lambda: f"mgc config set api-key {mark(d.uuid())} --region br-se1",
        lambda: f"SELECTEL_API_TOKEN={mark(d.token(25, 25) + '_' + d.chars(6, string.digits))}",
        lambda: f"TWC_TOKEN={mark(jwt(d, {'login': d.user(), 'is_api_key': True, 'jti': d.uuid()}))}",
        lambda: (
            f"nhncloud:\n  appkey: {d.token(16, 16)}\n  secretkey: {mark(d.token(32, 32))}\n  region: KR1"
        ),
        lambda: f"STACKIT_SERVICE_ACCOUNT_TOKEN={mark(jwt(d, {'sub': d.uuid(), 'iss': 'stackit'}))}",
        lambda: (
            f"[DEFAULT]\nuser=ocid1.user.oc1..aaaa{d.chars(56, LOWER_ALNUM)}\nkey_file=~/.oci/oci_api_key.pem\npass_phrase={mark(safe_pw(d))}\nregion=sa-saopaulo-1"
        ),
    )


# -- private keys --


def recovery_keys(d: Draw) -> str:
    """Disk and account recovery keys in their own grouped, checksummed forms."""

    def bitlocker() -> str:
        return "-".join(f"{d.r.randrange(0, 65536) * 11:06d}" for _ in range(8))

    def matrix() -> str:
        raw = b"\x8b\x01" + d.raw(32)
        parity = 0
        for b in raw:
            parity ^= b
        text = b58(raw + bytes([parity]))
        return " ".join(text[i : i + 4] for i in range(0, len(text), 4))

    def github_codes() -> str:
        return "\n".join(mark(f"{d.hex(5)}-{d.hex(5)}") for _ in range(4))

    return one(
        d,
        lambda: f"BitLocker Drive Encryption recovery key\n\nRecovery Key:\n{mark(bitlocker())}",
        lambda: (
            f"manage-bde -protectors -get C:\n    Numerical Password:\n      ID: {{{d.uuid().upper()}}}\n      Password:\n        {mark(bitlocker())}"
        ),
        lambda: f"Your Security Key (store it safely):\n{mark(matrix())}",
        lambda: f"github-recovery-codes.txt\n{github_codes()}",
        lambda: f"Recovery Key 1: {mark(d.b64(33))}\nRecovery Key 2: {mark(d.b64(33))}",
        lambda: (
            f"Backup codes\n{mark(d.chars(4, string.digits) + ' ' + d.chars(4, string.digits))}\n{mark(d.chars(4, string.digits) + ' ' + d.chars(4, string.digits))}"
        ),
    )


def keysets_and_master_keys(d: Draw) -> str:
    """Symmetric and application master keys in their frameworks' own files and encodings."""
    tink = json.dumps(
        {
            "primaryKeyId": d.r.randint(10**8, 4 * 10**9),
            "key": [
                {
                    "keyData": {
                        "typeUrl": "type.googleapis.com/google.crypto.tink.AesGcmKey",
                        "value": "\x01",
                        "keyMaterialType": "SYMMETRIC",
                    },
                    "status": "ENABLED",
                    "outputPrefixType": "TINK",
                }
            ],
        },
        indent=2,
    )
    return one(
        d,
        lambda: tink.replace(
            '"\\u0001"', '"' + mark(base64.b64encode(b"\x1a\x20" + d.raw(32)).decode()) + '"'
        ),
        lambda: f"PASERK={mark('k4.secret.' + d.b64url(64))}",
        lambda: f'local_key = "{mark("k4.local." + d.b64url(32))}"',
        lambda: f"FIELD_ENCRYPTION_KEY={mark(base64.urlsafe_b64encode(d.raw(32)).decode())}",
        lambda: f"$ cat config/master.key\n{mark(d.hex(32))}",
        lambda: (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n"
            f"    providers:\n      - aescbc:\n          keys:\n            - name: key1\n              secret: {mark(d.b64(32))}"
        ),
        lambda: f"APP_KEY=base64:{mark(d.b64(32))}",
        lambda: (
            f"openssl enc -aes-256-cbc -K {mark(d.hex(64))} -iv {d.hex(32)} -in dump.sql -out dump.sql.enc"
        ),
    )


def overlay_identities(d: Draw) -> str:
    """Node identities of overlay and mesh networks: their secret halves, in their own files."""

    def nebula() -> str:
        label = d.pick(["NEBULA X25519 PRIVATE KEY", "NEBULA ED25519 PRIVATE KEY"])
        size = 32 if "X25519" in label else 64
        return (
            f"-----BEGIN {label}-----\n{mark(base64.b64encode(d.raw(size)).decode())}\n-----END {label}-----"
        )

    return one(
        d,
        lambda: (
            f"$ sudo cat /var/lib/zerotier-one/identity.secret\n{d.hex(10)}:0:{d.hex(128)}:{mark(d.hex(128))}"
        ),
        nebula,
        lambda: f'{{\n  PrivateKey: {mark(d.hex(128))}\n  Peers: ["tls://ygg.example.test:443"]\n}}',
        lambda: (
            f'    "privateKey": "{mark(d.hex(64))}",\n    "publicKey": "{d.chars(52, "0123456789bcdfghjklmnpqrstuvwxyz")}.k",'
        ),
        lambda: (
            f"$ cat /etc/tinc/mesh/ed25519_key.priv\n-----BEGIN ED25519 PRIVATE KEY-----\n{mark(base64.b64encode(d.raw(96)).decode())}\n-----END ED25519 PRIVATE KEY-----"
        ),
    )


# -- values split over lines --


def adjacency(d: Draw) -> str:
    v = d.token(48, 80)
    n = 3 if len(v) >= 66 else 2
    size = -(-len(v) // n)
    parts = [v[i : i + size] for i in range(0, len(v), size)]
    quoted = [f'"{mark(p)}"' for p in parts]
    return one(
        d,
        lambda: "SIGNING_TOKEN = (\n    " + "\n    ".join(quoted) + "\n)",
        lambda: "static const char *upload_token =\n    " + "\n    ".join(quoted) + ";",
        lambda: 'String apiKey = """\n    ' + "\\\n    ".join(mark(p) for p in parts) + '""";',
        lambda: 'let bearer = """\n    ' + "\\\n    ".join(mark(p) for p in parts) + '\n    """',
        lambda: (
            "cat > .token <<'EOF'\n"
            + "\n".join(mark(p) for p in parts)
            + "\nEOF\nexport UPLOAD_TOKEN=$(tr -d '\\n' < .token)"
        ),
        lambda: 'const SECRETKEY: &str = "' + "\\\n    ".join(mark(p) for p in parts) + '";',
        lambda: (
            "$keyphrase  = '"
            + mark(parts[0])
            + "';\n"
            + "".join(f"$keyphrase .= '{mark(p)}';\n" for p in parts[1:]).rstrip("\n")
        ),
        lambda: "set apikey [join [list \\\n    " + " \\\n    ".join(mark(p) for p in parts) + '] ""]',
        lambda: '{\n  "signingKeyChunks": [\n    ' + ",\n    ".join(quoted) + "\n  ]\n}",
        lambda: "  uploadToken = lib.concatStrings [\n    " + "\n    ".join(quoted) + "\n  ];",
    )


def soft_wrap(marked: str, width: int) -> str:
    """Quoted-printable soft line breaks (``=`` at the end of a line) every ``width`` visible
    characters; a marked piece over a break is closed before it and reopened after it."""
    out: list[str] = []
    inside, col = False, 0
    for ch in marked:
        if ch in (MARK_OPEN, MARK_CLOSE):
            inside = ch == MARK_OPEN
            out.append(ch)
            continue
        if col == width:
            out += [MARK_CLOSE, "=\n", MARK_OPEN] if inside else ["=\n"]
            col = 0
        out.append(ch)
        col += 1
    return "".join(out).replace(MARK_OPEN + MARK_CLOSE, "")


def soft_breaks(d: Draw) -> str:
    v = d.token(60, 96, URLSAFE)

    def qp() -> str:
        body = f'<a href=3D"https://app.example.test/invite/accept?token={mark(v)}">Accept</a>'
        return "Content-Transfer-Encoding: quoted-printable\n\n" + soft_wrap(body, 75)

    def psql() -> str:
        width = 30
        cells = [v[i : i + width] for i in range(0, len(v), width)]
        rows = [f" {d.user():<8} | {mark(cells[0]):<{width}}…"] + [f" {'':<8} …{mark(c)}" for c in cells[1:]]
        return (
            "app=> \\pset format wrapped\napp=> select owner, token from api_tokens;\n  owner   | token\n----------+"
            + "-" * width
            + "\n"
            + "\n".join(rows)
        )

    def box() -> str:
        width = 36
        cells = [v[i : i + width] for i in range(0, len(v), width)]
        lines = [f"│ ci-eu  │ {mark(c)}{' ' * (width - len(c))} │" for c in cells]
        return (
            "┏━━━━━━━━┳"
            + "━" * (width + 2)
            + "┓\n┃ name   ┃ secret"
            + " " * (width - 5)
            + "┃\n"
            + "\n".join(lines)
        )

    def fold() -> str:
        cells = [v[i : i + 32] for i in range(0, len(v), 32)]
        return "$ fold -w 32 ~/.config/acme/upload_token\n" + "\n".join(mark(c) for c in cells)

    def md_table() -> str:
        cut = d.r.randint(24, len(v) - 24)
        return f"| env | bearer token |\n|-----|--------------|\n| prod | `{mark(v[:cut])}`<br>`{mark(v[cut:])}` |"

    return one(d, qp, psql, box, fold, md_table)


# -- mail --


def mail_relays_and_apps(d: Draw) -> str:
    pw, user = safe_pw(d), f"{d.user()}@example.test"
    return one(
        d,
        lambda: (
            f"$ cat /etc/nullmailer/remotes\nsmtp.example.test smtp --port=587 --starttls --user={user} --pass={mark(pw)}"
        ),
        lambda: (
            f"[Work]\nsource = imaps://{user.replace('@', '%40')}:{mark(pw)}@imap.example.test\noutgoing = smtps+plain://{user.replace('@', '%40')}:{mark(safe_pw(d))}@smtp.example.test"
        ),
        lambda: f"define( 'WPMS_SMTP_USER', '{user}' );\ndefine( 'WPMS_SMTP_PASS', '{mark(pw)}' );",
        lambda: f"SMTP_HOST_ADDR=smtp.example.test\nSMTP_USER_NAME={user}\nSMTP_USER_PWD={mark(pw)}",
        lambda: (
            f"mail__transport=SMTP\nmail__options__auth__user={user}\nmail__options__auth__pass={mark(pw)}"
        ),
        lambda: (
            f"poll imap.example.test protocol IMAP\n    user '{user}' there with password '{mark(pw)}' is '{d.user()}' here"
        ),
        lambda: (
            f"set mta=smtp://{user.replace('@', '%40')}@smtp.example.test:587 smtp-use-starttls\nset smtp-auth-password={mark(pw)}"
        ),
        lambda: (
            f"[retriever]\ntype = SimpleIMAPSSLRetriever\nserver = imap.example.test\nusername = {user}\npassword = {mark(pw)}"
        ),
        lambda: (
            f"kcadm.sh update realms/acme -s 'smtpServer.password={mark(pw)}' -s 'smtpServer.user={user}'"
        ),
    )


def mail_providers(d: Draw) -> str:
    def ses_smtp() -> str:
        return "B" + d.b64(32)[:43]

    return one(
        d,
        lambda: (
            f"curl https://app.mailpace.com/api/v1/send -H 'MailPace-Server-Token: {mark(d.uuid())}' -d @mail.json"
        ),
        lambda: (
            f"SMTP_USER={'AKIA' + d.chars(16, UPPER_ALNUM)}\nSMTP_PASS={mark(ses_smtp())}\nSMTP_HOST=email-smtp.eu-west-1.amazonaws.com"
        ),
        lambda: (
            f"curl -H 'X-Server-API-Key: {mark(d.token(24, 24))}' https://postal.example.test/api/v1/send/message"
        ),
        lambda: f"LETTERMINT_API_TOKEN={mark(d.token(40, 40))}",
        lambda: f"MAILTRAP_TOKEN={mark(d.hex(32))}",
        lambda: f"SMTP2GO_API_KEY={mark('api-' + d.hex(32).upper())}",
        lambda: f"> Authorization: Zoho-enczapikey {mark('wSsVR6' + d.token(140, 140, ALNUM + '+/') + '==')}",
        lambda: f"ELASTICEMAIL_APIKEY={mark(d.hex(96).upper())}",
    )


# -- prose, in languages none of the other splits hold --

PROSE_GROUPS: dict[str, dict[str, list[str]]] = {
    "pacific-and-americas": {
        "mi": [
            "Ko te kupuhipa ko {pw}",
            "kupuhipa o te tūmau: {pw}",
            "Ko te PIN ko {pin}",
            "Ko te kī API ko {key}",
        ],
        "sm": [
            "O le upu faalilolilo o {pw}",
            "upu faalilolilo a le server: {pw}",
            "O le numera PIN o {pin}",
            "O le ki API o {key}",
        ],
        "haw": [
            "ʻO ka ʻōlelo huna ʻo {pw}",
            "ʻōlelo huna o ka pūnaewele: {pw}",
            "ʻO ka helu PIN ʻo {pin}",
            "ʻO ke kī API ʻo {key}",
        ],
        "to": [
            "Ko e lea fufū ko {pw}",
            "lea fufū ʻo e sēvea: {pw}",
            "Ko e fika PIN ko {pin}",
            "Ko e kī API ko {key}",
        ],
        "qu": [
            "Pakasqa simiqa {pw} kan",
            "servidorpa pakasqa siminqa: {pw}",
            "PIN yupayqa {pin} kan",
            "API llaveqa {key} kan",
        ],
        "gn": [
            "Ñe'ẽñemi ha'e {pw}",
            "servidor ñe'ẽñemi: {pw}",
            "PIN papapy ha'e {pin}",
            "API ñemboty ha'e {key}",
        ],
        "ceb": [
            "Ang tinago nga pulong kay {pw}",
            "tinago nga pulong sa server: {pw}",
            "Ang PIN nimo kay {pin}",
            "Ang yawe sa API kay {key}",
        ],
    },
    "africa-east-and-south": {
        "om": [
            "Jechi icciitii {pw} dha",
            "jecha icciitii server: {pw}",
            "Lakkoofsi PIN {pin} dha",
            "Furtuun API {key} dha",
        ],
        "ti": ["መሕለፊ ቃል {pw} እዩ", "ናይ ሰርቨር መሕለፊ ቃል: {pw}", "ቁጽሪ PIN {pin} እዩ", "መፍትሕ API {key} እዩ"],
        "ny": [
            "Mawu achinsinsi ndi {pw}",
            "mawu achinsinsi a seva: {pw}",
            "Nambala ya PIN ndi {pin}",
            "Kiyi ya API ndi {key}",
        ],
        "sn": [
            "Pasiwedhi ndiyo {pw}",
            "pasiwedhi yesevha: {pw}",
            "Nhamba yePIN ndiyo {pin}",
            "Kiyi yeAPI ndiyo {key}",
        ],
        "st": [
            "Phasewete ke {pw}",
            "phasewete ya seva: {pw}",
            "Nomoro ya PIN ke {pin}",
            "Senotlolo sa API ke {key}",
        ],
        "wo": [
            "Baatu jàll bi mooy {pw}",
            "baatu jàll bu serwëer bi: {pw}",
            "PIN bi mooy {pin}",
            "Caabi API bi mooy {key}",
        ],
        "ln": [
            "Liloba ya nkuku ezali {pw}",
            "liloba ya nkuku ya serveur: {pw}",
            "Motango ya PIN ezali {pin}",
            "Fungola ya API ezali {key}",
        ],
        "lg": [
            "Ekigambo ky'ekyama kye {pw}",
            "ekigambo ky'ekyama ekya seva: {pw}",
            "Ennamba ya PIN ye {pin}",
            "Ekisumuluzo kya API kye {key}",
        ],
    },
    "europe-regional": {
        "fo": [
            "Loyniorðið er {pw}",
            "loyniorð til ambætaran: {pw}",
            "PIN-talið er {pin}",
            "API-lykilin er {key}",
        ],
        "oc": [
            "Lo senhal es {pw}",
            "senhal del servidor: {pw}",
            "Lo còdi PIN es {pin}",
            "La clau de l'API es {key}",
        ],
        "rm": [
            "Il pled-clav è {pw}",
            "pled-clav dal server: {pw}",
            "Il code PIN è {pin}",
            "La clav da l'API è {key}",
        ],
        "gsw": [
            "Ds Passwort isch {pw}",
            "s Passwort vom Server isch: {pw}",
            "Dr PIN isch {pin}",
            "Dr API-Schlüssu isch {key}",
        ],
        "nds": [
            "Dat Passwoort is {pw}",
            "Passwoort för den Server: {pw}",
            "Din PIN is {pin}",
            "De API-Slötel is {key}",
        ],
        "be": [
            "Пароль ад сервера — {pw}",
            "пароль да паштовай скрыні: {pw}",
            "PIN-код карткі — {pin}",
            "Ключ да API — {key}",
        ],
        "bs": [
            "Šifra za server glasi {pw}",
            "šifra od baze: {pw}",
            "PIN kod glasi {pin}",
            "API ključ glasi {key}",
        ],
        "ku": ["Şîfre {pw} e", "şîfreya serverê: {pw}", "Koda PIN-ê {pin} e", "Mifteya API {key} e"],
    },
    "himalaya-and-asia": {
        "bo": [
            "གསང་ཚིག་ནི་ {pw} རེད།",
            "ཞབས་ཞུ་འཕྲུལ་ཆས་ཀྱི་གསང་ཚིག: {pw}",
            "PIN ཨང་གྲངས་ {pin} རེད།",
            "API ལྡེ་མིག་ {key} རེད།",
        ],
        "dv": ["ޕާސްވޯޑަކީ {pw}", "ސާވަރުގެ ޕާސްވޯޑް: {pw}", "ޕިން ނަންބަރަކީ {pin}", "API ކީއަކީ {key}"],
        "mai": ["हमर पासवर्ड {pw} अछि", "सर्वरक पासवर्ड: {pw}", "पिन {pin} अछि", "API क कुंजी {key} अछि"],
        "kok": ["म्हजो पासवर्ड {pw} आसा", "सर्वराचो पासवर्ड: {pw}", "पिन {pin} आसा", "API चावी {key} आसा"],
        "bho": ["हमार पासवर्ड {pw} बा", "सर्वर के पासवर्ड: {pw}", "पिन नंबर {pin} बा", "API के चाभी {key} बा"],
        "yue": ["個密碼係 {pw}", "伺服器嘅密碼：{pw}", "PIN 碼係 {pin}", "API 條匙係 {key}"],
        "hmn": [
            "Tus lo zais yog {pw}",
            "lo zais ntawm server: {pw}",
            "Tus lej PIN yog {pin}",
            "Tus yuam sij API yog {key}",
        ],
        "ba": ["Серһүҙ — {pw}", "серверҙың серһүҙе: {pw}", "PIN-кодығыҙ — {pin}", "API асҡысы — {key}"],
    },
}
PROSE: dict[str, list[str]] = {lang: t for group in PROSE_GROUPS.values() for lang, t in group.items()}


def prose(languages: dict[str, list[str]]) -> Callable[[Draw], str]:
    """Cases take the group's languages in turn, so a dozen cases cover every language of it."""
    order = list(languages)

    def make(d: Draw) -> str:
        lang = order[nth(d, "lang") % len(order)]
        values = {
            "pw": one(d, lambda: d.password(), lambda: d.weak(), lambda: d.phrase().replace(" ", "_")),
            "pin": d.pin(),
            "key": one(d, lambda: d.token(26, 40), lambda: d.hex(32)),
        }
        return d.pick(languages[lang]).format(**{k: mark(v) for k, v in values.items()})

    return make


# -- look-alikes that must be kept --


def la_sums_and_addresses(d: Draw) -> str:
    def cid_v1() -> str:
        return "b" + base64.b32encode(b"\x01\x55\x12\x20" + d.raw(32)).decode().rstrip("=").lower()

    return one(
        d,
        lambda: f"$ sha512sum dist/app.tar.gz\n{mark(d.hex(128))}  dist/app.tar.gz",
        lambda: f"$ b3sum release.bin\n{mark(d.hex(64))}  release.bin",
        lambda: f"added {mark(cid_v1())} site/index.html",
        lambda: f"added {mark(b58(bytes([0x12, 0x20]) + d.raw(32)))} logo.png",
        lambda: (
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{mark(d.hex(64))}\nsize {d.r.randint(10**4, 10**8)}"
        ),
        lambda: f"sha256sums=('{mark(d.hex(64))}'\n            'SKIP')",
        lambda: (
            f"DIST app-1.4.2.tar.gz {d.r.randint(10**4, 10**7)} BLAKE2B {mark(d.hex(128))} SHA512 {mark(d.hex(128))}"
        ),
        lambda: f"Checksums-Sha256:\n {mark(d.hex(64))} {d.r.randint(10**3, 10**6)} app_1.4.2.orig.tar.xz",
        lambda: f"$ git rev-parse HEAD\n{mark(d.hex(40))}",
        lambda: f"docker.io/acme/api@{mark('sha256:' + d.hex(64))}",
    )


def la_platform_ids(d: Draw) -> str:
    def ulid() -> str:
        return d.chars(26, "0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    return one(
        d,
        lambda: f"job {mark(ulid())} enqueued on queue=default",
        lambda: f"instance: {mark('ocid1.instance.oc1.eu-frankfurt-1.' + d.chars(60, LOWER_ALNUM))}",
        lambda: f"< cf-ray: {mark(d.hex(16) + '-FRA')}",
        lambda: f"Deployment {mark('dpl_' + d.token(28, 28))} is ready",
        lambda: f"gid: {mark('gid://shopify/Product/' + str(d.r.randint(10**12, 10**13)))}",
        lambda: f"Sentry event {mark(d.hex(32))} captured",
        lambda: f"Container {mark(d.hex(64))} started",
        lambda: f"x-amzn-requestid: {mark(d.uuid())}",
        lambda: f"machine {mark(d.hex(14))} in region ams is now started",
        lambda: (
            f"ksuid={mark(d.chars(27, string.digits + string.ascii_uppercase + string.ascii_lowercase))} event=signup"
        ),
        lambda: f"msg_id={mark(str(d.r.randint(10**17, 10**18)))} channel=alerts",
    )


def la_public_identities(d: Draw) -> str:
    def ssh_pub() -> str:
        return base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0 " + d.raw(32)).decode()

    def spki_p256() -> str:
        head = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200")
        return base64.b64encode(head + b"\x04" + d.raw(64)).decode()

    def p256_vapid() -> str:
        return base64.urlsafe_b64encode(b"\x04" + d.raw(64)).rstrip(b"=").decode()

    return one(
        d,
        lambda: f"_443._tcp.example.test. IN TLSA 3 1 1 {mark(d.hex(64))}",
        lambda: f"VAPID_PUBLIC_KEY={mark(p256_vapid())}",
        lambda: f"Taproot address: {mark(bech32('bc', d.raw(32), witness_version=1, const=0x2BC830A3))}",
        lambda: "@cert-authority *.example.test " + mark("ssh-ed25519 " + ssh_pub()),
        lambda: f"example.test. 3600 IN DNSKEY 257 3 13 {mark(base64.b64encode(d.raw(64)).decode())}",
        lambda: f"web-01.example.test IN SSHFP 4 2 {mark(d.hex(64))}",
        lambda: (
            f"untrusted comment: minisign public key {d.hex(16).upper()}\n{mark(base64.b64encode(b'Ed' + d.raw(40)).decode())}"
        ),
        lambda: f"cosign.pub:\n-----BEGIN PUBLIC KEY-----\n{mark(spki_p256())}\n-----END PUBLIC KEY-----",
        lambda: f"ZeroTier address: {mark(d.hex(10))}",
    )


def la_docs_and_masked(d: Draw) -> str:
    return one(
        d,
        lambda: (
            "AccountName=devstoreaccount1;AccountKey="
            + mark("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
        ),
        lambda: f"  password: {mark('MWYyZDFlMmU2N2Rm')}   # from the Kubernetes docs example",
        lambda: (
            f'{{"kty":"oct","k":"{mark("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")}"}}'
        ),
        lambda: f"Secret key: {mark('sk-proj-…' + d.token(4, 4))}",
        lambda: f"Token      {mark('ghp_' + '*' * 36)}",
        lambda: f"API key: {mark('•' * 28 + d.token(4, 4))}",
        lambda: f"MAILER_DSN=smtp://user:{mark('<your-smtp-password>')}@smtp.example.test:587",
        lambda: f"stripe_key: {mark('sk_live_' + 'X' * 24)}",
        lambda: f"export UPLOAD_TOKEN={mark('${REDACTED}')}",
        lambda: f"password: {mark('<hidden>')}",
    )


def la_lookups_and_pipeline_vars(d: Draw) -> str:
    return one(
        d,
        lambda: f"  environment:\n    DB_PASSWORD: {mark('${ssm:/billing/prod/db-password}')}",
        lambda: f"DATABASE_PASSWORD={mark('berglas://acme-secrets/billing/db-password')}",
        lambda: "    environment {\n        NEXUS_PASS = " + mark("credentials('nexus-deploy')") + "\n    }",
        lambda: f"    environment:\n      DOCKER_PASSWORD:\n        from_secret: {mark('docker_password')}",
        lambda: f"  params:\n    password: {mark('((db-password))')}",
        lambda: (
            'db_password: "'
            + mark("{{ lookup('community.hashi_vault.hashi_vault', 'secret/data/db:password') }}")
            + '"'
        ),
        lambda: f"  DB_PASS: {mark('ref+vault://secret/data/billing#/password')}",
        lambda: "const dbPassword = " + mark('config.requireSecret("dbPassword")') + ";",
        lambda: (
            f"availableSecrets:\n  secretManager:\n  - versionName: {mark('projects/acme-prod/secrets/db-password/versions/latest')}\n    env: PASSWORD"
        ),
        lambda: (
            f'{{{{ with secret "{mark("database/creds/readonly")}" }}}}{{{{ .Data.password }}}}{{{{ end }}}}'
        ),
    )


def la_ciphertext(d: Draw) -> str:
    stamp = (1796000000 + d.r.randrange(10**6)).to_bytes(8, "big")
    fernet = base64.urlsafe_b64encode(b"\x80" + stamp + d.raw(16) + d.raw(48) + d.raw(32)).decode()
    return one(
        d,
        lambda: f"token = {mark(fernet)}",
        lambda: f"spring.datasource.password={mark('{cipher}' + d.hex(96))}",
        lambda: f"db::password: {mark('ENC[PKCS7,' + d.b64(180) + ']')}",
        lambda: f"$ etcdctl get /registry/secrets/default/db | head -c 40\n{mark('k8s:enc:aescbc:v1:key1:')}",
        lambda: f"-----BEGIN PGP MESSAGE-----\n\n{mark(wrap64(d.b64(300)))}\n-----END PGP MESSAGE-----",
        lambda: (
            f"$ cat config/credentials/production.yml.enc\n{mark(d.b64(120) + '--' + d.b64(12) + '--' + d.b64(16))}"
        ),
        lambda: (
            f"$ openssl enc -aes-256-cbc -pbkdf2 -a -in note.txt\n{mark(base64.b64encode(b'Salted__' + d.raw(56)).decode())}"
        ),
    )


def la_encoded_blobs(d: Draw) -> str:
    gif = base64.b64encode(b"GIF89a" + d.raw(120)).decode()
    pdf = wrap64(base64.b64encode(b"%PDF-1.7\n%" + d.raw(150)).decode(), 76)
    gz = base64.b64encode(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + d.raw(90)).decode()
    zipped = base64.b64encode(b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + d.raw(90)).decode()
    wire = base64.b64encode(b"\x0a\x24" + d.uuid().encode() + b"\x12\x04" + d.raw(20)).decode()
    return one(
        d,
        lambda: f'     "output_type": "display_data",\n     "data": {{\n      "image/gif": "{mark(gif)}",',
        lambda: f"release payload: {mark(gz)}",
        lambda: f"fixture = '{mark(zipped)}'",
        lambda: (
            "begin 644 logo.bin\n"
            + mark("M" + d.chars(60, "".join(chr(c) for c in range(33, 96))))
            + "\n`\nend"
        ),
        lambda: (
            f'Content-Disposition: attachment; filename="report.pdf"\nContent-Transfer-Encoding: base64\n\n{mark(pdf)}'
        ),
        lambda: f"grpc-status: 0\ngrpc-web payload={mark(wire)}",
    )


def la_prose_no_value(d: Draw) -> str:
    return turn(
        d,
        [
            mark("Kua pau te kupuhipa, tēnā hurihia."),
            mark("Phasewete ya hao e fositse."),
            mark("Loyniorðið er ov stutt."),
            mark("Lo senhal es pas corrècte."),
            mark("Ekigambo ky'ekyama si kituufu."),
            mark("Tus lo zais tsis yog lawm."),
            mark("Пароль састарэў, змяніце яго."),
            mark("Jechi icciitii kee dogoggora."),
            mark("伺服器個密碼要改，聽日再講。"),
            mark("Ds Passwort isch abglaufe."),
        ],
    )


def la_help_text(d: Draw) -> str:
    return turn(
        d,
        [
            "  " + mark("-p, --password <PASSWORD>   Password to use (env: PGPASSWORD)"),
            mark("Enter passphrase for key '/home/dev/.ssh/id_ed25519':"),
            mark('FATAL:  password authentication failed for user "deploy"'),
            mark("error: invalid token (expected 40 hex characters, got 12)"),
            "      " + mark("--api-key string     API key (defaults to $ACME_API_KEY)"),
            mark("Hint: the token expires in 3600 seconds; request a new one with `acme login`."),
            mark("WARNING: Using a password on the command line interface can be insecure."),
            mark("Your password must contain at least 12 characters, one digit and one symbol."),
            mark("Re-enter new password:"),
            mark("401 Unauthorized: missing or expired bearer token"),
            mark("The secret key is read from the keychain at startup."),
        ],
    )


def specs() -> list[Spec]:
    out = [
        Spec("slot", "config-dialects-unseen", "secret", "file", config_dialects),
        Spec("slot", "client-keyword-arguments", "secret", "file", call_kwargs),
        Spec("slot", "api-client-collections", "secret", "file", api_collections),
        Spec("slot", "platform-secret-setters", "secret", "command", platform_setters),
        Spec("slot", "manifests-units-and-server-directives", "secret", "file", manifests_and_init),
        Spec("slot", "url-userinfo-and-driver-strings", "secret", "inline", url_userinfo_rare),
        Spec("cookie", "automation-and-devtools-exports", "secret", "file", cookie_devtools),
        Spec("cookie", "server-side-session-stores", "secret", "session", session_stores),
        Spec("token-near-word", "shown-once-console-banners", "secret", "session", console_banners),
        Spec("token-near-word", "traceback-locals-and-assertions", "secret", "inline", traceback_locals),
        Spec("prefix-token", "invented-provider-keys", "secret", "chat", invented_prefixes),
        Spec("prefix-token", "ci-runner-and-cluster-join", "secret", "command", ci_and_cluster),
        Spec("prefix-token", "backend-platform-keys", "secret", "inline", backend_platforms),
        Spec("cloud-key", "edge-cdn-and-object-storage", "secret", "file", edge_and_storage),
        Spec("cloud-key", "regional-clouds-unseen", "secret", "file", regional_clouds),
        Spec("private-key", "recovery-keys-with-checksums", "secret", "inline", recovery_keys),
        Spec("private-key", "keysets-and-app-master-keys", "secret", "file", keysets_and_master_keys),
        Spec("private-key", "overlay-network-identities", "secret", "file", overlay_identities),
        Spec("split", "adjacent-literals-and-heredocs", "secret", "file", adjacency),
        Spec("split", "soft-breaks-and-wrapped-cells", "secret", "inline", soft_breaks),
        Spec("mail", "relays-clients-and-self-hosted", "secret", "file", mail_relays_and_apps),
        Spec("mail", "transactional-provider-keys", "secret", "log", mail_providers),
        Spec(
            "lookalike-hash",
            "sums-lists-and-content-addresses",
            "lookalike",
            "session",
            la_sums_and_addresses,
        ),
        Spec("lookalike-id", "jobs-requests-and-platform-ids", "lookalike", "log", la_platform_ids),
        Spec("lookalike-public", "dns-vapid-taproot-and-ca-keys", "lookalike", "file", la_public_identities),
        Spec("lookalike-example", "emulator-rfc-and-masked-keys", "lookalike", "file", la_docs_and_masked),
        Spec(
            "lookalike-reference",
            "lookups-and-pipeline-vars",
            "lookalike",
            "file",
            la_lookups_and_pipeline_vars,
        ),
        Spec("lookalike-reference", "app-and-transit-ciphertext", "lookalike", "inline", la_ciphertext),
        Spec("lookalike-data", "notebook-archive-and-wire-blobs", "lookalike", "inline", la_encoded_blobs),
        Spec("lookalike-prose", "no-value-third-languages", "lookalike", "chat", la_prose_no_value),
        Spec("lookalike-prose", "help-prompts-and-errors", "lookalike", "log", la_help_text),
    ]
    out += [Spec("prose", group, "secret", "chat", prose(langs)) for group, langs in PROSE_GROUPS.items()]
    return out


# -- the transcript text around a snippet of this half --

_FILES = [
    "deploy/values.prod.yaml",
    "ops/bootstrap.md",
    "config/app.local.toml",
    "infra/secrets.auto.tfvars",
    "src/settings.py",
]
_SAY = [
    "Looking at how the service authenticates in staging.",
    "The smoke test returns 401; checking what the job was given.",
    "Reading what the last deploy wrote.",
    "Here is what the helper printed.",
]
_PS = ["PS C:\\src\\billing> ", "PS /home/dev/api> "]
_ROOT = ["[root@web-01 ~]# ", "root@db-02:/srv# "]
_STARSHIP = ["~/src/api on  main [!] via 🐍 v3.12.3\n❯ ", "billing on  feat/auth via ⬢ v22.11.0\n❯ "]


def _same(prefix: str) -> Iterator[str]:
    while True:
        yield prefix


def _counted(fmt: str, start: int) -> Iterator[str]:
    n = start
    while True:
        yield fmt.format(n=n)
        n += 1


def _file(draw: Draw, snippet: str) -> str:
    r = draw.r
    path = r.choice(_FILES)
    style = r.randrange(4)
    if style == 0:  # Aider's whole-file edit, as its chat history records it
        return f"{path}\n```\n{snippet}\n```\n\n> Applied edit to {path}  \n> Commit {draw.hex(7)} Update {path}  "
    if style == 1:  # bat's file view
        rule = "───────┬" + "─" * 40
        return f"{rule}\n       │ File: {path}\n───────┼{'─' * 40}\n" + prefixed(
            snippet, _counted("{n:>6}   │ ", r.randint(1, 60))
        )
    if style == 2:  # Cline's file content block
        return f'<file_content path="{path}">\n{snippet}\n</file_content>'
    return f"Observation: FileReadObservation\n[Read from /workspace/{path} is successful.]\n{snippet}"


def _command(draw: Draw, snippet: str) -> str:
    r = draw.r
    style = r.randrange(4)
    if style == 0:
        return f"{r.choice(_PS)}{snippet}\n{r.choice(_PS)}"
    if style == 1:
        return f"{r.choice(_ROOT)}{snippet}\n{r.choice(_ROOT)}"
    if style == 2:
        return f"Command: {snippet}\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0"
    return f"{r.choice(_STARSHIP)}{snippet}"


def _session(draw: Draw, snippet: str) -> str:
    """A program's output: a Codex or Gemini shell-tool result, or a console with a starship prompt."""
    r = draw.r
    style = r.randrange(3)
    if style == 0:
        return (
            f"Chunk ID: {draw.hex(6)}\nWall time: 0.{r.randint(1, 9)} seconds\nProcess exited with code 0\n"
            f"Original token count: {r.randint(20, 400)}\nOutput:\n{snippet}"
        )
    if style == 1:
        return (
            f"Command: ./scripts/diag.sh\nDirectory: (root)\nOutput: {snippet}\nError: (none)\nExit Code: 0"
        )
    return f"{r.choice(_STARSHIP)}./scripts/diag.sh\n{snippet}"


def _chat(draw: Draw, snippet: str) -> str:
    r = draw.r
    style = r.randrange(3)
    if style == 0:  # Aider's chat history: each user line after "#### "
        return prefixed(snippet, _same("#### ")) + "\n\nI'll wire that into the config."
    if style == 1:
        who = r.choice(["ana-k", "mtoure", "sigridh", "devpriya"])
        return f"**@{who}** commented:\n\n{snippet}\n\n---"
    who = r.choice(["Kemal", "Lina", "Ayo", "Rangi"])
    return f"{who} — Today at {r.randint(8, 18)}:{r.randint(0, 59):02d}\n{snippet}"


def _log(draw: Draw, snippet: str) -> str:
    r = draw.r
    style = r.randrange(3)
    if style == 0:
        stamp = f"2026-12-07T10:{r.randint(10, 59)}:{r.randint(10, 59)}.{draw.chars(7, string.digits)}Z "
        return prefixed(snippet, _same(stamp))
    if style == 1:
        step = r.randint(4, 19)
        return prefixed(snippet, _counted(f"#{step} {{n}}.{r.randint(100, 999)} ", r.randint(0, 9)))
    return prefixed(snippet, _same(f"2026-12-07T10:42:0{r.randint(0, 9)}+00:00 app[web.{r.randint(1, 3)}]: "))


def frame(draw: Draw, snippet: str, kind: Frame) -> str:
    """``snippet`` as it sits in a transcript of this half: Aider's chat history and whole-file edits,
    ``bat``, Cline and OpenHands file views, PowerShell, root and starship consoles, Gemini and Codex
    shell-tool results, GitHub comments, Discord copies, and CI, BuildKit and Heroku log prefixes."""
    if kind == "file":
        return _file(draw, snippet)
    if kind == "command":
        return _command(draw, snippet)
    if kind == "session":
        return _session(draw, snippet)
    if kind == "chat":
        return _chat(draw, snippet)
    if kind == "log":
        return _log(draw, snippet)
    r = draw.r  # inline
    style = r.randrange(3)
    if style == 0:
        return f"[execute_command for './scripts/diag.sh'] Result:\nCommand executed.\nOutput:\n{snippet}"
    if style == 1:
        return f"Observation: CmdOutputObservation\n{snippet}\n[The command completed with exit code 0.]"
    return f"{r.choice(_SAY)}\n\n```text\n{snippet}\n```"
