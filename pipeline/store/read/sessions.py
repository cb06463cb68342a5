"""The transcripts table as every reader reads it: this machine's sessions, their counts, the scan index's generation, the failures, the page's lists."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from pipeline.clock import parse_time
from pipeline.store.read.rows import Rows
from pipeline.store.read.values import in_list, json_value
from pipeline.vocabulary import (
    TRANSCRIPT_FAILED,
    TranscriptState,
)

MINE = "machine = :machine"
"""This machine's transcripts (``pipeline.machine``): each machine scans, extracts and lists its own.
Every statement below that reads ``transcripts`` takes ``:machine``."""

GENERATION_SQL = (
    f"SELECT count(*) AS n, max(id) AS last_id, max(updated_at) AS latest FROM transcripts WHERE {MINE}"
)
"""The same statement on every backend and from every reader (SQLAlchemy or sqlite3): one range of
ix_transcripts_machine_updated."""

Generation = tuple[int, int, str]

Seen = tuple[int, str, tuple[int | None, int | None, int | None, int | None], float | None, str]
"""path -> (id, source, (dev, ino, size, mtime_ns), idle_at as epoch seconds for an active session
else None, state): what the scanner needs to know of a file it does not read again (the scan
index stores exactly this)."""


def generation_of(row: tuple[Any, ...] | Any) -> Generation:
    """The generation from ``GENERATION_SQL``'s row. SQLite hands back the stored text and
    PostgreSQL a datetime; each is only ever compared with itself."""
    count, max_id, latest = row[0], row[1], row[2]
    stamp = latest.isoformat() if isinstance(latest, datetime) else str(latest or "")
    return (int(count), int(max_id or 0), stamp)


def generation(rows: Rows, machine: str) -> Generation:
    """``machine``'s transcripts' generation: changes whenever one of its rows is added, removed or
    updated (``pipeline.scan.index``)."""
    (row,) = rows.all(GENERATION_SQL, {"machine": machine})
    return generation_of((row["n"], row["last_id"], row["latest"]))


SESSION_COLUMNS = (
    "id",
    "source",
    "path",
    "session_id",
    "project",
    "user_messages",
    "last_activity",
    "flags",
    "external_context",
    "state",
    "reason",
    "eligible_at",
)

SESSION_SELECT = f"SELECT {', '.join(SESSION_COLUMNS)} FROM transcripts"

RECENT_FIRST = "ORDER BY last_activity DESC NULLS LAST, id DESC"

COUNTS_SQL = f"SELECT source, state, count(*) AS n FROM transcripts WHERE {MINE} GROUP BY source, state"

NEXT_IDLE_SQL = (
    f"{SESSION_SELECT} WHERE state = '{TranscriptState.ACTIVE}' AND eligible_at IS NOT NULL AND {MINE} "
    "ORDER BY eligible_at, id LIMIT 1"
)

ALL_SQL = f"{SESSION_SELECT} WHERE {MINE} {RECENT_FIRST}"


class SessionRecord(NamedTuple):
    id: int
    source: str
    path: str
    session_id: str | None
    project: str | None
    user_messages: int
    last_activity: datetime | None
    subagent: bool
    external_context: tuple[str, ...]
    state: str
    reason: str | None
    eligible_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "path": self.path,
            "session_id": self.session_id,
            "project": self.project,
            "user_messages": self.user_messages,
            "last_activity": self.last_activity.isoformat() if self.last_activity else None,
            "subagent": self.subagent,
            "external_context": list(self.external_context),
            "state": self.state,
            "reason": self.reason,
            "eligible_at": self.eligible_at.isoformat() if self.eligible_at else None,
        }


def record_from_row(r: Any) -> SessionRecord:
    """A session from the ``SESSION_COLUMNS`` of a row read by name (a SQLAlchemy ``RowMapping``
    or a ``sqlite3.Row``)."""
    flags = json_value(r["flags"]) or {}
    return SessionRecord(
        id=int(r["id"]),
        source=r["source"],
        path=r["path"],
        session_id=r["session_id"],
        project=r["project"],
        user_messages=int(r["user_messages"] or 0),
        last_activity=parse_time(r["last_activity"]),
        subagent=bool(flags.get("subagent")),
        external_context=tuple(json_value(r["external_context"]) or ()),
        state=r["state"],
        reason=r["reason"],
        eligible_at=parse_time(r["eligible_at"]),
    )


def state_counts(rows: Rows, machine: str) -> dict[str, dict[str, int]]:
    """``machine``'s sessions by source, then by state."""
    out: dict[str, dict[str, int]] = {}
    for r in sorted(rows.all(COUNTS_SQL, {"machine": machine}), key=lambda r: (r["source"], r["state"])):
        out.setdefault(r["source"], {})[r["state"]] = int(r["n"])
    return out


def next_idle(rows: Rows, machine: str) -> SessionRecord | None:
    """``machine``'s active session whose idle time comes first."""
    found = rows.all(NEXT_IDLE_SQL, {"machine": machine})
    return record_from_row(found[0]) if found else None


def _recent_first(r: SessionRecord) -> tuple[bool, float, int]:
    return (r.last_activity is None, -r.last_activity.timestamp() if r.last_activity else 0.0, -r.id)


PATHS_BATCH = 500
"""Paths asked for in one statement (SQLite's bound parameters are limited)."""


def sessions(
    rows: Rows,
    machine: str,
    *,
    states: Iterable[str] | None = None,
    paths: Iterable[str] | None = None,
    limit: int | None = None,
) -> list[SessionRecord]:
    """``machine``'s sessions, most recently active first: all of them, or (up to ``limit``) those in
    ``states`` or at ``paths``. Each state is a short read of ix_transcripts_machine_state (``state IN
    (...)`` would sort every matching row)."""
    mine: dict[str, Any] = {"machine": machine}
    if states is None and paths is None:
        return [record_from_row(r) for r in rows.all(ALL_SQL, mine)]
    found: dict[int, SessionRecord] = {}
    cap = " LIMIT :limit" if limit else ""
    for state in sorted(set(states or ())):
        sql = f"{SESSION_SELECT} WHERE state = :state AND {MINE} {RECENT_FIRST}{cap}"
        for r in rows.all(sql, {**mine, "state": state, "limit": limit}):
            found.setdefault(int(r["id"]), record_from_row(r))
    wanted = list(paths or ())[: limit or None]
    for i in range(0, len(wanted), PATHS_BATCH):
        batch = wanted[i : i + PATHS_BATCH]
        listed = ", ".join(f":p{j}" for j in range(len(batch)))
        params = {**mine, **{f"p{j}": p for j, p in enumerate(batch)}}
        for r in rows.all(f"{SESSION_SELECT} WHERE path IN ({listed}) AND {MINE}", params):
            found.setdefault(int(r["id"]), record_from_row(r))
    records = sorted(found.values(), key=_recent_first)
    return records[:limit] if limit else records


TRANSCRIPT_FAILURES_SQL = (
    "SELECT source, session_id, path, state, reason FROM transcripts "
    f"WHERE state IN ({in_list(TRANSCRIPT_FAILED)}) AND {MINE} ORDER BY updated_at DESC LIMIT :limit"
)

EXTRACT_FAILURES_SQL = (
    "SELECT source, session_id, state, reason, updated_at FROM transcripts "
    f"WHERE state = '{TranscriptState.FAILED}' AND {MINE} ORDER BY updated_at DESC LIMIT :limit"
)

PROJECTS_SINCE_SQL = "SELECT DISTINCT project FROM transcripts WHERE last_activity >= :since"
"""The projects of the sessions active since ``:since`` (each maps to one scope)."""

SESSIONS_COUNT_SQL = f"SELECT count(*) AS n FROM transcripts WHERE {MINE}"

SESSIONS_PAGE_SQL = f"{SESSION_SELECT} WHERE {MINE} {RECENT_FIRST} LIMIT :limit OFFSET :offset"
"""One page of every session of this machine, most recent first."""

SESSIONS_IN_STATE_COUNT_SQL = f"SELECT count(*) AS n FROM transcripts WHERE state = :state AND {MINE}"

SESSIONS_IN_STATE_PAGE_SQL = (
    f"{SESSION_SELECT} WHERE state = :state AND {MINE} {RECENT_FIRST} LIMIT :limit OFFSET :offset"
)

SESSIONS_MATCHING_SQL = (
    f"{SESSION_SELECT} WHERE (session_id = :needle OR project = :needle OR path = :needle) AND {MINE} "
    f"{RECENT_FIRST} LIMIT :limit"
)
"""The sessions whose id, project or transcript path is exactly ``:needle`` (a topic file's source)."""

BACKLOG_SQL = (
    f"SELECT state, coalesce(reason, '') AS reason, count(*) AS n FROM transcripts WHERE {MINE} "
    "GROUP BY state, coalesce(reason, '') ORDER BY state, n DESC"
)
"""Sessions by state and reason (the backlog and why each part of it waits)."""

PROJECTS_SQL = "SELECT DISTINCT project FROM transcripts WHERE project IS NOT NULL AND project <> ''"
"""Every project folder a session was recorded in (each scope's folders: ``pipeline.projects.scopes``)."""
