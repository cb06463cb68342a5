"""What the model sees, once: text without terminal controls or invisible format characters.

ANSI CSI and OSC sequences (colour, cursor, hyperlinks), the other C0/C1 control characters (tab,
line feed and carriage return stay), a character erased by a backspace, and the zero-width and
bidirectional format characters (U+200B..U+200F, U+202A..U+202E, U+2060..U+2064, U+2066..U+2069,
U+FEFF) are removed. The same sequences written as JSON escapes (``\\u001b[31m``, ``\\\\u200b``:
a transcript's tool result escaped once or twice) are removed too. So ``grep --color=always`` or a
zero-width space never splits a secret from the name the rules key on, and what the redactor
checked is exactly what is sent. Line breaks are never removed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

_INVISIBLE = "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_SUSPECT = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_INVISIBLE}]")
_ESCAPE_MARKS = ("u001b", "u001B", "u200", "u206", "u202", "ufeff", "uFEFF")
_REMOVED = re.compile(
    # CSI: ESC [ parameters, intermediates, final byte; OSC: ESC ] up to BEL or ST; other ESC
    # sequences; a character overstruck by a backspace; any other control or format character
    "\x1b\\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    "|(?:\x1b\\]|\x9d)[^\x07\x1b\x9c\n]{0,4096}(?:\x07|\x1b\\\\|\x9c)?"
    "|\x1b[ -/]*[0-~]|[^\x08\n]\x08"
    f"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_INVISIBLE}]"
    # the same, JSON-escaped once or more: \u001b[31m, \\u001b]8;;url\\u0007, \u200b
    r"|(?P<b>\\+)u001[bB](?:\[[0-?]*[ -/]*[@-~]|\][^\\\n]{0,4096}?(?:(?P=b)u0007|(?P=b)u001[bB]\\+|(?=\\)))"
    r"|\\+u(?:200[b-fB-F]|202[a-eA-E]|206[0-46-9]|[fF][eE][fF][fF])"
)


def _suspect(text: str) -> bool:
    return _SUSPECT.search(text) is not None or (
        "\\u" in text and any(mark in text for mark in _ESCAPE_MARKS)
    )


def normalise(text: str) -> str:
    """``text`` without terminal controls and invisible format characters (raw or JSON-escaped)."""
    return _REMOVED.sub("", text) if _suspect(text) else text


def normalise_mapped(text: str) -> tuple[str, Callable[[int], int]]:
    """``normalise(text)``, and a function taking an offset in it back to the offset in ``text``."""
    if not _suspect(text):
        return text, _same
    at: list[int] = []  # where each removal sits in the normalised text
    shift: list[int] = []  # characters removed up to and including it
    pieces: list[str] = []
    pos = removed = 0
    for m in _REMOVED.finditer(text):
        s, e = m.span()
        pieces.append(text[pos:s])
        removed += e - s
        at.append(s - (removed - (e - s)))
        shift.append(removed)
        pos = e
    pieces.append(text[pos:])

    def back(offset: int) -> int:
        i = bisect_right(at, offset)
        return offset + (shift[i - 1] if i else 0)

    return "".join(pieces), back


def _same(offset: int) -> int:
    return offset
