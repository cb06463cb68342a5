"""`memd status`'s ``flagged`` section: the topics agents called wrong or stale through `memd mcp`
(``memory_feedback``) that no consolidation was given yet (the rule: ``pipeline.store.read.flags``)."""

from __future__ import annotations

from pipeline.status.report import Flagged
from pipeline.status.usage import scope_folders
from pipeline.store.read.flags import newest_flags
from pipeline.store.read.rows import Rows


def flagged(rows: Rows) -> list[Flagged]:
    """The open flags, newest first (at most ``OPEN_FLAGS_LIMIT``)."""
    found = newest_flags(rows)
    folders = scope_folders(rows) if found else {}
    return [
        Flagged(
            # the memory's id, as ``pipeline.projects.scopes.topic_id_text`` writes it (that package
            # starts git: `memd status` does not load it)
            id=f"{f.scope}/{f.file}",
            verdict=f.verdict,
            note=f.note,
            at=f.created_at.isoformat(),
            folders=folders.get(f.scope, []),
        )
        for f in found
    ]
