"""Secrets wrapped across lines: a span found on one line grows over the lines that continue it.

Two ways a value goes on: a backslash-newline continuation right after it (``KEY=abc\\`` then
``def``), and a base64 block (the span reaches the end of a long line and the next lines are base64
and nothing else, as ``base64 -w 76`` or a terminal wraps them). Both are recognised in plain text
and once or twice JSON-escaped, where a newline is ``\\n`` or ``\\\\n`` and a continuation
``\\\\\\n`` or ``\\\\\\\\\\\\n``.
"""

from __future__ import annotations

import re

MIN_WRAPPED_LINE = 40
"""A line shorter than this is not a wrapped block's line (it may be the block's last line)."""
MAX_WRAPPED_LINES = 256

# After the span: a raw line break (a backslash before it makes it a continuation), or a JSON-escaped
# one: a backslash run, then ``n`` (or ``r``, a run and ``n``). The first run's length tells which.
_BREAK = re.compile(rb"(?P<raw>\\?)\r?\n|(?P<esc>\\+)(?:r\\+)?n")
_NEWLINE_RUNS = frozenset((1, 2, 4))  # ``\n`` escaped once, twice, three times
_CONTINUATION_RUNS = frozenset((3, 6, 12))  # an escaped backslash, then an escaped newline
_CONTINUED = re.compile(rb"[ \t]*+(?!-)[A-Za-z0-9+/_=.~-]+")
_GUTTER = rb"(?:[ \t]*+(?:[0-9]{0,6}[ \t]*(?:\xe2\x94\x82|\\+u2502)|>{1,3}|\|)(?=[ \t]))?[ \t]*+"
"""What a tool or a mail client prints before a wrapped line: an editor's gutter (``  21 │``, or
blanks where the number was), a quoted reply's ``>`` or ``|``."""
_B64_LINE = re.compile(_GUTTER + rb"(?P<v>[A-Za-z0-9+/_-]+={0,2})")
_RAW_NEXT = re.compile(rb"\n" + _GUTTER + rb"[A-Za-z0-9+/_-]+={0,2}(?:\r?\n|\\+[nr\"]|[\"'`]|$)")
_LINE_END = re.compile(rb"\r?\n|\\+[nr\"]|[\"'`]|$")


def _line_break(buf: bytes, pos: int) -> tuple[int, bool] | None:
    """At ``pos``: (where the next line starts, whether the break is a backslash continuation)."""
    m = _BREAK.match(buf, pos)
    if m is None:
        return None
    if m.group("esc") is None:
        return m.end(), bool(m.group("raw"))
    run = len(m.group("esc"))
    if run in _NEWLINE_RUNS:
        return m.end(), False
    if run in _CONTINUATION_RUNS:
        return m.end(), True
    return None


_UNNUMBERED = re.compile(rb"[ \t]*+(?:\xe2\x94\x82|\\+u2502)")
"""An editor's gutter with no line number: the line above goes on here."""
_KEY_BEFORE = re.compile(rb"[ \t]*+[\"']?[A-Za-z0-9_.-]{1,80}[\"']?:[ \t]")


def _folded(buf: bytes, start: int, nxt: int, text: int) -> bool:
    """YAML's plain scalar over lines: the value after ``key:`` goes on on a line indented deeper
    than the key (``access-secret: ab`` then ``    cd``)."""
    here = line_start(buf, start)
    key = _KEY_BEFORE.match(buf, here)
    if key is None or key.end() > start:
        return False
    indent = len(key.group(0)) - len(key.group(0).lstrip(b" \t"))
    return buf[nxt:text].strip(b" \t") == b"" and text - nxt > indent


def line_start(buf: bytes, pos: int) -> int:
    """Where the line holding ``pos`` starts (after a raw newline or an escaped ``\\n``)."""
    window = max(0, pos - 4096)
    raw = buf.rfind(b"\n", window, pos)
    lo = raw + 1 if raw >= 0 else window
    esc = buf.rfind(b"\\n", lo, pos)
    return lo if esc < 0 else esc + 2


def extend_wrapped(buf: bytes, start: int, end: int) -> int:
    """The end of the span ``[start, end)`` once the lines that continue it are included."""
    if buf[end : end + 1] == b"\n" and _RAW_NEXT.match(buf, end) is None:
        return end  # the common case: a raw newline and a next line that is not base64
    width = -1
    for _ in range(MAX_WRAPPED_LINES):
        brk = _line_break(buf, end)
        if brk is None:
            return end
        nxt, continued = brk
        if continued:
            m = _CONTINUED.match(buf, nxt)
            if m is None:
                return end
            end, width = m.end(), m.end() - nxt
            continue
        m = _B64_LINE.match(buf, nxt)
        if m is None or _LINE_END.match(buf, m.end()) is None:
            return end
        if width < 0:
            width = end - max(start, line_start(buf, end))
            if buf[end - 1] == 94 or _folded(buf, start, nxt, m.start("v")):  # ``^`` ends a cmd line
                end, width = m.end(), MIN_WRAPPED_LINE
                continue
        if width < MIN_WRAPPED_LINE and not _UNNUMBERED.match(buf, nxt):
            return end  # the block's last line was shorter: it has ended (unless a gutter says it goes on)
        end, width = m.end(), m.end() - m.start("v")
    return end


_BLOCK_HEADER = frozenset(b"| |- |+ > >- >+".split())
_BLOCK_LINE = re.compile(rb"(?:\r?\n|\\{1,4}n)(?P<indent>[ \t]+)(?P<text>[^\r\n\\\"]+)")


def yaml_block(buf: bytes, key_start: int, header: bytes, pos: int) -> tuple[int, int] | None:
    """``secret: |`` (or ``>-``...) at ``pos``: the span of the block scalar's lines, which are
    indented deeper than the key starting at ``key_start``; ``None`` when ``header`` opens none."""
    if header not in _BLOCK_HEADER:
        return None
    column = key_start - line_start(buf, key_start)
    start = end = -1
    indent = b""
    for _ in range(MAX_WRAPPED_LINES):
        m = _BLOCK_LINE.match(buf, pos)
        if m is None or len(m.group("indent")) <= column:
            break
        if start < 0:
            start, indent = m.start("text"), m.group("indent")
        elif not m.group("indent").startswith(indent):
            break
        end = pos = m.end()
    return (start, end) if start >= 0 else None


MAX_JOINED = 16
_QUOTES = frozenset(b"\"'`")
# After a quoted value's closing quote: an operator that joins strings (``+`` in most languages,
# ``.`` in PHP and Perl, ``..`` in Lua, ``&`` in VB, ``||`` in SQL) or none (C and Python join
# adjacent literals), maybe a line break between, then the next literal of the same quoting.
_CONCAT = re.compile(
    rb"(?P<q>\\*[\"'`])[ \t]*(?P<op>\+|\.\.?|&|\|\|)?[ \t]*(?P<nl>\\?\r?\n|\\+n)?(?:[ \t]*[0-9]{1,6}(?:\t|\\+t)|\+)?[ \t]*"
    rb"(?P<op2>\+|\.\.?|&|\|\|)?[ \t]*(?P=q)(?P<v>[^\"'`\\\r\n]{1,512})(?=(?P=q))"
)


def extend_joined(buf: bytes, end: int) -> int:
    """The end of a quoted value ending at ``end`` once the literals joined to it are included
    (``"abcd1234" +`` then ``"efgh5678"`` on the next line)."""
    for _ in range(MAX_JOINED):
        m = _CONCAT.match(buf, end)
        if m is None:
            return end
        glued = m.start("v") - m.end("q") == len(m.group("q"))  # ``"ab""cd"``: one shell word
        if not (m.group("op") or m.group("op2") or m.group("nl") or glued):
            return end  # adjacent literals on one line: a list of words more often than one value
        end = m.end("v")
    return end
