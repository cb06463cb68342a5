"""Values as text for the fast commands' terminal output (`memd status`, `memd scan`): an absent
value, a moment, a string from a file memd did not write, plain padded columns. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ABSENT = "-"
"""How every table and line shows a value that is not there (never ``None``, never blank)."""


def shown(value: Any) -> str:
    """A value as text, or ``ABSENT`` when there is none."""
    return ABSENT if value is None or value == "" else str(value)


def when(value: Any) -> str:
    """A moment as ``2026-11-01 12:00Z``, or ``never``."""
    from pipeline.clock import parse_time

    moment = parse_time(value)
    return moment.strftime("%Y-%m-%d %H:%MZ") if moment else "never"


_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """``text`` with every control character shown as ``\\xNN``: a session's path, project or reason
    comes from files memd did not write, and an escape sequence in one must not reach the terminal."""
    return text.translate(_CONTROLS)


def format_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    left: int = 0,
    width: int | None = None,
    keep: int | None = None,
) -> list[str]:
    """The header line and one line per row, padded by hand (standard library only).

    ``left``: how many leading columns are left-aligned (all when 0); the rest are right-aligned.
    ``width``: the widest a line may be (None: no limit). A table wider than that keeps its first
    ``keep`` columns as the table and shows each row's other columns under it, indented, as
    ``header: value`` pairs, as many to a line as fit; a value is never cut (one longer than the
    width has a line of its own). Without ``keep`` the table is never changed.
    """
    cells = [[printable(c) for c in row] for row in rows]
    lines = _aligned(header, cells, left)
    if width is None or keep is None or keep >= len(header) or all(len(line) <= width for line in lines):
        return lines
    head, *body = _aligned(header[:keep], [row[:keep] for row in cells], left)
    out = [head]
    for line, row in zip(body, cells, strict=True):
        out.append(line)
        out += _pairs([f"{h}: {v}" for h, v in zip(header[keep:], row[keep:], strict=True)], width)
    return out


STACK_INDENT = "    "
"""Where the stacked columns of a row start (under the row, deeper than the table's own margin)."""


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]], left: int) -> list[str]:
    widths = [max(len(cells[i]) for cells in (header, *rows)) for i in range(len(header))]
    lefts = len(header) if left == 0 else left

    def line(cells: Sequence[str]) -> str:
        padded = (
            c.ljust(w) if i < lefts else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        return " " + "  ".join(padded).rstrip()

    return [line(cells) for cells in (header, *rows)]


def _pairs(pairs: Sequence[str], width: int) -> list[str]:
    """``pairs`` packed into lines of at most ``width`` (a longer pair alone on its line)."""
    lines: list[str] = []
    current = ""
    for pair in pairs:
        joined = f"{current}  {pair}" if current else STACK_INDENT + pair
        if current and len(joined) > width:
            lines.append(current)
            joined = STACK_INDENT + pair
        current = joined
    if current:
        lines.append(current)
    return lines
