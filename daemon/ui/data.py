"""What the page reads from the state store, beside `memd status`'s own report (``pipeline.status.read``).

Synchronous, like the status reader it shares (``pipeline.store.read.rows``: read-only ``sqlite3``, or
SQLAlchemy for PostgreSQL) and the store's read model (``pipeline.store.read``) that holds
every statement; the page runs these in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pipeline.hits.rate import WINDOW_DAYS
from pipeline.projects.scopes import folders_by_scope
from pipeline.store.read.extracts import SESSION_EXTRACTS_SQL, SESSION_SENT_SQL, SentExtract, sent_from_row
from pipeline.store.read.rows import Rows
from pipeline.store.read.runs import spend
from pipeline.store.read.sessions import (
    BACKLOG_SQL,
    PROJECTS_SQL,
    SESSIONS_COUNT_SQL,
    SESSIONS_IN_STATE_COUNT_SQL,
    SESSIONS_IN_STATE_PAGE_SQL,
    SESSIONS_MATCHING_SQL,
    SESSIONS_PAGE_SQL,
    SessionRecord,
    record_from_row,
)
from pipeline.store.read.uses import TOPIC_USE_SQL, TOPIC_VERDICTS_SQL, tally
from pipeline.store.read.values import iso

CHART_DAYS = 30
PAGE_SIZE = 100
REASONS_SHOWN = 8
SENT_SHOWN = 20
"""The most extracts of one session shown (a session extracted again as it grew has several)."""


@dataclass(frozen=True)
class Day:
    day: str
    tokens: int
    cost_usd: float


def daily_usage(rows: Rows, now: datetime, *, days: int = CHART_DAYS) -> list[Day]:
    """Tokens and cost of the model calls of each UTC day, the last ``days`` days, today last: one
    indexed range read per day, the same sum `memd status` and the gate make (``pipeline.store.read.runs.spend``)."""
    first = (now - timedelta(days=days - 1)).astimezone(UTC).date()
    out = []
    for i in range(days):
        day = first + timedelta(days=i)
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        end = start + timedelta(days=1) - timedelta(microseconds=1)
        spent = spend(rows, start, end)
        out.append(Day(day.isoformat(), spent.tokens, round(spent.cost_usd, 4)))
    return out


@dataclass(frozen=True)
class Backlog:
    state: str
    total: int
    reasons: list[tuple[str, int]]
    """The most common reasons, most frequent first (``""``: none given)."""
    more: int
    """Sessions in this state whose reason is not among those shown."""


def backlog(rows: Rows, machine: str) -> list[Backlog]:
    """``machine``'s sessions by state, each with why they are there."""
    by_state: dict[str, list[tuple[str, int]]] = {}
    for r in rows.all(BACKLOG_SQL, {"machine": machine}):
        by_state.setdefault(r["state"], []).append((r["reason"], int(r["n"])))
    out = []
    for state, reasons in sorted(by_state.items()):
        reasons.sort(key=lambda item: (-item[1], item[0]))
        shown = reasons[:REASONS_SHOWN]
        total = sum(n for _, n in reasons)
        out.append(Backlog(state, total, shown, total - sum(n for _, n in shown)))
    return out


@dataclass(frozen=True)
class SessionsPage:
    sessions: list[SessionRecord]
    total: int
    page: int
    pages: int
    state: str | None


def sessions_page(
    rows: Rows, *, machine: str, state: str | None, page: int, size: int = PAGE_SIZE
) -> SessionsPage:
    """One page of every session of ``machine`` (or of those in ``state``), most recent first."""
    params: dict[str, Any] = {"limit": size, "machine": machine}
    if state:
        params["state"] = state
        total = int(rows.all(SESSIONS_IN_STATE_COUNT_SQL, params)[0]["n"])
    else:
        total = int(rows.all(SESSIONS_COUNT_SQL, {"machine": machine})[0]["n"])
    pages = max(1, -(-total // size))
    page = min(max(1, page), pages)
    params["offset"] = (page - 1) * size
    sql = SESSIONS_IN_STATE_PAGE_SQL if state else SESSIONS_PAGE_SQL
    found = [record_from_row(r) for r in rows.all(sql, params)]
    return SessionsPage(found, total, page, pages, state)


@dataclass(frozen=True)
class Extracts:
    scope: str
    count: int
    live: int
    forgotten_at: str | None


@dataclass(frozen=True)
class SessionDetail:
    needle: str
    sessions: list[SessionRecord]
    extracts: list[Extracts]
    sent: list[SentExtract]
    """Its extracts, newest first: what memd sent about it."""

    @property
    def session_ids(self) -> set[str]:
        return {s.session_id for s in self.sessions if s.session_id} or {self.needle}

    @property
    def redacted(self) -> list[tuple[str, int, int]]:
        """Every rule the redactor applied to the session: (rule, before the request, in the answers),
        summed over its extracts."""
        before: dict[str, int] = {}
        after: dict[str, int] = {}
        for e in self.sent:
            for rule, n in e.redacted_in.items():
                before[rule] = before.get(rule, 0) + n
            for rule, n in e.redacted_out.items():
                after[rule] = after.get(rule, 0) + n
        return [(rule, before.get(rule, 0), after.get(rule, 0)) for rule in sorted({*before, *after})]


def session_detail(rows: Rows, needle: str, machine: str) -> SessionDetail:
    """``machine``'s sessions whose id (or project, or transcript path) is ``needle``, and their
    extracts by scope."""
    params = {"needle": needle, "limit": 50, "machine": machine}
    found = [record_from_row(r) for r in rows.all(SESSIONS_MATCHING_SQL, params)]
    ids = sorted({s.session_id for s in found if s.session_id} or {needle})
    extracts = [
        Extracts(r["scope"], int(r["n"]), int(r["live"] or 0), iso(r["forgotten_at"]))
        for sid in ids
        for r in rows.all(SESSION_EXTRACTS_SQL, {"session_id": sid})
    ]
    sent = [
        sent_from_row(r)
        for sid in ids
        for r in rows.all(SESSION_SENT_SQL, {"session_id": sid, "limit": SENT_SHOWN})
    ]
    return SessionDetail(needle, found, extracts, sent)


@dataclass(frozen=True)
class TopicUse:
    """One topic's uses and the ``helped``/``misled`` verdicts on it over the hit rate's window."""

    days: int
    uses: int
    last_used_at: str | None
    helped: int
    misled: int


def topic_use(rows: Rows, scope: str, file: str, now: datetime, *, days: int = WINDOW_DAYS) -> TopicUse:
    params = {"scope": scope, "file": file, "since": rows.time(now - timedelta(days=days))}
    [used] = rows.all(TOPIC_USE_SQL, params)
    said = tally(rows.all(TOPIC_VERDICTS_SQL, params))
    return TopicUse(days, int(used["uses"]), iso(used["last_used_at"]), said["helped"], said["misled"])


def folders(rows: Rows) -> dict[str, list[str]]:
    """Each scope's project folders, from the projects the store recorded for sessions."""
    return folders_by_scope(str(r["project"]) for r in rows.all(PROJECTS_SQL))
