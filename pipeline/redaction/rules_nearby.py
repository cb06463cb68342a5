"""Random-looking tokens near a word that names a credential, in any construction: "X is the api
key for staging", "Authenticated with credentials X", "set the signing secret to X and redeploy",
"licence key X", and the string literals handed to a credential's constructor
(``credential.Credential("<id>", "<secret>")``).

The word says what a nearby value is; the value's shape says whether it is one: long enough, of a
token's alphabet, random (a digit beside letters, or a long mix of cases; many different
characters), and not a hash, digest, UUID, address, path, URL, version or name. The word must
stand as a word (not inside an identifier, where the assignment rule reads the name), on the same
line as the value and a few words from it, and not be a public key's or a hash's word.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import enough_distinct, is_placeholder, is_reference
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule

NAME = "token-near-word"

_WORDS = (
    b"key",
    b"apikey",
    b"secret",
    b"token",
    b"credential",
    b"creds",
    b"password",
    b"passwd",
    b"passphrase",
    b"passcode",
    b"licence",
    b"license",
    b"cookie",
    b"bearer",
    b"access code",
    b"auth code",
    b"activation code",
    b"recovery code",
)
_WORD_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_LEFT_GLUE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.$/-")
AFTER = 72
"""How far after the word (bytes, same line) a value may sit: "the signing secret is set to X"."""
BEFORE = 40
"""How far before the word: "X is the api key"."""
_TOKEN = re.compile(rb"(?<![A-Za-z0-9_+/=.~-])[A-Za-z0-9][A-Za-z0-9_+/.~-]{14,254}[A-Za-z0-9]={0,2}(?![A-Za-z0-9_+/=.~-])")
_CALL_ARG = re.compile(rb"\\*[\"'](?P<v>[A-Za-z0-9][A-Za-z0-9_+/.~-]{14,254}[A-Za-z0-9]={0,2})\\*[\"']")
_LINE_END = re.compile(rb"\r|\n|\\+[nr]")
_HEX = re.compile(rb"(?:0x)?[0-9a-fA-F]+")
_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGIT = re.compile(rb"[0-9]")
_LOWER = re.compile(rb"[a-z]")
_UPPER = re.compile(rb"[A-Z].*[A-Z].*[A-Z]")
_VERSION = re.compile(rb"v?[0-9]+(?:[._-][0-9A-Za-z]+)+")
_NOT_A_SECRET = re.compile(
    rb"(?i:public|pub|publishable|host|fingerprint|checksum|digest|hash|sha[0-9]*|md5|commit|uuid|arn"
    rb"|id|ids|name|path|file|url|uri|version|no|not|without|invalid|expired|rotated|revoked|missing)"
)
"""Words that say a value near a credential's word is something else (a public key, a key's id or
fingerprint, a hash) or is no longer a credential's value."""
_BETWEEN_WORD = re.compile(rb"[A-Za-z]+")


def token_shape(value: bytes) -> bool:
    """Does ``value``, standing alone, look like a random credential?"""
    n = len(value)
    if _UUID.fullmatch(value) or _VERSION.fullmatch(value) or is_placeholder(value):
        return False
    if _HEX.fullmatch(value):  # a hex key: long, both letters and digits (an all-digit run is a number)
        return n >= 32 and _DIGIT.search(value) is not None and not value.isdigit() and enough_distinct(value, 10)
    if not _DIGIT.search(value) and not (n >= 20 and _LOWER.search(value) and _UPPER.search(value)):
        return False
    if not _LOWER.search(value) and not (_UPPER.search(value) and n >= 16):
        return False
    if b"." in value or b"/" in value or b"-" in value or b"_" in value:
        if is_reference(value):
            return False
    return enough_distinct(value, min(10, n // 2))


_REACH = 320
"""How far a token may run past the window's edge (a value starting inside it is taken whole)."""
_BEFORE_LINK = re.compile(
    rb"[ \t]*(?:,[ \t]*)?(?i:is|was|are|=|:|as|-|\xe2\x80\x94)[ \t]+(?:[A-Za-z]+[ \t]+){0,3}$"
)
"""What joins a value to a credential's word after it: "X is the api key", "X as the token"."""
_SSH_PUBLIC = (b"AAAAB3NzaC1", b"AAAAC3NzaC1", b"AAAAE2VjZHNh", b"AAAAGnNrLXNzaC")


def _line_bounds(buf: bytes, start: int, end: int) -> tuple[int, int]:
    """The text on the word's line that may hold its value, from ``BEFORE`` plus a token's length
    before it to a token's length past ``AFTER``."""
    lo = max(0, start - BEFORE - _REACH)
    hi = min(len(buf), end + AFTER + _REACH)
    for m in _LINE_END.finditer(buf, lo, start):
        lo = m.end()
    m = _LINE_END.search(buf, end, hi)
    return lo, hi if m is None else m.start()


def _denied(buf: bytes, a: int, b: int) -> bool:
    return any(_NOT_A_SECRET.fullmatch(w.group()) for w in _BETWEEN_WORD.finditer(buf, a, b))


def _nearby(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if buf[start - 10 : start] == b"[REDACTED:":
        return 0  # a placeholder's rule name (``[REDACTED:password:1f3a]``), not a word
    if start and buf[start - 1] in _LEFT_GLUE and buf[start - 2 : start] != b"\\n":
        if not (buf[start - 1] == 46 and buf[end : end + 1] == b"("):
            return 0  # inside an identifier (``api_key``): the assignment rule reads names
    nxt = buf[end : end + 1]
    if nxt == b"(":
        return _constructor(buf, start, end, out)
    if nxt and nxt[0] in _WORD_CHARS and not (nxt == b"s" and buf[end + 1 : end + 2] not in _WORD_BYTES):
        return 0  # keyboard, tokenizer (a plural goes on)
    lo, hi = _line_bounds(buf, start, end)
    if _denied(buf, max(lo, start - 24), start):  # "public key", "host key"
        return 0
    found = end
    for m in _TOKEN.finditer(buf, lo, hi):
        s, e = m.span()
        if s < end and e > start:
            continue  # the word itself
        if s < start:
            if e > start or e < start - BEFORE or _BEFORE_LINK.search(buf, e, start) is None:
                continue
            if _denied(buf, e, start):
                continue
        elif s > end + AFTER:
            break
        elif _denied(buf, end, s):
            break  # "key fingerprint: ...", "token is invalid"
        v = m.group()
        if token_shape(v) and not v.startswith(_SSH_PUBLIC) and buf[s - 2 : s] != b"0x":
            out.append((s, e, NAME, CONTEXT))
            found = max(found, e)
    return found


_WORD_BYTES = tuple(bytes((c,)) for c in _WORD_CHARS)
_CALL_END = re.compile(rb"\)")


def _constructor(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``Credential("<id>", "<secret>")``, ``Token("...")``: string literals handed to a call whose
    name says credential; each one that looks random is one."""
    _, hi = _line_bounds(buf, start, end)
    close = _CALL_END.search(buf, end, hi)
    stop = hi if close is None else close.start()
    for m in _CALL_ARG.finditer(buf, end + 1, stop):
        if token_shape(m.group("v")):
            out.append((*m.span("v"), NAME, CONTEXT))
    return stop


def _anchors() -> tuple[bytes, ...]:
    return _WORDS


def nearby_rules() -> list[ScanRule]:
    return [ScanRule(NAME, _anchors(), _nearby)]
