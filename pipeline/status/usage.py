"""`memd status`'s ``usage`` section: per published scope, whether later sessions used its memory.

The figures are ``pipeline.hits.rate.summarize`` (the same ``usage_summary`` computes through
SQLAlchemy), run on ``pipeline.store.read.rows``; each scope's live extracts (``stage1_outputs``) with
their use counts come from the read model's ``LIVE_MEMORIES_SQL``, and beside each hit rate the
``helped`` and ``misled`` verdicts agents gave its topics (``SCOPE_VERDICTS_SQL``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pipeline.hits.rate import WINDOW_DAYS, summarize
from pipeline.projects.scopes import folders_by_scope
from pipeline.status.report import MemoryUse, ScopeUsage, Usage
from pipeline.store.read.rows import Rows
from pipeline.store.read.sessions import PROJECTS_SQL
from pipeline.store.read.uses import LIVE_MEMORIES_SQL, SCOPE_VERDICTS_SQL, tally
from pipeline.store.read.values import iso


def usage(rows: Rows, now: datetime, *, window_days: int | None = None) -> Usage:
    """One entry per scope memd published or saw used, over the last ``window_days``."""
    days = WINDOW_DAYS if window_days is None else window_days
    summary = summarize(rows, now, window_days=days)
    memories = _memories(rows) if summary else {}
    folders = scope_folders(rows) if summary else {}
    verdicts = _verdicts(rows, now - timedelta(days=days)) if summary else {}
    scopes = [
        ScopeUsage(
            scope=s.scope,
            since=iso(s.since),
            hit_rate=None if s.hit_rate is None else round(s.hit_rate, 3),
            sessions=s.sessions,
            sessions_reading=s.sessions_reading,
            sessions_given=s.sessions_given,
            uses=s.uses,
            last_used_at=iso(s.last_used_at),
            topics_published=s.topics_published,
            topics_read=s.topics_read,
            memories=memories.get(s.scope, MemoryUse()),
            folders=folders.get(s.scope, []),
            helped=verdicts.get(s.scope, {}).get("helped", 0),
            misled=verdicts.get(s.scope, {}).get("misled", 0),
        )
        for s in summary
    ]
    return Usage(window_days=days, scopes=scopes)


def scope_of(topic_id: str) -> str:
    """The scope of a memory's id (``projects/app-1a2b3c4d`` of ``projects/app-1a2b3c4d/port.md``)."""
    return topic_id.rpartition("/")[0]


def _verdicts(rows: Rows, since: datetime) -> dict[str, dict[str, int]]:
    """Per scope, the ``helped`` and ``misled`` verdicts given since ``since``."""
    by_scope: dict[str, list[dict[str, object]]] = {}
    for r in rows.all(SCOPE_VERDICTS_SQL, {"since": rows.time(since)}):
        by_scope.setdefault(str(r["scope"]), []).append(r)
    return {scope: tally(found) for scope, found in by_scope.items()}


def scope_folders(rows: Rows) -> dict[str, list[str]]:
    """Each scope's project folders, from the projects the store recorded for sessions."""
    return folders_by_scope(str(r["project"]) for r in rows.all(PROJECTS_SQL))


def _memories(rows: Rows) -> dict[str, MemoryUse]:
    """Per scope, its live extracts: how many, how many were ever used, their use counts, last use."""
    return {
        r["scope"]: MemoryUse(
            live=int(r["live"]),
            used=int(r["used"] or 0),
            use_count=int(r["use_count"]),
            last_used_at=iso(r["last_used_at"]),
        )
        for r in rows.all(LIVE_MEMORIES_SQL)
    }
