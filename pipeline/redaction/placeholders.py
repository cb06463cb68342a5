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
_SEPARATORS = re.compile(r"[-_.\s/:+]+|(?<=[a-z])(?=[A-Z])")
_SEP_CHARS = b"-_. /:+\t"

MARKERS = frozenset(
    [
        "your",
        "yours",
        "my",
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
        "me",
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
_ESCAPE = re.compile(rb"\\+(?:u([0-9a-fA-F]{4})|(.))", re.S)


def _unescape(value: bytes) -> bytes:
    """``\\u2022`` -> the bullet, ``\\"`` -> ``"`` (a value as a JSON-escaped transcript shows it)."""

    def one(m: re.Match[bytes]) -> bytes:
        if m.group(1) is not None:
            return chr(int(m.group(1), 16)).encode("utf-8", "surrogatepass")
        return m.group(2)

    return _ESCAPE.sub(one, value)


def _masked(value: bytes) -> bool:
    if b"**" not in value and b".." not in value and b"\xe2" not in value:
        return False
    if _MASK_RUN.search(value) is None:
        return False
    return len(_MASK_RUN.sub(b"", value)) <= MASK_VISIBLE


def _repeated(value: bytes) -> bool:
    """``xxxxxxxx``, ``XXXX-XXXX``, ``000000``: one character, maybe split by separators."""
    if len(set(value[:8].translate(None, _SEP_CHARS).lower())) > 1:
        return False
    core = value.translate(None, _SEP_CHARS).lower()
    return len(core) >= 3 and len(set(core)) == 1


def _words_only(value: bytes) -> bool:
    """``YOUR_API_KEY``, ``your-token-here``, ``sk-ant-xxxxx``: placeholder words and nothing else
    (short prefix words such as ``sk``, ``ant``, ``xoxb`` may come before the first marker)."""
    if not value.isascii() or not _MARKER_FINDER.find_matches_as_indexes(value.lower()):
        return False
    text = value.decode("ascii")
    marked = False
    for w in _SEPARATORS.split(text):
        w = w.lower()
        if not w:
            continue
        if w in MARKERS or (len(w) >= 3 and set(w) == {"x"}):
            marked = True
        elif w not in _FILLER and (marked or len(w) > PREFIX_WORD or not w.isalnum()):
            return False
    return marked


def is_placeholder_value(value: bytes) -> bool:
    """Is ``value``, as a whole, a template, a mask or a placeholder phrase (never a real secret)?"""
    if not value:
        return True
    if b"\\" in value:
        value = _unescape(value)
    if (len(value) <= _LONGEST_SINGLE and value.lower() in SINGLE) or _repeated(value) or _masked(value):
        return True
    if value[:1] in _TEMPLATE_START and _TEMPLATE.fullmatch(value):
        return True
    return len(value) <= 64 and _words_only(value)
