"""`memd status`'s ``flagged`` section: the topics agents called wrong or stale through `memd mcp`
(``memory_feedback``) that no consolidation was given yet, read and drawn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from daemon.lean.rows import Rows
from daemon.status.hits import scope_folders
from daemon.status.report import Flagged, Unreadable
from pipeline.store.readmodel import OPEN_FLAGS_SQL, iso

if TYPE_CHECKING:
    from rich.console import Console


def flagged(rows: Rows) -> list[Flagged]:
    """The open flags, newest first (at most ``OPEN_FLAGS_LIMIT``)."""
    found = rows.all(OPEN_FLAGS_SQL)
    folders = scope_folders(rows) if found else {}
    return [
        Flagged(
            # the memory's id, as ``pipeline.projects.scopes.topic_id_text`` writes it (that package
            # starts git: `memd status` does not load it)
            id=f"{r['scope']}/{r['file']}",
            verdict=r["verdict"],
            note=r["note"],
            at=iso(r["created_at"]),
            folders=folders.get(r["scope"], []),
        )
        for r in found
    ]


def flagged_table(console: Console, section: list[Flagged] | Unreadable | None) -> None:
    """The flagged topics, when there is any (nothing printed otherwise)."""
    from daemon.lean.text import shown, when
    from daemon.status.hits import with_folders
    from daemon.status.tables import plain_table

    if isinstance(section, Unreadable):
        console.print(f"flagged by agents: {section.error}", markup=False)
        return
    if not section:
        return
    rows = [(with_folders(f.id, f.folders), f.verdict, when(f.at), shown(f.note)) for f in section]
    plain_table(
        console,
        "flagged by agents (fixed or dropped at the next consolidation)",
        ("memory", "verdict", "when", "note"),
        rows,
    )
