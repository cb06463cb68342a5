"""Rules that need context: URLs with credentials, auth headers, private-key blocks, password
flags on command lines, ``.netrc``, ``aws configure`` prompts and Kubernetes Secret data blocks."""

from __future__ import annotations

import re

from pipeline.redaction.filters import (
    Level,
    basic_credentials,
    dotted_name,
    enough_distinct,
    has_digit,
    is_placeholder,
    is_reference,
    token_body_ok,
    value_verdict,
)
from pipeline.redaction.model import CONTEXT, STRUCTURE, Candidate, RegexRule, ScanRule, kept
from pipeline.redaction.placeholders import is_placeholder_value
from pipeline.redaction.reasons import Reason
from pipeline.redaction.values import QVAL as _QVAL
from pipeline.redaction.values import flag_value as _flag_value

_DB_SCHEMES = frozenset(
    b"""postgres postgresql mysql mariadb mongodb mongodb+srv redis rediss amqp amqps mssql sqlserver
    oracle cockroachdb clickhouse nats kafka memcached couchdb neo4j neo4j+s bolt cassandra elasticsearch
    influxdb rabbitmq mqtt mqtts stomp ldap ldaps snowflake db2 timescale sqlalchemy""".split()
)

_SCHEME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789+.-")
# scheme characters -> "a", others -> " ": the scheme's start is one translate and one rfind away
_SCHEME_MASK = bytes(97 if c in _SCHEME_CHARS else 32 for c in range(256))
_AUTH_CHAR = rb"(?:[^\s/?@\"'`\\<>\[\]{}]|\\u[0-9a-fA-F]{4})"
_URL_CRED = re.compile(
    rb"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,30})://"
    rb"(?P<user>(?:[^\s:/@\"'`\\<>\[\]{}]|\\u[0-9a-fA-F]{4}){0,128}+)"
    # the password runs to the authority's last ``@`` (an unescaped ``@`` may sit inside it); every
    # part is possessive, so a URL without credentials fails at once
    rb"(?::(?P<pw>(?:" + _AUTH_CHAR + rb"++|@(?=" + _AUTH_CHAR + rb"*+@))++))?"
    rb"@(?=[^\s/@\"'`\\<>\[\]{}?#]{1,255}(?:[\s/\"'`\\<>\[\]{}?#]|$))"
)
MAX_URL_PASSWORD = 256
_AT_WINDOW = 512
_SHORTEST = 3  # the engine's shortest secret
MIN_URL_TOKEN = 16
"""A user name without a password in a URL is a token when it is at least this long and random
(``https://<key>@o1.ingest.sentry.io/2``, ``https://<PAT>@dev.azure.com/...``); ``git@`` is a user."""
_TRAILING = b").,;:!?}]*"


_URL_FIELD_WORDS = frozenset(b"password passwd pass pwd pw".split())


def url_placeholder(pw: bytes) -> bool:
    """Only a template (``USER:PASSWORD``, ``${PW}``, ``<password>``, ``***``) is spared: any other
    password in a URL, however short or common (``root:hunter2``, ``postgres:postgres``, even
    ``user:password``, the commonest password of all), is one."""
    return (pw.isupper() and pw.lower() in _URL_FIELD_WORDS) or is_placeholder_value(pw)


def _url_credentials(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """Only the credential of a URL is a secret: its scheme, host, port and path stay."""
    # Neither user nor password holds a "/": a "/" before the first "@" means no credential (most
    # URLs), found by two byte searches instead of the pattern.
    at = buf.find(b"@", end, end + _AT_WINDOW)
    if buf.find(b"/", end, at if at >= 0 else end + _AT_WINDOW) >= 0:
        return 0
    lo = start - 31 if start > 31 else 0  # the scheme: up to 31 scheme characters before ``://``
    pos = lo + 1 + low[lo:start].translate(_SCHEME_MASK).rfind(b" ")
    while pos < start and not (97 <= low[pos] <= 122):
        pos += 1
    m = _URL_CRED.match(buf, pos)
    if m is None:
        return 0
    scheme = m.group("scheme").lower().split(b":")[-1]
    name = "db-url" if scheme in _DB_SCHEMES or scheme.startswith(b"jdbc") else "basic-auth-url"
    pw = m.group("pw")
    if pw is not None and len(pw) > MAX_URL_PASSWORD:
        return m.end()
    if pw is None:  # a user alone: a token only when it looks like one
        user = m.group("user")
        if len(user) >= MIN_URL_TOKEN and has_digit(user) and token_body_ok(user, 10):
            out.append((*m.span("user"), name, CONTEXT))
        return m.end()
    if url_placeholder(pw):
        out.append(kept(*m.span("pw"), name, Reason.PLACEHOLDER))
    elif len(pw) < _SHORTEST:  # too short to stand alone: the user goes with it
        out.append((m.start("user"), m.end("pw"), name, CONTEXT))
    else:
        out.append((*m.span("pw"), name, CONTEXT))
    return m.end()


MIN_LONG_BEARER = 12
"""A bearer value shorter than this is a token only when it mixes letters and digits."""


def _bearer_check(m: re.Match[bytes]) -> bool:
    v = m.group("v")
    if len(v) < MIN_LONG_BEARER:  # a short value must mix letters and digits (``Bearer x7Kq9``)
        return has_digit(v) and not v.isdigit() and token_body_ok(v, 4) and not is_reference(v)
    if not ((has_digit(v) or len(v) >= 24) and token_body_ok(v, 10)):
        return False
    # Code reaches a header through a quote, ``{`` or ``$``, none of which the value may hold; so a
    # dotted name with a digit right after ``Bearer`` is a token (``O0_WkGJ_nHUl76_SAR.IEWn``).
    return not is_reference(v) or (has_digit(v) and dotted_name(v))


def _basic_check(m: re.Match[bytes]) -> bool:
    v = m.group("v")
    if is_placeholder(v):
        return False
    if basic_credentials(v):
        return True
    context = m.string[max(0, m.start() - 40) : m.start()].lower()
    return b"authorization" in context and token_body_ok(v, 10)


MIN_HEADER_VALUE = 5
"""In an ``Authorization`` header any value is a credential, however short (``Bearer devtoken42``)."""


def _auth_check(m: re.Match[bytes]) -> bool:
    v = m.group("v")
    if len(v) < MIN_HEADER_VALUE or v.lower() in (b"bearer", b"basic") or is_placeholder(v):
        return False
    if is_reference(v) and not (has_digit(v) and not dotted_name(v)):
        return False  # a name (``Bearer token``, ``Bearer self.token``) rather than a value
    if _PARAMETER.search(v):
        return False  # ``Digest realm=acme``: parameters, not a credential
    return enough_distinct(v, min(4, len(v) // 2))


_PARAMETER = re.compile(rb"=[^=]")


def _auth_name(m: re.Match[bytes]) -> str:
    scheme = m.group("scheme")
    return "bearer-token" if scheme is not None and scheme.lower() == b"bearer" else "auth-header"


# The body may be quoted line by line (``> `` in Markdown or mail, ``# ``, a tool result's ``│ ``, an
# editor's numbered gutter ``  24→``).
_PEM_BODY = (
    rb"(?:[A-Za-z0-9+/=:,. \t\r\n>#|]++|\\+[nrt]|\xe2\x94\x82|\xe2\x86\x92|\\+u2(?:502|192)|-(?!----))*+"
)
_PEM = re.compile(
    rb"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----(?P<body>" + _PEM_BODY + rb")"
    rb"(?:-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----)?"
)
_PEM_PAYLOAD = re.compile(rb"[A-Za-z0-9+/]{32}")


def _pem_check(m: re.Match[bytes]) -> bool:
    return _PEM_PAYLOAD.search(m.string, m.start("body"), m.end("body")) is not None


_NETRC = re.compile(rb"(?:(?<=\s)|(?<=\\n)|^)password[ \t]+" + _QVAL)
_NETRC_GAP = (b" ", b"\t")
_AWS_PROMPT = re.compile(rb"(?i:secret access key)[ \t]*(?:\[[^\]\r\n]{0,40}\])?[ \t]*:[ \t]*" + _QVAL)


def _netrc(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if buf[end : end + 1] not in _NETRC_GAP:
        return 0  # ``password`` is not followed by a blank (``password=``, ``passwords``)
    m = _NETRC.match(low, start)
    if m is None or not (
        b"machine" in low[max(0, start - 300) : start] or b"login" in low[max(0, start - 300) : start]
    ):
        return 0
    s, e = _flag_value(buf, m, len(buf))
    reason = value_verdict(buf[s:e], Level.PASSWORD)
    out.append((s, e, "password", CONTEXT) if reason is None else kept(s, e, "password", reason))
    return e


def _aws_prompt(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _AWS_PROMPT.match(buf, start)
    if m is not None:
        s, e = _flag_value(buf, m, len(buf))
        reason = value_verdict(buf[s:e], Level.SECRET)
        name = "aws-secret-access-key"
        out.append((s, e, name, CONTEXT) if reason is None else kept(s, e, name, reason))
    return 0


_K8S_WINDOW = 4096
_K8S_DATA = re.compile(rb"data:[ \t]*(?=\r?\n|\\+n)")
_K8S_ITEM = re.compile(
    rb"(?:\r?\n|\\+n)(?P<indent>[ \t]+)[\"']?[\w.-]+[\"']?:[ \t]+(?P<q>\\*['\"])?(?P<v>[^\s'\"\\]{6,8192})"
)


def _k8s_secret(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``kind: Secret`` documents: every value under ``data:`` / ``stringData:`` is a secret."""
    lo = max(0, start - _K8S_WINDOW)
    sep = buf.rfind(b"---", lo, start)
    doc_start = sep + 3 if sep >= 0 else lo
    sep = buf.find(b"---", end, min(len(buf), end + _K8S_WINDOW))
    doc_end = sep if sep >= 0 else min(len(buf), end + _K8S_WINDOW)
    at = low.find(b"data:", doc_start, doc_end)
    while at >= 0:
        block = _K8S_DATA.match(low, at)
        at = low.find(b"data:", at + 5, doc_end)
        if block is None:
            continue
        pos = block.end()
        indent: bytes | None = None
        while True:
            m = _K8S_ITEM.match(buf, pos, doc_end)
            if m is None or (indent is not None and m.group("indent") != indent):
                break
            indent = m.group("indent")
            if is_placeholder(m.group("v")):
                out.append(kept(*m.span("v"), "k8s-secret", Reason.PLACEHOLDER))
            else:
                out.append((*m.span("v"), "k8s-secret", CONTEXT))
            pos = m.end()
    return doc_end


_USER_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-")
_MAIL_PASSWORD = re.compile(
    rb"@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}:(?P<v>[^\s:/@\"'\\<>]{3,128})(?=[\s\"'\\]|$)"
)


def _mail_password(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``user@example.com:password`` (Postfix's ``sasl_passwd``, a credentials list): a mailbox and
    its password joined by a colon; a port (digits) or a path (``git@host:org/repo``) is no password."""
    if not start or buf[start - 1] not in _USER_CHARS:
        return 0
    m = _MAIL_PASSWORD.match(buf, start)
    if m is None:
        return 0
    s, e = m.span("v")
    v = m.group("v")
    if v.isdigit() or url_placeholder(v):
        return m.end()
    reason = value_verdict(v, Level.LITERAL_PASSWORD)
    out.append((s, e, "password", CONTEXT) if reason is None else kept(s, e, "password", reason))
    return m.end()


def context_rules() -> list[RegexRule | ScanRule]:
    rules: list[RegexRule | ScanRule] = [
        ScanRule("url-credentials", (b"://",), _url_credentials),
        RegexRule(
            "bearer-token",
            (b"bearer",),
            re.compile(
                rb"(?:(?<![A-Za-z0-9_])|(?<=\\n))(?i:bearer)(?:[ \t]+|%20)(?P<v>[A-Za-z0-9._~+/=-]{5,8192})(?![A-Za-z0-9._~+/=-])"
            ),
            group="v",
            check=_bearer_check,
            priority=CONTEXT,
            whole_value_check=False,  # the check judges the value whole
        ),
        RegexRule(
            "basic-auth",
            (b"basic",),
            re.compile(
                rb"(?<![A-Za-z0-9_])(?i:basic)(?:[ \t]+|%20)(?P<v>[A-Za-z0-9+/]{8,2048}={0,2})(?![A-Za-z0-9+/=])"
            ),
            group="v",
            check=_basic_check,
            priority=CONTEXT,
            whole_value_check=False,  # the check judges the value whole
        ),
        RegexRule(
            "auth-header",
            (b"authorization",),
            re.compile(
                rb"(?i:authorization)\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?"
                rb"(?:(?P<scheme>(?i:token|bot|apikey|api-key|key|sso-key|ssws|dsn|hmac|sharedkey|gitlab-token|negotiate|ntlm"
                rb"|splunk|zoho-oauthtoken|klaviyo-api-key|pvetoken|bearer|(?!(?i:basic)[ \t])[A-Za-z][A-Za-z0-9._-]{1,30}))"
                rb"[ \t]+)?"
                rb"(?P<v>[A-Za-z0-9._~+/=:!#%&*@^|?-]{5,8192})(?![A-Za-z0-9._~+/=:!#%&*@^|?-]|\$|\{)"
            ),
            group="v",
            check=_auth_check,
            namer=_auth_name,
            priority=CONTEXT,
            whole_value_check=False,  # the check judges the value whole
        ),
        RegexRule(
            "private-key",
            (b"-----begin",),
            _PEM,
            check=_pem_check,
            priority=STRUCTURE,
            whole_value_check=False,
        ),
        ScanRule("password", (b"password",), _netrc),
        ScanRule("password", (b"@",), _mail_password),
        ScanRule("aws-secret-access-key", (b"secret access key",), _aws_prompt),
        ScanRule("k8s-secret", (b"kind: secret",), _k8s_secret),
    ]
    return rules
