"""Whole-value placeholders: a value that stands for a secret instead of being one.

A value is a placeholder only when it is one *as a whole*: a template (``<token>``, ``${VAR}``,
``$(cmd)``, ``{{ x }}``, ``%VAR%``), a mask (``***``, ``xxxxxxxx``, ``sk-...4f2a``, ``••••``) or a
phrase made only of placeholder words (``YOUR_API_KEY``, ``your-token-here``, ``changeme``). A word
found *inside* a random value (``...Ae17YoUR``, ``...Todo...``) proves nothing: random bodies hold
such words about once in a few thousand tokens, and each of those would be a leak.
"""

from __future__ import annotations

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
        if all(w in MARKERS or w in _FILLER or _is_x_run(w) for w in words):
            marked = marked or any(w in MARKERS or _is_x_run(w) for w in words)
        elif marked or len(part) > PREFIX_WORD or not part.isalnum():
            return False
    return marked


def _is_x_run(word: str) -> bool:
    return len(word) >= 3 and set(word) == {"x"}


def is_placeholder_value(value: bytes) -> bool:
    """Is ``value``, as a whole, a template, a mask or a placeholder phrase (never a real secret)?"""
    if not value:
        return True
    if value.isalnum() and not value.isalpha():  # letters and digits (the common case: a random body)
        return value[:1] == value[1:2] and _repeated(value)  # only ``000000`` can be a placeholder
    if not value.translate(None, _TOKEN_CHARS):  # no template, mask or escape character in it
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
