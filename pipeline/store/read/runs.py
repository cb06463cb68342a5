"""What ran and what holds: heartbeats, failed jobs, model spend, consolidation runs and scopes, publications, leases, open Message Batches."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from pipeline.clock import parse_time
from pipeline.store.read.rows import Rows
from pipeline.store.read.sessions import (
    MINE,
)
from pipeline.store.read.values import in_list, iso, json_value
from pipeline.vocabulary import (
    BATCH_OPEN,
    RUN_FAILED,
    JobState,
    RunOutcome,
)

HEARTBEATS_SQL = "SELECT * FROM heartbeats ORDER BY beat_at DESC LIMIT 500"
"""Every daemon's heartbeat, newest first (the table keeps a few weeks of stopped ones). Every column:
a store made before machines were named still reads (without them)."""


class Heartbeat(NamedTuple):
    """A daemon's last beat (``pipeline.store.heartbeats`` writes it)."""

    instance: str
    host: str
    pid: int
    version: str
    started_at: datetime | None
    beat_at: datetime | None
    status: dict[str, Any]
    """Its small JSON status (``pipeline.status.liveness.beat_status``); empty when unreadable."""
    stopped_at: datetime | None
    machine: str | None = None


def _heartbeat(r: dict[str, Any]) -> Heartbeat:
    status = json_value(r["status"])
    return Heartbeat(
        instance=str(r.get("instance") or ""),
        host=r["host"],
        pid=int(r["pid"]),
        version=r["version"],
        started_at=parse_time(r["started_at"]),
        beat_at=parse_time(r["beat_at"]),
        status=status if isinstance(status, dict) else {},
        stopped_at=parse_time(r["stopped_at"]),
        machine=r.get("machine"),
    )


def newest_heartbeats(rows: Rows) -> list[Heartbeat]:
    """The newest heartbeat of each machine, newest first (a row without a machine, from before
    machines were named, counts by its host)."""
    seen: set[str] = set()
    out = []
    for row in rows.all(HEARTBEATS_SQL):
        key = row.get("machine") or f"host:{row.get('host')}"
        if key not in seen:
            seen.add(key)
            out.append(_heartbeat(row))
    return out


FAILED_JOBS_SQL = (
    f"SELECT key, last_error, updated_at FROM jobs WHERE kind = :kind AND state = '{JobState.FAILED}' "
    "ORDER BY updated_at DESC LIMIT :limit"
)

_SPEND_SQL = (
    "SELECT count(*) AS calls, count(DISTINCT job_key) AS items, "
    "coalesce(sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens), 0) AS tokens, "
    "coalesce(sum(cost_usd), 0) AS cost FROM llm_calls WHERE at >= :start"
)


class Spend(NamedTuple):
    """What model calls cost: how many, for how many jobs (sessions or scopes), their tokens (input,
    output, cache read and cache write) and dollars."""

    calls: int
    items: int
    tokens: int
    cost_usd: float


def spend(rows: Rows, since: datetime, until: datetime | None = None) -> Spend:
    """The model calls made since ``since`` (and up to ``until``)."""
    sql, params = _SPEND_SQL, {"start": rows.time(since)}
    if until is not None:
        sql, params = sql + " AND at <= :end", params | {"end": rows.time(until)}
    (found,) = rows.all(sql, params)
    return Spend(int(found["calls"]), int(found["items"]), int(found["tokens"]), float(found["cost"]))


RECENT_RUNS_SQL = (
    'SELECT run_id, scope, mode, started_at, finished_at, outcome, reason, "commit" AS commit_sha, usage '
    "FROM consolidation_runs ORDER BY started_at DESC LIMIT :limit"
)

SCOPES_SQL = "SELECT key, last_success_at, last_commit FROM scopes ORDER BY key"


def pending_review(rows: Rows) -> int:
    """How many consolidation runs wait in the inbox for review (every scope, every machine)."""
    sql = f"SELECT count(*) AS n FROM consolidation_runs WHERE outcome = '{RunOutcome.PENDING_REVIEW}'"
    return int(rows.all(sql)[0]["n"])


# Every column: a store made before republished_at still reads (without it). This machine's own.
PUBLICATIONS_SQL = f"SELECT * FROM publications WHERE {MINE} ORDER BY target, scope"


class Holder(NamedTuple):
    """Who holds a lease (the instance, a scope being consolidated) and until when."""

    name: str
    owner: str
    host: str
    pid: int
    acquired_at: datetime
    heartbeat_at: datetime
    expires_at: datetime
    machine: str | None = None

    def on_this_machine(self, machine: str) -> bool:
        """Whether the holder runs on ``machine``: only then can its pid be asked about."""
        return self.machine == machine


def _time(value: Any) -> datetime:
    moment = parse_time(value)
    assert moment is not None  # a NOT NULL column
    return moment


def holders(rows: Rows) -> list[Holder]:
    """Every lease held, by name. Every column: a store made before leases named their machine
    still reads."""
    return [
        Holder(
            name=r["name"],
            owner=r["owner"],
            host=r["host"],
            pid=int(r["pid"]),
            acquired_at=_time(r["acquired_at"]),
            heartbeat_at=_time(r["heartbeat_at"]),
            expires_at=_time(r["expires_at"]),
            machine=r.get("machine"),
        )
        for r in rows.all("SELECT * FROM leases ORDER BY name")
    ]


OPEN_BATCHES_SQL = (
    "SELECT batch_id, phase, state, submitted_at, custom_ids FROM batches "
    f"WHERE state IN ({in_list(BATCH_OPEN)}) AND (machine IS NULL OR {MINE}) ORDER BY submitted_at, id"
)
"""This machine's Message Batches whose results are still to be collected, oldest first."""


class PendingBatch(NamedTuple):
    batch_id: str
    phase: str
    state: str
    submitted_at: datetime | None
    session_ids: tuple[str, ...]
    """The sessions of its entries, in the order they were submitted (``?`` for an entry without one)."""


def pending_batch_from_row(r: Any) -> PendingBatch:
    """A row of ``OPEN_BATCHES_SQL``: its entries (``custom_id`` -> the stored ``Prepared``) give
    the sessions."""
    entries = json_value(r["custom_ids"]) or {}
    sessions = tuple(
        str(e.get("session_id") or "?") if isinstance(e, dict) else "?"
        for e in (entries.values() if isinstance(entries, dict) else ())
    )
    return PendingBatch(
        batch_id=str(r["batch_id"]),
        phase=str(r["phase"]),
        state=str(r["state"]),
        submitted_at=parse_time(r["submitted_at"]),
        session_ids=sessions,
    )


def run_failure(row: dict[str, Any]) -> dict[str, Any] | None:
    """A row of ``RECENT_RUNS_SQL`` as a phase-2 failure, or None when its outcome is not one
    (``pipeline.vocabulary.RUN_FAILED``: the store layer's ``RunRow.failed`` says the same)."""
    if row["outcome"] not in RUN_FAILED:
        return None
    return {
        "scope": row["scope"],
        "run": row["run_id"],
        "reason": row["reason"],
        "at": iso(row["finished_at"]),
    }
