"""`memd status`'s ``usage`` section: per published scope, whether later sessions used its memory.

The arithmetic is ``pipeline.hits.rate.summarize`` (standard library only, the same figures
``usage_summary`` computes through SQLAlchemy); the rows come from ``daemon.lean.rows`` running
the store's read model (``pipeline.store.readmodel``): the ``publish.index`` kv value, the
``memory_uses`` and the sessions (``transcripts``) of the window, and each scope's live extracts
(``stage1_outputs``) with their use counts.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from daemon.lean.rows import Rows
from daemon.status.report import MemoryUse, ScopeUsage, Usage
from pipeline.hits.rate import INDEX_KEY, WINDOW_DAYS, SessionRow, UseRow, summarize
from pipeline.store.readmodel import (
    KV_SQL,
    LIVE_MEMORIES_SQL,
    SESSIONS_SINCE_SQL,
    USES_SINCE_SQL,
    iso,
    json_value,
    parse_time,
)


def usage(rows: Rows, now: datetime, *, window_days: int | None = None) -> Usage:
    """One entry per scope memd published or saw used, over the last ``window_days``."""
    days = WINDOW_DAYS if window_days is None else window_days
    start = now - timedelta(days=days)
    params = {"since": rows.time(start)}
    index = rows.all(KV_SQL, {"key": INDEX_KEY})
    uses = [
        UseRow(r["scope"], r["file"], r["transcript_id"], used_at)
        for r in rows.all(USES_SINCE_SQL, params)
        if (used_at := parse_time(r["used_at"])) is not None
    ]
    sessions = [
        SessionRow(int(r["id"]), r["project"], parse_time(r["last_activity"]))
        for r in rows.all(SESSIONS_SINCE_SQL, params)
    ]
    memories = _memories(rows)
    summary = summarize(
        json_value(index[0]["value"]) if index else None, uses, sessions, now, window_days=days
    )
    used_at_of: dict[str, list[datetime]] = {}
    for u in uses:
        used_at_of.setdefault(u.scope, []).append(u.used_at)
    scopes = [
        ScopeUsage(
            scope=s.scope,
            since=iso(s.since),
            hit_rate=None if s.hit_rate is None else round(s.hit_rate, 3),
            sessions=s.sessions,
            sessions_reading=s.sessions_reading,
            sessions_given=s.sessions_given,
            uses=sum(1 for at in used_at_of.get(s.scope, []) if at >= s.since),
            last_used_at=iso(s.last_used_at),
            topics_published=s.topics_published,
            topics_read=s.topics_read,
            memories=memories.get(s.scope, MemoryUse()),
        )
        for s in summary
    ]
    return Usage(window_days=days, scopes=scopes)


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
