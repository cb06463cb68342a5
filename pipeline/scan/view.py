"""What a scan reports: the sessions by source and state, the notable ones, the next to go idle.

Standard library only, so `memd scan` can show the store's view after its quick check
(``pipeline.scan.probe``) without loading SQLAlchemy. The store layer
(``pipeline.store.transcripts``) builds the same records from the same columns with
``record_from_row``; ``read_sqlite`` answers the same questions with ``sqlite3``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

NOTABLE_STATES = ("eligible", "failed", "unreadable")

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
_SELECT = f"SELECT {', '.join(SESSION_COLUMNS)} FROM transcripts"
RECENT_FIRST = "ORDER BY last_activity DESC NULLS LAST, id DESC"
COUNTS_SQL = "SELECT source, state, count(*) AS n FROM transcripts GROUP BY source, state"
NEXT_IDLE_SQL = (
    f"{_SELECT} WHERE state = 'active' AND eligible_at IS NOT NULL ORDER BY eligible_at, id LIMIT 1"
)
ALL_SQL = f"{_SELECT} {RECENT_FIRST}"
# The most recent ``:limit`` of each state, merged: each part is a short read of
# ix_transcripts_state, where ``state IN (...)`` would sort every matching row.
NOTABLE_SQL = (
    " UNION ALL ".join(
        f"SELECT * FROM ({_SELECT} WHERE state = '{state}' {RECENT_FIRST} LIMIT :limit)"
        for state in NOTABLE_STATES
    )
    + f" {RECENT_FIRST} LIMIT :limit"
)


@dataclass(frozen=True, slots=True)
class SessionRecord:
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


@dataclass
class ScanReport:
    sessions: list[SessionRecord]
    """Every session; filled only when the scan was asked to ``collect_sessions``."""
    changed_paths: set[str] = field(default_factory=set)
    files_seen: int = 0
    files_parsed: int = 0
    bytes_parsed: int = 0
    duration_s: float = 0.0
    enqueued: int = 0
    by_source: dict[str, dict[str, int]] = field(default_factory=dict)
    notable_sessions: list[SessionRecord] = field(default_factory=list)
    next_idle_session: SessionRecord | None = None

    def counts(self) -> dict[str, dict[str, int]]:
        """Sessions by source, then by state."""
        return self.by_source

    def notable(self) -> list[SessionRecord]:
        """What `memd scan` tables by default: eligible, failed, unreadable or changed in this scan."""
        return self.notable_sessions

    def next_idle(self) -> SessionRecord | None:
        """The active session that will be idle first."""
        return self.next_idle_session


def _time(value: Any) -> datetime | None:
    """A stored time: a datetime (PostgreSQL, or SQLAlchemy's type) or SQLite's naive UTC text."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def record_from_row(r: Any) -> SessionRecord:
    """A session from the ``SESSION_COLUMNS`` of a row read by name (a SQLAlchemy ``RowMapping``
    or a ``sqlite3.Row``)."""
    flags = _json(r["flags"]) or {}
    return SessionRecord(
        id=int(r["id"]),
        source=r["source"],
        path=r["path"],
        session_id=r["session_id"],
        project=r["project"],
        user_messages=int(r["user_messages"] or 0),
        last_activity=_time(r["last_activity"]),
        subagent=bool(flags.get("subagent")),
        external_context=tuple(_json(r["external_context"]) or ()),
        state=r["state"],
        reason=r["reason"],
        eligible_at=_time(r["eligible_at"]),
    )


def counts_from_rows(rows: list[tuple[str, str, int]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for source, state, n in sorted(rows):
        out.setdefault(source, {})[state] = int(n)
    return out


def read_sqlite(
    conn: sqlite3.Connection, report: ScanReport, *, notable_limit: int, collect_sessions: bool
) -> None:
    """Fill ``report``'s view of the store (counts, next idle, notable or all sessions)."""
    conn.row_factory = sqlite3.Row
    report.by_source = counts_from_rows([tuple(r) for r in conn.execute(COUNTS_SQL)])
    row = conn.execute(NEXT_IDLE_SQL).fetchone()
    report.next_idle_session = None if row is None else record_from_row(row)
    if notable_limit:
        report.notable_sessions = [
            record_from_row(r) for r in conn.execute(NOTABLE_SQL, {"limit": notable_limit})
        ]
    if collect_sessions:
        report.sessions = [record_from_row(r) for r in conn.execute(ALL_SQL)]


def sessions_as_json(sessions: Iterable[SessionRecord]) -> str:
    return json.dumps([s.as_json() for s in sessions], indent=2)
