"""Whole-value placeholders: a value that stands for a secret instead of being one.

A value is a placeholder only when it is one *as a whole*: a template (``<token>``, ``${VAR}``,
``$(cmd)``, ``{{ x }}``, ``%VAR%``), a mask (``***``, ``xxxxxxxx``, ``sk-...4f2a``, ``••••``) or a
phrase made only of placeholder words (``YOUR_API_KEY``, ``your-token-here``, ``changeme``). A word
found *inside* a random value (``...Ae17YoUR``, ``...Todo...``) proves nothing: random bodies hold
such words about once in a few thousand tokens, and each of those would be a leak.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

import ahocorasick_rs

_TEMPLATE = re.compile(
    rb"<[^<>\r\n]{1,120}>|\$\{\{?[^}]{0,160}\}\}?|\$\([^)]{0,240}\)|\{\{.{0,240}\}\}|\{%.{0,240}%\}"
    rb"|%[A-Za-z_][A-Za-z0-9_]*%|\$[A-Za-z_][A-Za-z0-9_]*|@[A-Za-z_][A-Za-z0-9_]*@|__[A-Z][A-Z0-9_]*__"
    rb"|\{[A-Za-z_][A-Za-z0-9_.]*\}|%\([A-Za-z_]+\)s|%s|\[[A-Za-z _-]{1,60}\]",
    re.S,
)
# Mask runs: stars, ellipses (three dots or U+2026), bullets (U+2022, U+25CF).
_MASK_RUN = re.compile(rb"\*{3,}|\.{3,}|\xe2\x80\xa6|(?:\xe2\x80\xa2)+|(?:\xe2\x97\x8f)+")
MASK_VISIBLE = 12
"""A masked display keeps at most this many characters in clear (``sk-...4f2a``, ``ghp_****abcd``)."""
_SEPARATORS = re.compile(r"[-_.\s/:+]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SEP_CHARS = b"-_. /:+\t"
_SEP_BYTES = frozenset(bytes([c]) for c in _SEP_CHARS)
_TOKEN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_/+=:~!#&,;?^|"
"""Characters of tokens and passwords that no template or mask needs (those need ``<$%{[*.\\``...)."""

MARKERS = frozenset(
    [
        "your",
        "yours",
        "here",
        "goes",
        "insert",
        "replace",
        "replaceme",
        "placeholder",
        "example",
        "examples",
        "sample",
        "dummy",
        "fake",
        "todo",
        "fixme",
        "tbd",
        "changeme",
        "changeit",
        "change",
        "redacted",
        "notreal",
        "real",
        "fill",
        "put",
        "paste",
        "enter",
        "xxx",
    ]
)
"""Words whose presence makes an all-placeholder-words phrase a placeholder (``your-api-key-here``)."""
_FILLER = frozenset(
    [
        "me",
        "my",
        "api",
        "key",
        "keys",
        "token",
        "tokens",
        "secret",
        "secrets",
        "password",
        "passwd",
        "pass",
        "pwd",
        "pw",
        "access",
        "id",
        "client",
        "app",
        "application",
        "auth",
        "bearer",
        "value",
        "the",
        "a",
        "an",
        "of",
        "to",
        "with",
        "for",
        "this",
        "that",
        "own",
        "new",
        "valid",
        "actual",
        "personal",
        "pat",
        "github",
        "gitlab",
        "openai",
        "anthropic",
        "aws",
        "slack",
        "stripe",
        "google",
        "azure",
        "service",
        "account",
        "project",
        "org",
        "bot",
        "user",
        "username",
        "db",
        "database",
        "mysql",
        "postgres",
        "redis",
        "sk",
        "string",
        "it",
        "goes",
        "is",
        "not",
        "in",
        "at",
        "will",
        "work",
        "works",
        "only",
        "just",
        "do",
        "does",
        "use",
        "used",
        "be",
        "and",
        "or",
        "local",
        "dev",
        "test",
        "tests",
        "testing",
        "demo",
        "docs",
        "purposes",
    ]
)
_MARKER_FINDER = ahocorasick_rs.BytesAhoCorasick(
    [w.encode() for w in MARKERS], implementation=ahocorasick_rs.Implementation.DFA
)
_TEMPLATE_START = frozenset(bytes([c]) for c in b"<$%@_{[")
PREFIX_WORD = 5
"""Before the first marker a phrase may hold words this short that name the token (``sk-ant-``)."""
SINGLE = frozenset(
    b"changeme changeit change_me change-me change_it change-it replaceme replace_me replace-me "
    b"placeholder redacted tbd todo fixme dummy".split()
)


_LONGEST_SINGLE = max(map(len, SINGLE))
_UNICODE_ESCAPE = re.compile(rb"\\+u([0-9a-fA-F]{4})")


def _unicode(m: re.Match[bytes]) -> bytes:
    return chr(int(m.group(1), 16)).encode("utf-8", "surrogatepass")


def _unescape(value: bytes) -> bytes:
    """``\\u2022`` -> the bullet, ``\\"`` -> ``"`` (a value as a JSON-escaped transcript shows it)."""
    if b"\\u" in value:
        value = _UNICODE_ESCAPE.sub(_unicode, value)
    return value.replace(b"\\", b"")


def _masked(value: bytes) -> bool:
    if b"**" not in value and b".." not in value and b"\xe2" not in value:
        return False
    if _MASK_RUN.search(value) is None:
        return False
    return len(_MASK_RUN.sub(b"", value)) <= MASK_VISIBLE


def _repeated(value: bytes) -> bool:
    """``xxxxxxxx``, ``XXXX-XXXX``, ``000000``: one character, maybe split by separators."""
    core = value.translate(None, _SEP_CHARS).lower()
    return len(core) >= 3 and len(set(core)) == 1


def _words_only(value: bytes) -> bool:
    """``YOUR_API_KEY``, ``your-token-here``, ``insertKeyHere``, ``sk-ant-xxxxx``: placeholder words and
    nothing else. Before the first marker, parts between separators may be short prefix words
    (``sk``, ``ant``, ``xoxb``); a random body has no such luck: every camel-case piece of it would
    have to be a placeholder word."""
    if not value.isascii() or not _MARKER_FINDER.find_matches_as_indexes(value.lower()):
        return False
    parts = _SEPARATORS.split(value.decode("ascii"))
    if any(len(p) > PREFIX_WORD and not p.isalpha() for p in parts):
        return False  # a long part of letters and digits is neither a word nor a prefix
    marked = False
    for part in parts:
        if not part:
            continue
        words = [w.lower() for w in _CAMEL.split(part)]
        if all(w in MARKERS or w in _FILLER or _is_x_run(w) or counting(w) for w in words):
            marked = marked or any(w in MARKERS or _is_x_run(w) for w in words)
        elif marked and part.isdigit() and len(part) <= PREFIX_WORD:
            continue  # ``your-password-123``: a number after the words
        elif marked or len(part) > PREFIX_WORD or not part.isalnum():
            return False
    return marked


def _step(a: int, b: int) -> int:
    """0 when ``b`` repeats ``a``, 1 when it counts on from it in the same case (``9`` to ``0`` or
    ``a`` too), else -1: ``AbCd`` does not count (a mixed-case body is a token's)."""
    if a == b:
        return 0
    if b == a + 1 or (a == 57 and b in (48, 65, 97)) or (a in (90, 122) and b == 48):
        return 1
    return -1


COUNTING_RUN = 4
"""Each run of a counting or repeated filler is at least this long (``1234``, ``abcd``, ``0000``)."""


MAX_PERIOD = 8
"""A unit repeated to fill a sample (``deadbeefdeadbeef...``, ``abcabcabc``) is at most this long."""


def _periodic(core: bytes) -> bool:
    """``core`` is one short unit in one case said three times or more (``deadbeef``, ``abc123``; a
    mixed-case unit such as ``Qw3rTy7u`` is a random chunk repeated, judged as a value)."""
    n = len(core)
    for p in range(2, min(MAX_PERIOD, n // 3) + 1):
        if core[p] == core[0] and core == (core[:p] * (n // p + 1))[:n]:
            unit = core[:p]
            return unit == unit.lower() or unit == unit.upper()
    return False


def counting(word: str | bytes) -> bool:
    """A filler of runs that each repeat one character or count on (``1234567890``, ``abcdef0123456789``,
    ``0000-1111``), or of one short unit repeated (``deadbeefdeadbeef``), the way people fill a sample
    value: a random body has no run of four and no period."""
    core = (word.encode() if isinstance(word, str) else word).translate(None, _SEP_CHARS)
    if len(core) < COUNTING_RUN or not core.isalnum():
        return False
    if _periodic(core):
        return True
    run, kind = 1, None
    for a, b in zip(core, core[1:], strict=False):
        step = _step(a, b)
        if step >= 0 and kind in (None, step):
            run, kind = run + 1, step
            continue
        if run < COUNTING_RUN:
            return False
        run, kind = 1, None
    return run >= COUNTING_RUN


def _filler(value: bytes) -> bool:
    """``counting``, tried only when ``value`` starts the way filler does (a repeat or a step) or has a
    period: most values fail here on their first two characters."""
    if _step(value[0], value[1]) < 0 and not _periodic(value):
        return False
    return counting(value)


MIN_COUNTING = 12
"""A value (past its prefix) that is only counting or repeated runs and this long is a sample: a
shorter one may be a weak password (``abcd1234``), which is a password still."""
_PREFIX = re.compile(rb"(?:[A-Za-z0-9]{1,8}[-_.]){1,4}")
"""A token's prefix (``sk-or-v1-``, ``ghp_``, ``xoxb-``), before its body."""
MAX_PREFIX = 20


def prefixed_sample(value: bytes) -> bool:
    """``sk-or-v1-<your-key>``, ``sk_live_${SUFFIX}``, ``ghp_1234567890abcdefghij...``: a token's prefix
    followed by a template, or by nothing but counting and repeated runs."""
    m = _PREFIX.match(value)
    if m is None or m.end() > MAX_PREFIX or m.end() == len(value):
        return False
    body = value[m.end() :]
    if body[:1] in _TEMPLATE_START:
        return _TEMPLATE.fullmatch(body) is not None
    return (
        len(body) > MIN_COUNTING and len(body.translate(None, _SEP_CHARS)) >= MIN_COUNTING and _filler(body)
    )


def _is_x_run(word: str) -> bool:
    return len(word) >= 3 and set(word) == {"x"}


def is_placeholder_value(value: bytes) -> bool:
    """Is ``value``, as a whole, a template, a mask or a placeholder phrase (never a real secret)?"""
    if not value:
        return True
    if value.isalnum() and not value.isalpha():  # letters and digits (the common case: a random body)
        if value[:1] == value[1:2] and _repeated(value):  # ``000000``
            return True
        return len(value) >= MIN_COUNTING and _filler(value)
    if not value.translate(None, _TOKEN_CHARS):  # no template, mask or escape character in it
        if len(value) >= MIN_COUNTING and value.isalpha() and _filler(value):  # ``abcdefghijklmnop``
            return True
        head = value[:2].lower()
        if (head[:1] == head[1:] or head[1:] in _SEP_BYTES) and _repeated(value):
            return True
        if len(value) <= _LONGEST_SINGLE and value.lower() in SINGLE:
            return True
        return len(value) <= 64 and _words_only(value)
    if b"\\" in value:
        value = _unescape(value)
    if len(value) <= _LONGEST_SINGLE and value.lower() in SINGLE:
        return True
    head = value[:2].lower()
    if (head[:1] == head[1:] or head[1:] in _SEP_BYTES) and _repeated(value):
        return True
    if _masked(value) or (value[:1] in _TEMPLATE_START and _TEMPLATE.fullmatch(value)):
        return True
    return len(value) <= 64 and _words_only(value)


DOCUMENTED = frozenset(
    [
        b"sk_test_4eC39HqLyjWDarjtT1zdp7dc",  # Stripe's API reference
        b"pk_test_TYooMQauvdEDq54NiTphI7jx",
        b"sk_test_BQokikJOvBiI2HlWgH4olfQ2",
        b"pk_test_6pRNASCoBOKtIshFeQd4XMUh",
    ]
)
"""Example keys vendors print in their documentation, which every tutorial copies: they open no
account, so they are kept. AWS marks its own (``AKIAIOSFODNN7EXAMPLE``, ``...EXAMPLEKEY``) with the
word ``EXAMPLE`` in capitals, which a random body of capitals and digits holds about once in 10^10
keys."""


def is_documented_example(value: bytes) -> bool:
    """Is ``value`` (a whole token, prefix included) a vendor's published documentation example?"""
    return b"EXAMPLE" in value or value in DOCUMENTED


_SAMPLE_PEOPLE = frozenset(["john doe", "jane doe"])
_EXAMPLE_DOMAIN = re.compile(r"(?i)\bexample\.(?:com|org|net)\b|\.example\b|\.test\b")
_JWT_SHAPE = re.compile(rb"eyJ[A-Za-z0-9_-]{2,}\.(eyJ[A-Za-z0-9_-]{2,})\.[A-Za-z0-9_-]*")


def sample_jwt(value: bytes) -> bool:
    """A JWT whose claims are a documentation sample's: a subject that counts (``1234567890``), a
    placeholder person (``John Doe``), a reserved example domain (``example.com``, ``.test``); a real
    token names a real subject."""
    m = _JWT_SHAPE.fullmatch(value) if value[:3] == b"eyJ" else None
    if m is None:
        return False
    part = m.group(1)
    try:
        claims = json.loads(base64.urlsafe_b64decode(part + b"=" * (-len(part) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    if not isinstance(claims, dict):
        return False
    for name, claim in claims.items():
        if _EXAMPLE_DOMAIN.search(name):
            return True
        if not isinstance(claim, str):
            continue
        if claim.lower() in _SAMPLE_PEOPLE or _EXAMPLE_DOMAIN.search(claim):
            return True
        if name in ("sub", "id", "uid", "user_id") and len(claim) >= 6 and counting(claim):
            return True
    return False
