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
    from pipeline.store.readmodel import parse_time

    moment = parse_time(value)
    return moment.strftime("%Y-%m-%d %H:%MZ") if moment else "never"


_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """``text`` with every control character shown as ``\\xNN``: a session's path, project or reason
    comes from files memd did not write, and an escape sequence in one must not reach the terminal."""
    return text.translate(_CONTROLS)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 0) -> list[str]:
    """The header line and one line per row, padded by hand (standard library only).

    ``left``: how many leading columns are left-aligned (all when 0); the rest are right-aligned.
    """
    rows = [[printable(c) for c in cells] for cells in rows]
    widths = [max(len(cells[i]) for cells in (header, *rows)) for i in range(len(header))]
    lefts = len(header) if left == 0 else left

    def line(cells: Sequence[str]) -> str:
        padded = (
            c.ljust(w) if i < lefts else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        return " " + "  ".join(padded).rstrip()

    return [line(cells) for cells in (header, *rows)]
