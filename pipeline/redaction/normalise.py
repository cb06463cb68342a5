"""What the model sees, once: text without terminal controls or invisible characters.

ANSI CSI and OSC sequences (colour, cursor, hyperlinks), the other C0/C1 control characters (tab,
line feed and carriage return stay), a character erased by a backspace, and every default-ignorable
code point (the Unicode property, ``pipeline.invisible``: zero-width and bidirectional format
characters, soft hyphen, variation selectors, Hangul fillers, the tag block U+E0000..E007F) are
removed. The same written as JSON escapes (``\\u001b[31m``, ``\\\\u200b``, a tag character as
its surrogate pair: a transcript's tool result escaped once or twice) are removed too. So ``grep --color=always`` or a
zero-width space never splits a secret from the name the rules key on, and what the redactor
checked is exactly what is sent. Line breaks are never removed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

from pipeline import invisible

# Each pass removes what one pattern finds (or, for the C0 controls, what a translation deletes):
# text without anything to remove costs a few byte searches.
_C0 = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_C0_BYTES = [bytes([c]) for c in _C0]
_B_C0 = re.compile(b"[" + re.escape(_C0) + b"]+")
_B_SEQUENCE = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]{0,4096}[\x80-\xbf]{0,3}(?:\x07|\x1b\\)?|[ -/]*[0-~])"
)
"""An ANSI CSI, OSC or other escape sequence (an OSC cut at its length limit takes in the rest of the
character it stopped in: the text stays UTF-8)."""
_B_OVERSTRUCK = re.compile(rb"(?:[^\x08\n\x80-\xbf][\x80-\xbf]*)?\x08")
"""A character erased by a backspace (``_\\bx``, as ``man`` prints)."""
_B_WIDE = re.compile(  # C1 controls (a CSI or an OSC among them) and the invisible format characters
    rb"\xc2\x9b[0-?]*[ -/]*[@-~]|\xc2\x9d[^\x07\n]{0,4096}?(?:\x07|\xc2\x9c)"
    rb"|\xc2[\x80-\x9f]|\xe2\x80[\x8b-\x8f\xaa-\xae]|\xe2\x81[\xa0-\xa4\xa6-\xa9]|\xef\xbb\xbf"
)
_ASCII = bytes(range(0x80))
_B_ESCAPED = re.compile(
    rb"\\u(?:001[bB](?:\[[0-?]*[ -/]*[@-~]|\])|200[b-fB-F]|202[a-eA-E]|206[0-46-9]|[fF][eE][fF][fF])"
)

_B_IGNORABLE = re.compile(invisible.utf8_pattern())
"""Any default-ignorable code point, as UTF-8 (``pipeline.invisible``)."""


def _escaped_ignorable() -> re.Pattern[bytes]:
    """A JSON escape (``\\u00ad``, any backslash run) of a default-ignorable code point of the BMP,
    or the high half of a surrogate pair one outside it may start with, its low half after it."""
    units: set[int] = set()
    for a, b in invisible.IGNORABLE:
        for cp in range(a, b + 1):
            units.add(cp if cp < 0x10000 else 0xD800 + ((cp - 0x10000) >> 10))
    alternation = b"|".join(f"{u:04x}".encode() for u in sorted(units))
    return re.compile(rb"(\\+)u(" + alternation + rb")(?:\1u(d[c-f][0-9a-f]{2}))?", re.IGNORECASE)


_B_ESCAPED_IGNORABLE = _escaped_ignorable()

Spans = list[tuple[int, int]]


def _pattern_spans(pattern: re.Pattern[bytes]) -> Callable[[bytes], Spans]:
    return lambda buf: [m.span() for m in pattern.finditer(buf)]


def _escaped_spans(buf: bytes) -> Spans:
    """Escaped sequences: ``\\u001b[31m`` with its whole backslash run (JSON-escaped once or
    more), an escaped OSC up to its escaped BEL or ST."""
    out: Spans = []
    pos = 0
    for m in _B_ESCAPED.finditer(buf):
        s, e = m.span()
        if s < pos:
            continue
        while s > pos and buf[s - 1] == 92:  # the rest of the backslash run
            s -= 1
        run = buf[s : m.start() + 1]
        if buf[e - 1 : e] == b"]":  # OSC: up to BEL or ST, escaped the same way
            limit = min(len(buf), e + 4096)
            ends = [
                (at, len(mark))
                for mark in (run + b"u0007", run + b"u001b" + run, run + b"u001B" + run)
                if (at := buf.find(mark, e, limit)) >= 0
            ]
            if not ends:
                continue
            at, size = min(ends)
            e = at + size
        out.append((s, e))
        pos = e
    return out


def _escaped_ignorable_spans(buf: bytes) -> Spans:
    """Escaped default-ignorable code points (a surrogate pair only whole, and only when it is one)."""
    out: Spans = []
    for m in _B_ESCAPED_IGNORABLE.finditer(buf):
        unit = int(m.group(2), 16)
        if 0xD800 <= unit < 0xDC00:
            low = m.group(3)
            if low is None or not invisible.is_ignorable(
                0x10000 + ((unit - 0xD800) << 10) + (int(low, 16) - 0xDC00)
            ):
                continue
            out.append(m.span())
        else:
            out.append((m.start(), m.end(2)))
    return out


def _ignorable_spans(buf: bytes) -> Spans:
    """``_B_IGNORABLE``'s matches, in bytes that may not be UTF-8 (``_utf8_ignorable_spans`` when
    they are, searched whole when not)."""
    try:
        buf.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return [m.span() for m in _B_IGNORABLE.finditer(buf)]
    return _utf8_ignorable_spans(buf)


def _utf8_ignorable_spans(buf: bytes) -> Spans:
    """``_B_IGNORABLE``'s matches in UTF-8. Each match is one whole character, all of its bytes
    above ASCII: the pattern is searched in those bytes alone (a copy at memory speed; the
    alternation searched over a whole transcript costs more than all the rules), and each match
    found there is the next occurrence of its bytes in ``buf``."""
    out: Spans = []
    pos = 0
    for m in _B_IGNORABLE.finditer(buf.translate(None, _ASCII)):
        s = buf.find(m.group(), pos)
        pos = s + len(m.group())
        out.append((s, pos))
    return out


_IGNORABLE_SPANS = _ignorable_spans


# The same matches as _B_WIDE, found by patterns that each start with one literal byte (a search
# for a literal is several times faster than one for an alternation). Only an OSC (after \xc2) can
# hold another's bytes: what starts inside an earlier span is dropped, as one pattern would skip it.
_B_WIDE_PARTS = (
    re.compile(rb"\xc2(?:\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07\n]{0,4096}?(?:\x07|\xc2\x9c)|[\x80-\x9f])"),
    re.compile(rb"\xe2(?:\x80[\x8b-\x8f\xaa-\xae]|\x81[\xa0-\xa4\xa6-\xa9])"),
    re.compile(rb"\xef\xbb\xbf"),
)
_C0_TO_NUL = bytes(0 if c in _C0 else c for c in range(256))
_NUL_RUN = re.compile(rb"\x00+")


def _wide_spans(buf: bytes) -> Spans:
    """``_B_WIDE``'s matches."""
    out: Spans = []
    end = 0
    for s, e in sorted([m.span() for pattern in _B_WIDE_PARTS for m in pattern.finditer(buf)]):
        if s >= end:
            out.append((s, e))
            end = e
    return out


def _c0_spans(buf: bytes) -> Spans:
    """``_B_C0``'s matches: runs of NUL once every control byte is one (a literal search)."""
    return [m.span() for m in _NUL_RUN.finditer(buf.translate(_C0_TO_NUL))]


_SEQUENCE_SPANS = _pattern_spans(_B_SEQUENCE)
_OVERSTRUCK_SPANS = _pattern_spans(_B_OVERSTRUCK)
_C0_SPANS = _c0_spans
_WIDE_SPANS = _wide_spans


def _any_escaped_ignorable(buf: bytes) -> bool:
    """``_B_ESCAPED_IGNORABLE.search(buf) is not None``, tried only where a ``\\u`` stands (a
    literal search; the pattern, a long case-blind alternation, costs more than all the rules when
    searched over a whole transcript)."""
    i = buf.find(b"\\u")
    while i >= 0:
        if _B_ESCAPED_IGNORABLE.match(buf, i) is not None:
            return True
        i = buf.find(b"\\u", i + 2)
    return False


def _passes(buf: bytes) -> list[Callable[[bytes], Spans]]:
    """The passes ``buf`` needs, in order (each decided on the text as the previous ones leave it)."""
    out = []
    if b"\x1b" in buf:
        out.append(_SEQUENCE_SPANS)
    if b"\x08" in buf:
        out.append(_OVERSTRUCK_SPANS)
    if any(byte in buf for byte in _C0_BYTES):  # one memchr each: cheaper than a copy of the text
        out.append(_C0_SPANS)
    if not buf.isascii():
        # the bytes above ASCII alone (a copy at memory speed, usually small): each character's
        # lead byte stays next to its own continuation bytes, so a match here is a real one
        high = buf.translate(None, _ASCII)
        if _B_WIDE.search(high) is not None:
            out.append(_WIDE_SPANS)
        if _B_IGNORABLE.search(high) is not None:
            out.append(_IGNORABLE_SPANS)
    if b"\\u" in buf:
        if _B_ESCAPED.search(buf) is not None:
            out.append(_escaped_spans)
        if _any_escaped_ignorable(buf):
            out.append(_escaped_ignorable_spans)
    return out


def _cut(buf: bytes, spans: Spans) -> bytes:
    pieces = []
    pos = 0
    for s, e in spans:
        pieces.append(buf[pos:s])
        pos = e
    pieces.append(buf[pos:])
    return b"".join(pieces)


def normalise_bytes(buf: bytes) -> bytes:
    """``normalise`` on UTF-8 bytes (a text encoded with ``surrogatepass``)."""
    utf8 = True  # every pass removes whole characters; after an escape sequence's, it is checked again
    for find in _passes(buf):
        if find is _C0_SPANS:
            buf = buf.translate(None, _C0)  # the same removal, without building spans
        else:
            spans = (_utf8_ignorable_spans if utf8 else find)(buf) if find is _IGNORABLE_SPANS else find(buf)
            if spans:
                buf = _cut(buf, spans)
                utf8 = utf8 and find is not _SEQUENCE_SPANS
    return buf


def normalise(text: str) -> str:
    """``text`` without terminal controls and invisible format characters (raw or JSON-escaped)."""
    buf = text.encode("utf-8", "surrogatepass")
    out = normalise_bytes(buf)
    return text if len(out) == len(buf) else out.decode("utf-8", "surrogatepass")


def normalise_mapped(buf: bytes) -> tuple[bytes, Callable[[int], int]]:
    """``normalise_bytes(buf)``, and a function taking a byte offset in it back to one in ``buf``."""
    backs: list[Callable[[int], int]] = []
    utf8 = True  # as in normalise_bytes
    for find in _passes(buf):
        spans = (_utf8_ignorable_spans if utf8 else find)(buf) if find is _IGNORABLE_SPANS else find(buf)
        if spans:
            backs.append(_back(spans))
            buf = _cut(buf, spans)
            utf8 = utf8 and find is not _SEQUENCE_SPANS
    if not backs:
        return buf, _same

    def back_all(offset: int) -> int:
        for back in reversed(backs):
            offset = back(offset)
        return offset

    return buf, back_all


def _back(spans: Spans) -> Callable[[int], int]:
    at: list[int] = []  # where each removal sits in the result
    shift: list[int] = []  # bytes removed up to and including it
    removed = 0
    for s, e in spans:
        at.append(s - removed)
        removed += e - s
        shift.append(removed)

    def back(offset: int) -> int:
        i = bisect_right(at, offset)
        return offset + (shift[i - 1] if i else 0)

    return back


def _same(offset: int) -> int:
    return offset
