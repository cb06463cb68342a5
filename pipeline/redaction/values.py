"""Where a value written after ``=`` or ``:`` ends, at any level of JSON escaping.

A quoted value runs to its own closing quote: the same character with no more backslashes before it
than the opening one had (``"`` in text, ``\\"`` once JSON-escaped, ``\\\\\\"`` twice). Inside it
may hold anything else on its line: any Unicode, quotes of the other kind (``'ab"Qm7b'``), escapes
(``\\"``, ``\\$``, ``\\u00fc``, ``\\n`` of a JSON string) and backslash-newline continuations. An
unquoted value runs to a blank or a quote; a backslash escape inside it (``Zq8w\\$X4``, ``\\u00fc``)
belongs to it, while ``\\n``, ``\\t``, ``\\"`` (the escapes a JSON transcript wraps text in) end it.
"""

from __future__ import annotations

import re

MAX_QUOTED = 4096

UNQUOTED = re.compile(rb"(?:[^\s\"'`\\]++|\\++[^\s\"'`\\nrt])++")


_QUOTED: dict[tuple[int, int], re.Pattern[bytes]] = {}
MAX_CACHED_ESCAPES = 16
"""Patterns for up to this many backslashes before a quote are kept; deeper ones (only hostile text
nests JSON that far) are compiled for the call, so no text makes the cache grow without bound."""


def quoted_pattern(quote: int, escapes: int) -> re.Pattern[bytes]:
    """The pattern whose match at a value's start ends where the value opened by ``quote`` with
    ``escapes`` backslashes before it closes (``quoted_end``)."""
    pattern = _QUOTED.get((quote, escapes))
    if pattern is None:
        pattern = _compile_quoted(quote, escapes)
        if escapes <= MAX_CACHED_ESCAPES:
            _QUOTED[(quote, escapes)] = pattern
    return pattern


def _compile_quoted(quote: int, escapes: int) -> re.Pattern[bytes]:
    q = re.escape(bytes([quote]))
    # Inside '...' or `...` a bare " is part of the value unless JSON structure follows it (then the
    # quote was never closed and the " ends the JSON string the text sits in).
    other = rb'|"(?![ \t]*[,:}\]])' if quote != 34 else b""
    plain = rb"[^\\\r\n" + q + (b'"' if quote != 34 else b"") + rb"]++"
    body = (
        rb"(?:" + plain + rb"|\\\r?\n|\\{%d,}" % (escapes + 1) + q + rb"|\\++(?!" + q + rb")" + other + rb")"
    )
    return re.compile(body + rb"++(?=\\{0,%d}" % escapes + q + rb")")


def quoted_end(buf: bytes, start: int, quote: int, escapes: int) -> int:
    """The end of the value opened by ``quote`` with ``escapes`` backslashes before it, starting at
    ``start``; ``-1`` when it is not closed on its line (or within ``MAX_QUOTED`` bytes)."""
    m = quoted_pattern(quote, escapes).match(buf, start, min(len(buf), start + MAX_QUOTED + 8))
    return -1 if m is None else m.end()


def unquoted_end(buf: bytes, start: int, limit: int) -> int:
    """The end of an unquoted value starting at ``start`` (``start`` when there is none)."""
    m = UNQUOTED.match(buf, start, limit)
    return start if m is None else m.end()


def value_end(buf: bytes, start: int, opener: bytes | None, limit: int) -> int:
    """The end of the value at ``start``: quoted when ``opener`` (the quote and the backslashes
    before it) is given and closes on its line, else one unquoted word."""
    if opener:
        end = quoted_end(buf, start, opener[-1], len(opener) - 1)
        if end >= 0:
            return end
    return unquoted_end(buf, start, limit)


QVAL = rb"(?P<q>\\*['\"])?(?P<v>)(?=[^\s])"
"""A value after a flag or a keyword, as a pattern: an optional quote (JSON-escaped maybe) and an
empty ``v`` group where the value starts; ``flag_value`` finds where it ends."""
MAX_FLAG_VALUE = 256


def flag_value(buf: bytes, m: re.Match[bytes], limit: int) -> tuple[int, int]:
    """The span of the value a ``QVAL`` pattern matched the start of."""
    s = m.start("v")
    return s, value_end(buf, s, m.group("q"), min(limit, s + MAX_FLAG_VALUE))
