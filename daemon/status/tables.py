"""`memd status`'s longer lists, as plain padded columns: the publish targets and the memory use per scope.

A rich ``Table`` costs about a millisecond a row and these lists grow with the scopes, so they are
padded by hand (``plain_table``); the JSON report has every field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


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


def publish_table(console: Console, section: dict[str, Any]) -> None:
    """Each target and scope: last published, outcome and reason, the last republish after an outside change."""
    targets = section.get("targets") or []
    if "error" in section or not targets:
        return
    header = ("target", "scope", "outcome", "last published", "republished (outside change)", "reason")
    rows = [
        (
            shown(t["target"]),
            shown(t["scope"]),
            shown(t["outcome"]),
            when(t.get("published_at")),
            when(t["republished_at"]) if t.get("republished_at") else ABSENT,
            shown(t.get("reason")),
        )
        for t in targets
    ]
    plain_table(console, "publish targets", header, rows)


def usage_table(console: Console, section: dict[str, Any]) -> None:
    """Per scope: the hit rate (sessions that used a topic file) and the use counts."""
    if "error" in section:
        console.print(f"memory use: {section['error']}", markup=False)
        return
    scopes = section.get("scopes") or []
    if not scopes:
        console.print("memory use: nothing published yet", markup=False)
        return
    header = (
        "scope",
        "hit rate",
        "sessions using",
        "given",
        "topics read",
        "uses",
        "last use",
        "memories used",
    )
    rows = []
    for s in scopes:
        mem = s.get("memories") or {}
        rows.append(
            (
                shown(s["scope"]),
                ABSENT if s.get("hit_rate") is None else f"{100 * s['hit_rate']:.0f}%",
                f"{s['sessions_reading']} of {s['sessions']}",
                str(s["sessions_given"]),
                f"{s['topics_read']} of {s['topics_published']}",
                str(s["uses"]),
                when(s.get("last_used_at")),
                f"{mem.get('used', 0)} of {mem.get('live', 0)} ({mem.get('use_count', 0)} uses)",
            )
        )
    plain_table(console, f"memory use (last {section.get('window_days')} days)", header, rows, left=1)


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


def plain_table(
    console: Console, title: str, header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 0
) -> None:
    """A title, a bold header and the rows, padded by hand (``format_table``)."""
    from rich.text import Text

    head, *body = format_table(header, rows, left=left)
    console.print(Text(title))
    console.print(Text(head, style="bold"), soft_wrap=True)
    console.print(Text("\n".join(body)), soft_wrap=True)
