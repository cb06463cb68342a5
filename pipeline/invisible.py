"""Invisible text: the Unicode ``Default_Ignorable_Code_Point`` property, standard library only.

A default-ignorable code point renders as nothing (a soft hyphen, a zero-width joiner, a variation
selector, a Hangul filler, the tag characters U+E0000..E007F that spell ASCII unseen). Such a
character can hide an instruction from a reviewer's eyes or split a token from the rule that would
redact it, so memd removes every one (``strip``; ``pipeline.redaction.normalise`` on bytes) before
redaction and before text enters a prompt, a topic, a published file or an MCP answer, and what it
shows for review renders any that remain visibly (``show``: ``<U+E0041>``).

``IGNORABLE`` is the property itself, generated from the Unicode Character Database as shipped in
the ``regex`` package (``python tests/gen_invisible.py`` rewrites it; ``tests/pipeline/
test_invisible.py`` checks it against the property, code point by code point), never a hand list.
"""

from __future__ import annotations

import re
from functools import cache

# BEGIN GENERATED (tests/gen_invisible.py): Default_Ignorable_Code_Point
IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# END GENERATED
"""Every default-ignorable code point, as inclusive ranges in order."""


def _char_class() -> str:
    return "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in IGNORABLE)


_PATTERN = re.compile(f"[{_char_class()}]")


def is_ignorable(code_point: int) -> bool:
    return any(a <= code_point <= b for a, b in IGNORABLE)


def strip(text: str) -> str:
    """``text`` without any default-ignorable code point."""
    return text if text.isascii() else _PATTERN.sub("", text)


def found(text: str) -> bool:
    """Whether ``text`` holds a default-ignorable code point."""
    return not text.isascii() and _PATTERN.search(text) is not None


def show(text: str, marker: str = "<U+{:04X}>") -> str:
    """``text`` with each default-ignorable code point written visibly (``marker``: ``<U+E0041>``;
    ``&lt;U+E0041&gt;`` in HTML): what memd shows for review hides nothing."""
    if text.isascii():
        return text
    return _PATTERN.sub(lambda m: marker.format(ord(m.group())), text)


@cache
def utf8_pattern() -> bytes:
    """A bytes regular expression matching the UTF-8 encoding of any default-ignorable code point
    (for ``pipeline.redaction.normalise``, which works on bytes)."""
    trie: dict[int, dict] = {}  # type: ignore[type-arg]
    for a, b in IGNORABLE:
        for cp in range(a, b + 1):
            node = trie
            for byte in chr(cp).encode("utf-8"):
                node = node.setdefault(byte, {})
    return _compile(trie)


def _compile(node: dict) -> bytes:  # type: ignore[type-arg]
    """The alternation of ``node``'s byte paths, bytes with the same continuation in one class."""
    by_tail: dict[bytes, list[int]] = {}
    for byte, child in sorted(node.items()):
        by_tail.setdefault(_compile(child) if child else b"", []).append(byte)
    parts = [_class(bytes_) + tail for tail, bytes_ in by_tail.items()]
    return parts[0] if len(parts) == 1 else b"(?:" + b"|".join(parts) + b")"


def _class(values: list[int]) -> bytes:
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return re.escape(bytes([runs[0][0]]))
    inner = b"".join(
        re.escape(bytes([a])) if a == b else re.escape(bytes([a])) + b"-" + re.escape(bytes([b]))
        for a, b in runs
    )
    return b"[" + inner + b"]"
