"""Session credentials and key material that have no provider prefix: cookies and session ids,
PuTTY private keys and the private members of a JSON Web Key."""

from __future__ import annotations

import re

from pipeline.redaction.filters import has_digit, is_reference, token_body_ok
from pipeline.redaction.model import CONTEXT, STRUCTURE, Candidate, ScanRule, kept
from pipeline.redaction.placeholders import is_placeholder_value
from pipeline.redaction.reasons import Reason

# ``Cookie: a=b; c=d``, ``Set-Cookie: sid=...; Path=/``, ``curl -b 'a=b'`` / ``--cookie "a=b"``.
_COOKIE_HEADER = re.compile(
    rb"(?:(?i:set-cookie|cookie)(?:\\*[\"']?[ \t]*[:=]|[ \t]+)|(?<=[ \t])-b[ \t]+)[ \t]*\\*[\"']?"
)
COOKIE_PAIR = re.compile(rb"[ \t]*(?P<n>[^=;,\s\"'\\]{1,128})=(?P<v>[^;\s\"'\\]{1,4096})[ \t]*;?")
_ATTRIBUTES = frozenset(
    b"path domain expires max-age samesite secure httponly priority partitioned version comment".split()
)
_SESSION_WORDS = re.compile(rb"(?i:sess|sid|auth|token|jwt|remember|login|credential|secret|key)")
MIN_COOKIE = 8
MIN_ANON_COOKIE = 16


def cookie_verdict(name: bytes, value: bytes) -> Reason | None:
    """``None`` when a cookie's value is a credential, else why not."""
    if is_placeholder_value(value):
        return Reason.PLACEHOLDER
    if _SESSION_WORDS.search(name):
        return None if len(value) >= MIN_COOKIE else Reason.TOO_SHORT
    if len(value) < MIN_ANON_COOKIE:
        return Reason.TOO_SHORT
    return None if has_digit(value) and token_body_ok(value, 8) else Reason.NOT_RANDOM


def _cookies(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _COOKIE_HEADER.match(buf, start)
    if m is None:
        return 0
    pos = m.end()
    while (pair := COOKIE_PAIR.match(buf, pos)) is not None:
        pos = pair.end()
        name = pair.group("n")
        if name.lower() in _ATTRIBUTES:
            continue
        reason = cookie_verdict(name, pair.group("v"))
        s, e = pair.span("v")
        out.append((s, e, "cookie", CONTEXT) if reason is None else kept(s, e, "cookie", reason))
    return pos


# A pair whose name says session, outside a cookie header: ``;jsessionid=...`` in a URL,
# ``PHPSESSID=...`` in a log, ``forum_session=...`` in an access log's quoted cookie string,
# ``host|app_sessid|value`` in a browser database's row, ``remember_web_<id>=...``; and any pair
# whose name carries a browser-enforced cookie prefix (``__Host-``, ``__Secure-``): a cookie by
# definition, judged as a cookie header's pair is. A session's name ends in its word; anchored with
# the separator after it, so the word in prose or a JSON key (``"sessionId":``) never reaches the rule.
_SESSION_ENDINGS = (
    *(b"sess", b"sid", b"session", b"sessid", b"sessionid"),
    *(b"session_id", b"session-id", b"session_token", b"session-token"),
)
_PAIR_SEPARATORS = (b"=", b"|", b"\t", b"\\t")
_SESSION_ANCHORS = (
    *(w + sep for w in _SESSION_ENDINGS for sep in _PAIR_SEPARATORS),
    b"remember",
    b"__secure-",
    b"__host-",
)
_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_BACK = 64
_PAIR_VALUE = re.compile(
    rb"[A-Za-z0-9_.-]{0,128}+(?P<sep>=(?!=)|\|(?=[^|\s])|\t|\\+t)(?P<v>[A-Za-z0-9%._~+/:-]{8,4096}={0,2})(?![A-Za-z0-9%._~+/:=-])"
)
_COOKIE_PREFIX = re.compile(rb"(?i:__secure-|__host-)")
MIN_SESSION_ID = 16


def _session_pair(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _PAIR_VALUE.match(buf, start)
    if m is None:
        return 0  # (most hits: the word in prose, a JSON key)
    e = m.start("sep")
    s = start
    lo = max(0, start - _NAME_BACK)
    while s > lo and buf[s - 1] in _NAME_CHARS:
        s -= 1
    v = m.group("v")
    vs, ve = m.span("v")
    if _COOKIE_PREFIX.match(buf, s) is not None:
        reason = cookie_verdict(buf[s:e], v)
    else:  # random, with a digit: ``session_id=session.session_id`` is code
        ok = len(v) >= MIN_SESSION_ID and has_digit(v) and token_body_ok(v, 8) and not is_reference(v)
        reason = None if ok else Reason.NOT_RANDOM
    out.append((vs, ve, "session-id", CONTEXT) if reason is None else kept(vs, ve, "session-id", reason))
    return ve


# A cookie built in code with named members: ``add_cookie(name: "sid", value: "...")``,
# ``&http.Cookie{Name: "sid", Value: "..."}``, ``Cookie(name="sid", value="...")``: the call or literal
# after a name holding the word, its ``name``/``key`` and ``value`` members, judged as a header's pair.
_COOKIE_OPEN = re.compile(rb"[A-Za-z]{0,12}[ \t]*[({]")
_COOKIE_MEMBER = re.compile(
    rb"(?<![A-Za-z0-9_])\\*[\"':]?(?P<k>(?i:name|key|value))\\*[\"']?[ \t]*(?:=>|[:=])[ \t]*"
    rb"(?P<q>\\*[\"'])(?P<x>[^\"'\\\r\n]{1,4096})(?P=q)"
)
_CALL_SPAN = 600


def _cookie_call(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    opened = _COOKIE_OPEN.match(buf, end)
    if opened is None:
        return 0
    hi = min(len(buf), opened.end() + _CALL_SPAN)
    close = buf.find(b")" if buf[opened.end() - 1] == 40 else b"}", opened.end(), hi)
    hi = close if close >= 0 else hi
    name: bytes | None = None
    value: tuple[int, int] | None = None
    for m in _COOKIE_MEMBER.finditer(buf, opened.end(), hi):
        if m.group("k").lower() == b"value":
            value = value or m.span("x")
        else:
            name = name or m.group("x")
    if name is not None and value is not None:
        s, e = value
        reason = cookie_verdict(name, buf[s:e])
        out.append((s, e, "cookie", CONTEXT) if reason is None else kept(s, e, "cookie", reason))
    return opened.end()


# PuTTY: ``Private-Lines: N`` and then N lines of base64 (raw or JSON-escaped line breaks).
_PUTTY = re.compile(rb"Private-Lines:[ \t]*(?P<n>[0-9]{1,3})")
_PUTTY_LINE = re.compile(rb"(?:\r?\n|\\{1,4}n)(?P<line>[A-Za-z0-9+/=]{1,128})")


def _putty(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _PUTTY.match(buf, start)
    if m is None:
        return 0
    pos, first = m.end(), -1
    for _ in range(int(m.group("n"))):
        line = _PUTTY_LINE.match(buf, pos)
        if line is None:
            break
        first = line.start("line") if first < 0 else first
        pos = line.end()
    if first >= 0:
        out.append((first, pos, "private-key", STRUCTURE))
    return pos


# A JSON Web Key with its private members: ``{"kty": "RSA", ..., "d": "...", "p": "...", ...}``.
_JWK_WINDOW = 2048
_JWK_PRIVATE = re.compile(rb"\\*\"(?:d|p|q|dp|dq|qi|k)\\*\"[ \t]*:[ \t]*\\*\"(?P<v>[A-Za-z0-9_-]{16,8192})")


def _jwk(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    lo = buf.rfind(b"{", max(0, start - _JWK_WINDOW), start)
    hi = min(len(buf), end + _JWK_WINDOW)
    for m in _JWK_PRIVATE.finditer(buf, lo if lo >= 0 else max(0, start - _JWK_WINDOW), hi):
        out.append((*m.span("v"), "private-key", STRUCTURE))
    return hi


# A Netscape cookie file (curl's ``-c`` jar, a browser export): domain, subdomains flag, path, secure
# flag, expiry, name, value, separated by tabs (raw or JSON-escaped).
_JAR_LINE = re.compile(
    rb"(?P<t>\t|\\+t)(?:TRUE|FALSE)(?P=t)[^\s\\]{1,1024}(?P=t)(?:TRUE|FALSE)(?P=t)[0-9]{1,12}(?P=t)"
    rb"(?P<n>[^\s\\]{1,256})(?P=t)(?P<v>[^\s\\\"']{1,4096})"
)


def _cookie_jar(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _JAR_LINE.match(buf, start)
    if m is None:
        return 0
    reason = cookie_verdict(m.group("n"), m.group("v"))
    s, e = m.span("v")
    out.append((s, e, "cookie", CONTEXT) if reason is None else kept(s, e, "cookie", reason))
    return m.end()


def session_rules() -> list[ScanRule]:
    return [
        ScanRule("cookie", (b"\ttrue\t", b"\tfalse\t", b"\\ttrue\\t", b"\\tfalse\\t"), _cookie_jar),
        ScanRule("cookie", (b"cookie", b"-b "), _cookies),
        ScanRule("cookie", (b"cookie",), _cookie_call),
        ScanRule("session-id", _SESSION_ANCHORS, _session_pair),
        ScanRule("private-key", (b"private-lines:",), _putty),
        ScanRule("private-key", (b'"kty', b'kty\\"'), _jwk),
    ]
