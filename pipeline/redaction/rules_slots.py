"""Credential slots that are not ``name = value``: the slot's name and its value sit apart, and the
structure says which value the name is for.

- A record holding a name and a value as two members (``{"name": "AUTH_KEY", "value": "..."}``,
  App Service and Kubernetes env lists, exported cookie jars): the value is judged by the name, as
  an assignment's would be; in a record that is a cookie (it has a domain, a path, an expiry, or sits
  in a ``cookies`` list) the value is judged as a cookie's.
- SQL that sets a password (``IDENTIFIED BY '...'``, ``WITH PASSWORD '...'``): a literal password.
- A value stored under a name by a setter call (``localStorage.setItem("refresh", "...")``,
  ``cookies.set("sid", "...")``): judged by the name, or as a random token when the name says
  nothing.
- A browser's ``document.cookie``: its pairs, judged as a cookie header's are.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import Level, enough_distinct, is_placeholder, is_reference
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule, kept
from pipeline.redaction.rules_generic import classify
from pipeline.redaction.rules_session import COOKIE_PAIR, cookie_verdict

_RECORD_BACK = 800
"""How far before a ``value`` member its record may start."""
_VALUE_MEMBER = re.compile(rb"\\*[\"'][ \t]*[:=][ \t]*(?P<q>\\*[\"'])")
_NAME_MEMBER = re.compile(
    rb"(?<![A-Za-z0-9_])(?P<k>\\*[\"']?)(?i:name)(?P=k)[ \t]*[:=][ \t]*(?P<q>\\*[\"'])(?P<n>[^\"'\\\r\n]{1,128})(?P=q)"
)
_COOKIE_MEMBERS = re.compile(
    rb"(?i:\\*[\"'](?:domain|httponly|samesite|expires|expirationdate|hostonly)\\*[\"'])"
)
_VALUE_TEXT = re.compile(rb"[^\"'\\\r\n]{1,4096}")


def _record_value(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``"value": "..."`` in a record whose ``"name"`` member names a secret, or in a cookie."""
    if not start or buf[start - 1] not in b"\"'\\":
        return 0
    m = _VALUE_MEMBER.match(buf, end - 1)
    if m is None:
        return 0
    v = _VALUE_TEXT.match(buf, m.end())
    if v is None or not buf.startswith(m.group("q"), v.end()):
        return 0
    lo = max(0, start - _RECORD_BACK)
    open_at = buf.rfind(b"{", lo, start)
    if open_at < 0 or buf.rfind(b"}", open_at, start) >= 0:
        return v.end()
    close = buf.find(b"}", v.end(), v.end() + _RECORD_BACK)
    hi = close if close >= 0 else v.end()
    name = _NAME_MEMBER.search(buf, open_at, hi)
    if name is None:
        return v.end()
    s, e = v.span()
    cookie = _COOKIE_MEMBERS.search(buf, open_at, hi) is not None or b"cookies" in low[lo:open_at]
    if cookie:
        reason = cookie_verdict(name.group("n"), buf[s:e])
        out.append((s, e, "cookie", CONTEXT) if reason is None else kept(s, e, "cookie", reason))
        return v.end()
    level = _literal_level(name.group("n"))  # a string in a record, not a variable
    if level is not None:
        out.append((s, e, "secret-assignment", int(level)))  # checked later, as an assignment's
    return v.end()


_SQL_PASSWORD = re.compile(
    rb"(?i:identified[ \t]+by(?:[ \t]+password)?|(?:with[ \t]+)?(?:encrypted[ \t]+)?password)"
    rb"[ \t]*=?[ \t]*[NEne]?(?P<q>\\*[\"'])(?P<v>[^\"'\\\s]{1,256})(?P=q)"
)


def _sql_password(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``CREATE USER u IDENTIFIED BY 'pw'``, ``ALTER ROLE r WITH PASSWORD 'pw'``, ``PASSWORD = N'pw'``."""
    m = _SQL_PASSWORD.match(buf, start)
    if m is None:
        return 0
    s, e = m.span("v")
    out.append((s, e, "password", int(Level.LITERAL_PASSWORD)))
    return m.end()


_SETTER = re.compile(
    rb"\([ \t]*\\*[\"'](?P<n>[^\"'\\\r\n]{1,128})\\*[\"'][ \t]*,[ \t]*(?P<q>\\*[\"'])(?P<v>[^\"'\\\r\n]{1,4096})(?P=q)"
)


def _stored(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``localStorage.setItem("name", "value")``, ``cookies.set("sid", "value")``."""
    return _named_value(_SETTER, buf, end, out)


_GETTER = re.compile(
    rb"\([ \t]*\\*[\"'](?P<n>[^\"'\\\r\n]{1,128})\\*[\"'][ \t]*\)[^\r\n\\]{0,40}(?:\r?\n|\\+[rn])"
    rb"[ \t]*(?:<|=>|\xe2\x86\x90|\xe2\x86\x92|>>>|Out\[[0-9]+\]:)?[ \t]*(?P<q>\\*[\"'])(?P<v>[^\"'\\\r\n]{1,4096})(?P=q)"
)


def _read_back(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``localStorage.getItem('session')`` in a console, and the string it printed on the next line."""
    return _named_value(_GETTER, buf, end, out)


def _literal_level(name: bytes) -> Level | None:
    """``classify``'s level for a value written as a string literal (a password there is a literal's)."""
    level = classify(name)
    return Level.LITERAL_PASSWORD if level is Level.PASSWORD else level


def _named_value(pattern: re.Pattern[bytes], buf: bytes, end: int, out: list[Candidate]) -> int:
    """A storage call's name and value (``pattern``'s groups ``n`` and ``v``) from the anchor's ``(``:
    the value judged by its name, a storage entry's value is a key when the name says nothing."""
    m = pattern.match(buf, end - 1)
    if m is None:
        return 0
    out.append((*m.span("v"), "secret-assignment", int(_literal_level(m.group("n")) or Level.KEY)))
    return m.end()


_COOKIE_STRING = re.compile(rb"[^\"'`]{0,80}?(?P<q>\\*[\"'`])")


def _document_cookie(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A browser's ``document.cookie`` and the string it printed: ``'a=b; sid=...'``."""
    m = _COOKIE_STRING.match(buf, end)
    if m is None:
        return 0
    pos = m.end()
    while (pair := COOKIE_PAIR.match(buf, pos)) is not None:
        pos = pair.end()
        s, e = pair.span("v")
        reason = cookie_verdict(pair.group("n"), pair.group("v"))
        out.append((s, e, "cookie", CONTEXT) if reason is None else kept(s, e, "cookie", reason))
    return pos


_ARGS = re.compile(rb"[^\r\n\"'`|;&<>]{0,400}")
_ARG = re.compile(rb"(?<![^\s=])[A-Za-z0-9][A-Za-z0-9_+/=-]{15,254}(?![^\s\\])")
_PATHLIKE = re.compile(rb"[a-z]+(?:[-_][a-z]+)+|.*://.*|[A-Za-z0-9.-]+\.[a-z]{2,6}")


def _random_argument(word: bytes) -> bool:
    """A positional argument that reads as a key: letters and digits mixed, many different ones."""
    return (
        any(48 <= c <= 57 for c in word)
        and any(65 <= (c & 0xDF) <= 90 for c in word)
        and enough_distinct(word, 10)
        and _PATHLIKE.fullmatch(word) is None
        and not is_reference(word)
        and not is_placeholder(word)
    )


def _credential_command(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A command that takes credentials by position (``b2 account authorize <id> <key>``, ``mc
    alias set <name> <url> <access> <secret>``, ``qshell account <ak> <sk> <name>``): every
    random-looking argument after its verb is one."""
    args = _ARGS.match(buf, end)
    hi = end if args is None else args.end()
    escaped = buf.find(b"\\", end, hi)  # an escaped line break or quote ends the command in JSON
    if escaped >= 0:
        hi = escaped
    for m in _ARG.finditer(buf, end, hi):
        if _random_argument(m.group()):
            out.append((*m.span(), "credential-argument", CONTEXT))
    return hi


_PROMPT = re.compile(
    rb"(?i:access[ \t]+key(?:[ \t]+id)?|secret(?:[ \t]+access)?[ \t]+key|api[ \t]+key|secret[ \t]+id)"
    rb"[ \t]*(?:\[[^\]\r\n]{0,40}\])?[ \t]*:[ \t]*(?P<v>[A-Za-z0-9][A-Za-z0-9_+/=-]{11,254})(?![^\s\\])"
)


def _configure_prompt(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A configure command's prompt and the key typed after it (``Access Key ID []: ...``)."""
    m = _PROMPT.match(buf, start)
    if m is None:
        return 0
    out.append((*m.span("v"), "credential-argument", int(Level.KEY)))
    return m.end()


# Credential files whose lines hold a password by position: PostgreSQL's passfile
# (host:port:db:user:password), davfs2's secrets (url user password), OpenVPN's auth-user-pass
# file (the user, then the password, on two lines).
_FILE_LINES = re.compile(rb"[^\r\n\\]{0,200}(?:\r?\n|\\+n)")
_PGPASS_LINE = re.compile(
    rb"[ \t]*[^:\s]+:(?:[0-9]{1,5}|\*):[^:\s]+:[^:\s]+:(?P<v>[^\s\\\"]{1,256})(?=\r?\n|\\+n|\\*\"|$)"
)
_DAVFS_LINE = re.compile(
    rb"[ \t]*(?:https?://|/)[^\s]+[ \t]+[^\s]+[ \t]+(?P<v>[^\s\\\"]{1,256})(?=\r?\n|\\+n|\\*\"|$)"
)
_AUTH_PAIR = re.compile(
    rb"[ \t]*[^\s\\\"]{1,128}(?:\r?\n|\\+n)[ \t]*(?P<v>[^\s\\\"]{1,256})(?=\r?\n|\\+n|\\*\"|$)"
)
MAX_FILE_LINES = 32


def _credential_file(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """The lines printed after a credential file's name (``cat ~/.pgpass``): each line's password."""
    brk = _FILE_LINES.match(buf, end)
    if brk is None:
        return 0
    pos = brk.end()
    anchor = low[start:end]
    if anchor.startswith(b"auth"):
        m = _AUTH_PAIR.match(buf, pos)
        if m is not None:
            out.append((*m.span("v"), "password", int(Level.LITERAL_PASSWORD)))
            return m.end()
        return pos
    line = _PGPASS_LINE if anchor == b"pgpass" else _DAVFS_LINE
    for _ in range(MAX_FILE_LINES):
        m = line.match(buf, pos)
        if m is None:
            break
        out.append((*m.span("v"), "password", int(Level.LITERAL_PASSWORD)))
        nxt = _FILE_LINES.match(buf, m.end())
        if nxt is None:
            break
        pos = nxt.end()
    return pos


# A cloud key's id under a name that says so (``Access ID:``, ``key_id:``, ``"accessId":``): the
# credential's other half when its value is random, of both letters and digits, and not hex (a PGP
# key's id, a service account key's id and a KMS key's UUID are hex: names, not halves of a secret).
_KEY_ID_VALUE = re.compile(
    rb"\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?(?P<v>[A-Za-z0-9_-]{16,128})(?![A-Za-z0-9_+/=.-])"
)
_KEY_ID_NAME = re.compile(rb"[A-Za-z0-9_.-]{0,32}\Z")
_NOT_A_HALF = re.compile(rb"(?i:private|public|kms|ssh|gpg|pgp|sign|project|client|tenant|account)")
_HEX_OR_UUID = re.compile(rb"[0-9a-fA-F-]+")


def _key_id(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _KEY_ID_VALUE.match(buf, end)
    if m is None:
        return 0
    name = low[start:end] + (
        b"" if (n := _KEY_ID_NAME.search(low, max(0, start - 32), start)) is None else n.group()
    )
    if _NOT_A_HALF.search(name) is not None or (b"access" in name and b"key" in name):
        return m.end()  # (an access key's id is the assignment rule's: ``classify`` reads its name)
    v = m.group("v")
    if (
        _HEX_OR_UUID.fullmatch(v) is None
        and any(48 <= c <= 57 for c in v)
        and any(65 <= c <= 90 for c in v)
        and enough_distinct(v, 12)
        and not is_placeholder(v)
    ):
        out.append((*m.span("v"), "cloud-key-id", CONTEXT))
    return m.end()


# A name and a value as two unquoted members on consecutive lines (a Kubernetes or compose env
# list, an HCL block; a file listing's line numbers between them): ``- name: API_TOKEN`` then
# ``value: ...``. The value is judged by the name, as an assignment's would be.
_MEMBER_VALUE = re.compile(
    rb"[ \t]*[:=][ \t]*(?P<q>\\*[\"']?)(?P<v>[^\s\"'\\]{1,4096})(?P=q)[ \t]*(?=\r|\n|\\+n|\\*\"|$)"
)
_NAME_LINE = re.compile(
    rb"(?i:name)[ \t]*[:=][ \t]*\\*[\"']?(?P<n>[A-Za-z_][A-Za-z0-9_.-]{0,127})\\*[\"']?[ \t]*(?:\r?\n|\\+n)"
    rb"(?:[ \t]*[0-9]{1,6}(?:\t|\\+t|\xe2\x86\x92|[ \t]*\xe2\x94\x82))?[ \t]*\Z"
)
_NAME_BACK = 200


def _member_value(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if start and buf[start - 1] not in b" \t\n-":
        return 0  # (``default_value:``, ``"value":``: the record rule's)
    m = _MEMBER_VALUE.match(buf, start + 5)
    if m is None:
        return 0
    lo = max(0, start - _NAME_BACK)
    line = max(buf.rfind(b"\n", lo, start), buf.rfind(b"\\n", lo, start - 1))
    prev = max(buf.rfind(b"\n", lo, max(lo, line)), buf.rfind(b"\\n", lo, max(lo, line - 1)), lo)
    if line < 0:
        return m.end()
    name = _NAME_LINE.search(buf, prev, start)
    level = None if name is None else _literal_level(name.group("n"))
    if level is not None:
        out.append((*m.span("v"), "secret-assignment", int(level)))
    return m.end()


# A DSN's userinfo before a protocol's address, with no scheme (Go's MySQL driver):
# ``user:password@tcp(host:3306)/db``, ``user:password@unix(/run/mysqld.sock)/db``.
_DSN_USERINFO = re.compile(rb"[^\s:\"'@/=(,]{1,128}:(?P<v>[^\s\"'@]{1,256})\Z")
_DSN_BACK = 400


def _dsn_address(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _DSN_USERINFO.search(buf, max(0, start - _DSN_BACK), start)
    if m is not None:
        out.append((*m.span("v"), "password", int(Level.LITERAL_PASSWORD)))
    return end


# An element whose tag names a secret, with attributes (``<Password type="plain">...</Password>``,
# ``<Pass encoding="base64">...</Pass>``); a bare element is the assignment rule's.
_ELEMENT = re.compile(
    rb"<(?P<tag>[A-Za-z_][A-Za-z0-9_.:-]{0,64})[ \t][^<>\r\n]{0,200}>(?P<v>[^<>\r\n]{1,4096})</(?P=tag)>"
)


def _element(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _ELEMENT.match(buf, start)
    if m is None:
        return 0
    level = _literal_level(m.group("tag"))
    if level is not None:
        out.append((*m.span("v"), "secret-assignment", int(level)))
    return m.end()


# A block named for its secrets (``secrets { bootstrap = "..." }``, ``tokens { ... }``): each quoted
# member's value is judged as a secret's, whatever the member's own name.
_BLOCK_MEMBER = re.compile(
    rb"(?m:^|\\+n)(?:[ \t]*[0-9]{1,6}(?:\t|\\+t|\xe2\x86\x92|[ \t]*\xe2\x94\x82))?"  # a listing's line number
    rb"[ \t]*[A-Za-z_][A-Za-z0-9_.-]{0,64}[ \t]*=[ \t]*\\*\"(?P<v>[^\"\\\r\n]{1,4096})\\*\""
)
_BLOCK_SPAN = 1200


def _secret_block(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if start and buf[start - 1] not in b" \t\n" and buf[start - 2 : start] not in (b"\\t", b"\\n"):
        return 0  # the word ends a longer name (``enable_secrets {``) or sits in a string
    close = buf.find(b"}", end, end + _BLOCK_SPAN)
    if close < 0 or buf.find(b"{", end, close) >= 0:
        return 0  # no end in sight, or nested blocks: not a flat block of secrets
    for m in _BLOCK_MEMBER.finditer(buf, end, close):
        out.append((*m.span("v"), "secret-assignment", int(Level.SECRET)))
    return close


# A package manager's basic-auth setting, the user and the password by position
# (``poetry config http-basic.<repo> <user> <password>``).
_BASIC_SETTING = re.compile(
    rb"http-basic\.[A-Za-z0-9_.-]{1,64}[ \t]+[^\s\\\"']{1,128}[ \t]+(?P<q>[\"']?)(?P<v>[^\s\\\"']{1,256})(?P=q)"
)


def _basic_setting(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _BASIC_SETTING.match(buf, start)
    if m is None:
        return 0
    out.append((*m.span("v"), "password", int(Level.LITERAL_PASSWORD)))
    return m.end()


def slot_rules() -> list[ScanRule]:
    return [
        ScanRule("secret-assignment", (b'value"', b"value'", b'value\\"', b"value\\\\"), _record_value),
        ScanRule(
            "password",
            (
                b"identified by",
                b"password '",
                b'password "',
                b"password n'",
                b"password = n'",
                b"password e'",
            ),
            _sql_password,
        ),
        ScanRule(
            "secret-assignment",
            (
                b"setitem(",
                b"cookies.set(",
                b"cookie.set(",
                b"setcookie(",
                b"set_cookie(",
                b"setenvironmentvariable(",
            ),
            _stored,
        ),
        ScanRule("secret-assignment", (b"getitem(", b"cookies.get(", b"getcookie("), _read_back),
        ScanRule("cookie", (b"document.cookie",), _document_cookie),
        ScanRule("password", (b"pgpass", b"davfs2/secrets", b"auth.txt"), _credential_file),
        ScanRule(
            "credential-argument",
            (
                b" account authorize ",
                b" authorize-account ",
                b" alias set ",
                b"qshell account ",
                b" http-basic.",
            ),
            _credential_command,
        ),
        ScanRule(
            "credential-argument", (b"access key", b"secret key", b"api key", b"secret id"), _configure_prompt
        ),
        ScanRule("secret-assignment", (b"value:", b"value =", b"value="), _member_value),
        ScanRule("password", (b"@tcp(", b"@unix(", b"@udp("), _dsn_address),
        ScanRule("password", (b"http-basic.",), _basic_setting),
        ScanRule(
            "secret-assignment",
            (b"<pass", b"<pwd", b"<pswd", b"<secret", b"<token", b"<apikey", b"<api_key", b"<cred"),
            _element,
        ),
        ScanRule(
            "secret-assignment",
            (b"secrets {", b"secret {", b"tokens {", b"token {", b"credentials {", b"passwords {"),
            _secret_block,
        ),
        ScanRule(
            "cloud-key-id",
            (
                b"access id",
                b"access_id",
                b"accessid",
                b"access-id",
                b"key_id",
                b"keyid",
                b"key id",
                b"key-id",
            ),
            _key_id,
        ),
    ]
