"""Issue 33, tokens, cookies and mail settings by structure: a webhook URL's random path, a token
paired with a numeric id, cookie pairs wherever a cookie's syntax puts them, mail programs' password
fields; each with look-alikes of the same shape kept. Every fake here is made up for these tests
(none is taken from the generated corpora)."""

from __future__ import annotations

import base64
import random
import string

import pytest

from pipeline.redaction import Redactor
from tests.pipeline.redaction.secret_fakes import URLSAFE, mixed
from tests.pipeline.redaction.verdicts import caught, kept

_R = random.Random(0x33_70)
LOWER_ALNUM = string.ascii_lowercase + string.digits


# -- webhook URLs: the random path after a hook's word is the secret --

HOOK = mixed(_R, 30, LOWER_ALNUM)
HOOK_SHORT = mixed(_R, 8, LOWER_ALNUM)
HOOK_KEY = mixed(_R, 26, URLSAFE)
HOOK_TAIL = "W3" + mixed(_R, 40, URLSAFE)

WEBHOOKS = [
    (f"https://notify.example.org/hooks/{HOOK}", HOOK),
    (
        f"curl -X POST https://automate.example.net/hooks/relay/51234987/{HOOK_SHORT}/ -d @payload.json",
        HOOK_SHORT,
    ),
    (f'WEBHOOK="https://ops.example.com/api/v3/webhooks/81723/{HOOK_KEY}"', HOOK_KEY),
    (f"POST https://trigger.example.io/run/nightly/with/key/{HOOK_KEY} done", HOOK_KEY),
    (
        f"https://corp.example.org/webhook/{mixed(_R, 8, 'abcdef0123456789')}-ab12-4c3d-8e9f-{mixed(_R, 12, 'abcdef0123456789')}"
        f"/Incoming/{mixed(_R, 32, 'abcdef0123456789')}/{HOOK_TAIL}",
        HOOK_TAIL,
    ),
    (f"notify: https://hooks.example.dev/incoming/{HOOK}?channel=ops", HOOK),
]


@pytest.mark.parametrize(("text", "secret"), WEBHOOKS)
def test_the_random_path_of_a_webhook_url_is_redacted(redactor: Redactor, text: str, secret: str) -> None:
    caught(redactor, text, secret)


WEBHOOK_LOOKALIKES = [
    "https://github.com/acme/api/settings/hooks/412345678",  # a numeric id
    "cp .git/hooks/pre-commit.sample .git/hooks/pre-commit",  # a local path, no URL
    "see https://docs.example.org/webhooks/v2/getting-started for the payload",
    "https://chat.example.org/hooks/<your-webhook-id>",  # documented placeholders
    "https://notify.example.org/hooks/XXXXXXXXXXXXXXXXXXXXXXXXXX",
    "https://ci.example.org/job/api/webhook/",
    "https://events.example.org/webhooks/deploy_done/status",
]


@pytest.mark.parametrize("text", WEBHOOK_LOOKALIKES)
def test_webhook_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)


# -- cookies: a pair whose name says session, wherever a cookie's syntax puts it --

SESS = mixed(_R, 40, URLSAFE)
SESS_HEX = mixed(_R, 32, "abcdef0123456789")

COOKIES = [
    # set in code: a cookie's constructor with named members, whatever the language spells them
    (f'browser.set_cookie(name: "shop_sess", value: "{SESS}")', SESS),
    (f'jar = append(jar, &http.Cookie{{Name: "portal-sid", Value: "{SESS_HEX}", Path: "/"}})', SESS_HEX),
    (f"ctx.add_cookies([{{'name': 'wiki_session', 'value': '{SESS}', 'domain': '.example.org'}}])", SESS),
    # outside a header: an access log's quoted cookie string, a browser database's row
    (f'10.0.0.7 - - "GET /home HTTP/1.1" 200 512 "-" "curl/8.1" "forum_session={SESS}; lang=en"', SESS),
    (f"sqlite> select host, name, value from cookies;\n.example.org|crm_sessid|{SESS_HEX}", SESS_HEX),
    # a browser-enforced cookie prefix says it is a cookie, whatever its name
    (f"__Host-GAPS={SESS}; __Secure-next.auth.session={SESS_HEX}", SESS),
    (f"__Secure-app_sid={SESS_HEX}", SESS_HEX),
]


@pytest.mark.parametrize(("text", "secret"), COOKIES)
def test_session_cookies_in_any_syntax(redactor: Redactor, text: str, secret: str) -> None:
    caught(redactor, text, secret)


COOKIE_LOOKALIKES = [
    "Set-Cookie: cookie_consent=accepted; Path=/; Max-Age=31536000",
    "the app sets two cookies, sessionid and csrftoken, both HttpOnly",
    'browser.set_cookie(name: "theme", value: "dark")',
    'jar = append(jar, &http.Cookie{Name: "lang", Value: "en-GB"})',
    "session_timeout=3600 session_store=redis",
    "__Host-prefs=compact; __Secure-consent=yes",
    '"forum_session=<session-cookie>; lang=en"',
]


@pytest.mark.parametrize("text", COOKIE_LOOKALIKES)
def test_cookie_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)


# -- mail settings: a program's password field in its own syntax --

MAIL_PW = "Rq7.vMzkt2wa"
MAIL_TOKEN = "ml-" + mixed(_R, 26, URLSAFE)

MAIL = [
    # keyword, blank, value: mail sync clients and MTAs' own config files (a diff, a gutter)
    (f"IMAPStore remote\nUser ops@example.org\nPass {MAIL_PW}\nSSLType IMAPS", MAIL_PW),
    (f"+account backup\n+SmtpPassword  {MAIL_PW}\n+tls on", MAIL_PW),
    (f"    12\tsmtp_pass {MAIL_PW}", MAIL_PW),
    # a passwd-file entry whose scheme says the password is stored in clear
    (f"ops@example.org:{{CLEARTEXT}}{MAIL_PW}:5000:5000::/var/mail/ops::", MAIL_PW),
    (f"userPassword: {{PLAIN}}{MAIL_PW}", MAIL_PW),
    # sendmail's AuthInfo fields: the P field is the password
    (f'AuthInfo:relay.example.org "U:ops" "I:ops" "P:{MAIL_PW}" "M:LOGIN PLAIN"', MAIL_PW),
    (f'AuthInfo: "U:smmsp" "P={MAIL_PW}"', MAIL_PW),
    # a service's client handed its key by position
    (f'mailer = transactional.Client("{MAIL_TOKEN}")', MAIL_TOKEN),
    (f"api = MailClient('{MAIL_TOKEN}', timeout=10)", MAIL_TOKEN),
]


@pytest.mark.parametrize(("text", "secret"), MAIL)
def test_mail_passwords_in_their_programs_syntax(redactor: Redactor, text: str, secret: str) -> None:
    caught(redactor, text, secret)


MAIL_LOOKALIKES = [
    "Pass through the proxy first",
    'PassCmd "pass show mail/ops"\nUser ops@example.org',
    "ops@example.org:{SHA512-CRYPT}$6$rounds=5000$saltsalt$abcdefghijklmnop:5000:5000::",
    'AuthInfo:relay.example.org "U:ops" "P:<password>" "M:PLAIN"',
    'client = httpx.Client("https://api.example.org/v2")',
    "Password please, then press enter",
]


@pytest.mark.parametrize("text", MAIL_LOOKALIKES)
def test_mail_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)


def test_a_status_line_after_a_password_keyword_is_kept(redactor: Redactor) -> None:
    kept(redactor, "ssh: login failed\nPassword incorrect\nPass skipped\n")


# -- tokens that carry an id beside their secret --

HEX = "0123456789abcdef"
ID_PART = "tkn" + mixed(_R, 13)
SECRET_HEX = mixed(_R, 64, HEX)
OWNER = base64.urlsafe_b64encode(str(_R.randint(10**17, 10**19)).encode()).decode().rstrip("=")
OWNER_TOKEN = f"{OWNER}.{mixed(_R, 6, URLSAFE)}.{mixed(_R, 36, URLSAFE)}"
PAIR_SECRET = mixed(_R, 32, HEX)
PAIR = f"7/{_R.randint(10**15, 10**16)}/{_R.randint(10**15, 10**16)}:{PAIR_SECRET}"
BOT = f"{_R.randint(10**8, 10**10)}:{mixed(_R, 35, URLSAFE)}"

ID_TOKENS = [
    # an id part, a dot, a long hex secret
    (f"→ {ID_PART}.{SECRET_HEX}", SECRET_HEX),
    # a token that opens with its owner's numeric id in base64
    (f"use {OWNER_TOKEN} for the bot", OWNER_TOKEN.rsplit(".", 1)[1]),
    # numeric ids, a colon, the secret
    (f"[{PAIR}]", PAIR_SECRET),
    (f"bot token: {BOT}", BOT.split(":")[1]),
    (f"curl -s https://api.example.org/bot{BOT}/getMe", BOT.split(":")[1]),
]


@pytest.mark.parametrize(("text", "secret"), ID_TOKENS)
def test_tokens_carrying_an_id_and_a_secret(redactor: Redactor, text: str, secret: str) -> None:
    caught(redactor, text, secret)


ID_LOOKALIKES = [
    f"release.{mixed(_R, 64, HEX)}.tar.gz",  # a digest after a word
    f"sha256.{mixed(_R, 64, HEX)}",
    f"{base64.urlsafe_b64encode(b'hello world, ok').decode()}.{mixed(_R, 6, URLSAFE)}.png",
    "at 12:30:45 the job 1700000000:done finished",
    f"blob 1712345678:{'0' * 32}",
    f"2024-05-01T10:00:00Z{mixed(_R, 40, HEX)}",
]


@pytest.mark.parametrize("text", ID_LOOKALIKES)
def test_id_token_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)


# -- tokens near a credential's word: other constructions --

NEAR = mixed(_R, 34)
NEAR_HEX = mixed(_R, 40, HEX)

NEAR_WORD = [
    (f"ok {NEAR_HEX} ← that's the signing secret for staging", NEAR_HEX),
    (f"use this one: {NEAR} (it's the build robot's token)", NEAR),
    (f"- Rotated the preview token; new value _{NEAR}", NEAR),
    # a prompt that confirms the secret typed at the prompt before it
    (f"API secret: {'*' * 12}\nConfirm: {NEAR}\n", NEAR),
    (f"New password: {NEAR}\nRetype new password: {NEAR}\n", NEAR),
    (f"Enter token: [hidden]\nRepeat to verify: {NEAR}", NEAR),
]


@pytest.mark.parametrize(("text", "secret"), NEAR_WORD)
def test_tokens_near_a_credential_word_in_other_constructions(
    redactor: Redactor, text: str, secret: str
) -> None:
    caught(redactor, text, secret)


NEAR_LOOKALIKES = [
    f"{NEAR_HEX} ← that's the commit the token was rotated in",
    "Confirm: yes\nRepeat the request with a new token",
    f"Username: deploy\nConfirm: {mixed(_R, 12, LOWER_ALNUM)}-build",
]


@pytest.mark.parametrize("text", NEAR_LOOKALIKES)
def test_near_word_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)


# -- a cloud key's id: the credential's other half, when its value is random and not hex --

UPPER_ALNUM = string.ascii_uppercase + string.digits
KEY_ID = "QH1" + mixed(_R, 40, UPPER_ALNUM)
KEY_ID_MIXED = "ABKQ" + mixed(_R, 21, URLSAFE)

KEY_IDS = [
    (f"$ storage hmac create\nAccess ID:   {KEY_ID}\nSecret:      {mixed(_R, 40)}", KEY_ID),
    (
        f"access_key:\n  id: {mixed(_R, 20, LOWER_ALNUM)}\n  key_id: {KEY_ID_MIXED}\nsecret: {mixed(_R, 40)}",
        KEY_ID_MIXED,
    ),
    (f'{{"accessId": "{KEY_ID}", "region": "eu-1"}}', KEY_ID),
    # the line before names an account: that name is not the key id's
    (f"key for ci@build.example-account.org\nAccess ID: {KEY_ID}", KEY_ID),
]


@pytest.mark.parametrize(("text", "secret"), KEY_IDS)
def test_a_cloud_keys_random_id_is_redacted(redactor: Redactor, text: str, secret: str) -> None:
    caught(redactor, text, secret)


KEY_ID_LOOKALIKES = [
    "signing key_id: 3AA5C34371567BD2",  # a PGP key's id: hex
    f'"key_id": "{mixed(_R, 8, HEX)}-{mixed(_R, 4, HEX)}-4{mixed(_R, 3, HEX)}-a{mixed(_R, 3, HEX)}-{mixed(_R, 12, HEX)}"',
    f'"private_key_id": "{mixed(_R, 40, HEX)}"',
    "access_id: 104857600",
    "key_id: ci-runner-signing-key",
]


@pytest.mark.parametrize("text", KEY_ID_LOOKALIKES)
def test_key_id_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)


# -- a name and a value as two unquoted members (YAML lists, HCL blocks) --

NV_PW = "k4!mQz9rv"
NV_KEY = mixed(_R, 44)

NAME_VALUE = [
    (
        f"containers:\n  - env:\n    - name: DB_PASSWD\n      value: '{NV_PW}'\n    - name: MODE\n      value: fast",
        NV_PW,
    ),
    (f'   7\tsetting {{\n   8\t  name  = "SIGNING_SECRET"\n   9\t  value = "{NV_KEY}"\n  10\t}}', NV_KEY),
]


@pytest.mark.parametrize(("text", "secret"), NAME_VALUE)
def test_a_name_and_its_value_as_two_unquoted_members(redactor: Redactor, text: str, secret: str) -> None:
    caught(redactor, text, secret)


def test_a_plain_name_and_value_pair_is_kept(redactor: Redactor) -> None:
    kept(redactor, "env:\n  - name: LOG_FORMAT\n    value: json\n  - name: TOKEN_TTL\n    value: '3600'\n")


# -- more credential slots: a DSN's userinfo before a protocol's address, an element with
# attributes, a block named for its secrets, a password's rarer spellings --

SLOT_PW = "tY7mqk2Rwz"
SLOT_UUID = (
    f"{mixed(_R, 8, HEX)}-{mixed(_R, 4, HEX)}-4{mixed(_R, 3, HEX)}-b{mixed(_R, 3, HEX)}-{mixed(_R, 12, HEX)}"
)

MORE_SLOTS = [
    (f'db, err := sql.Open("mysql", "svc:{SLOT_PW}@tcp(10.1.2.3:3306)/orders?tls=true")', SLOT_PW),
    (f"DSN=reporter:{SLOT_PW}@unix(/run/mysqld/mysqld.sock)/stats", SLOT_PW),
    (f'<Account>\n  <Login>ops</Login>\n  <Password type="plain">{SLOT_PW}</Password>\n</Account>', SLOT_PW),
    (
        f'vault {{\n  secrets {{\n    bootstrap = "{SLOT_UUID}"\n    agent     = "{SLOT_PW}"\n  }}\n}}',
        SLOT_UUID,
    ),
    (f'  31\tsecrets {{\n  32\t  bootstrap = "{SLOT_UUID}"\n  33\t}}', SLOT_UUID),
    (f"my $db_pswd = '{SLOT_PW}';", SLOT_PW),
    (f'PSSWD="{SLOT_PW}"', SLOT_PW),
    # a package manager's basic-auth setting: the user and the password by position
    (f"$ pdm config http-basic.mirror deployer {SLOT_PW}", SLOT_PW),
]


@pytest.mark.parametrize(("text", "secret"), MORE_SLOTS)
def test_more_credential_slots(redactor: Redactor, text: str, secret: str) -> None:
    caught(redactor, text, secret)


MORE_SLOT_LOOKALIKES = [
    'sql.Open("mysql", "svc@tcp(10.1.2.3:3306)/orders")',  # no password
    'secrets {\n  enabled = true\n  backend = "file"\n}',
]


@pytest.mark.parametrize("text", MORE_SLOT_LOOKALIKES)
def test_more_slot_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    kept(redactor, text)
