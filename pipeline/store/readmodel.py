"""The state store as the fast paths read it: every raw SQL string and row mapping of `memd status`
(``daemon.status``) and `memd scan`'s quick check (``pipeline.scan.probe``, ``index``, ``view``).

Standard library only (no SQLAlchemy, no pydantic): the fast paths read a SQLite store with
``sqlite3``. The SQLAlchemy layer beside it (``pipeline.store.transcripts``) runs the same
statements and maps rows with the same functions, so both readers see the same thing. Each
statement is plain SQL that SQLite and PostgreSQL both answer, with ``:name`` parameters.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from pipeline.vocabulary import (
    BATCH_OPEN,
    FLAG_VERDICTS,
    RUN_FAILED,
    TRANSCRIPT_FAILED,
    TRANSCRIPT_NOTABLE,
    JobState,
    RunOutcome,
    Step,
    TranscriptState,
    Verdict,
)

Query = Callable[[str, Mapping[str, Any]], list[dict[str, Any]]]
"""Runs a statement of this module with its parameters, giving its rows as dicts by column name
(``sqlite3`` for the fast paths, SQLAlchemy's ``pipeline.store.engine.read_model``)."""


def connect_sqlite(path: Path, *, timeout: float = 2.0) -> sqlite3.Connection:
    """The store file opened read-only (WAL lets it read beside the daemon's writes; a missing
    file is an error, never created)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)


def _in(values: frozenset[str] | tuple[str, ...]) -> str:
    """A SQL ``IN`` list of vocabulary values (fixed strings, never user input)."""
    return ", ".join(f"'{v}'" for v in sorted(values))


# Row values ---------------------------------------------------------------------------------------


def parse_time(value: Any) -> datetime | None:
    """A stored time as an aware UTC datetime: a datetime (PostgreSQL) or SQLite's naive UTC text."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        try:  # 3.11 reads a trailing Z, and SQLite's "2026-11-01 12:00:00.000000" as is
            moment = datetime.fromisoformat(value if type(value) is str else str(value))
        except ValueError:
            return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def sqlite_time(value: datetime) -> str:
    """A moment as SQLAlchemy stores a UTC datetime on SQLite (naive UTC text), to compare with
    what is stored."""
    return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def iso(value: Any) -> str | None:
    moment = parse_time(value)
    return moment.isoformat() if moment else None


def json_value(value: Any) -> Any:
    """A JSON column: SQLite hands back its text, PostgreSQL the decoded value."""
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


# kv -----------------------------------------------------------------------------------------------

KV_SQL = "SELECT value FROM kv WHERE key = :key"


def machine_key(key: str, machine: str) -> str:
    """The kv key of a fact of one machine's (its steps' last runs, its last scan, its settings):
    machines sharing a store each keep their own."""
    return f"{key}:{machine}"


STALE_TOPICS_KEY = "cites.stale"
"""``kv["cites.stale:<machine>"]``: the topics this machine last published marked stale
(``pipeline.store.cites``): ``{"<scope>/<file>": {"reason": ..., "since": ...}}``."""
SYNC_STATE_KEY = "sync.state"
PERSON_VERDICT_KEY = "team.person-verdict:"
"""+ machine key: which machines claiming this machine's ``[team] person`` are bound to it by their keys
(``pipeline.team.people``), for `memd status`."""
"""``kv["sync.state"]``: what the last sync with ``[sync] remote`` did (``pipeline.sync.state``)."""
RUN_KEY_PREFIX = "run."
"""``kv["run.<step>:<machine>"]``: a daemon step's last run that did something on that machine;
``run.<step>.skipped:<machine>``: its last check that found nothing to do."""
SKIPPED_SUFFIX = ".skipped"
_RUN_NAMES = [f"{s}{suffix}" for s in Step for suffix in ("", SKIPPED_SUFFIX)]
RUNS_SQL = "SELECT key, value FROM kv WHERE key IN ({keys})".format(
    keys=", ".join(f":k{i}" for i in range(len(_RUN_NAMES)))
)


def runs_params(machine: str) -> dict[str, str]:
    """``RUNS_SQL``'s parameters: ``machine``'s keys."""
    return {f"k{i}": machine_key(f"{RUN_KEY_PREFIX}{name}", machine) for i, name in enumerate(_RUN_NAMES)}


def run_name(key: str, machine: str) -> str:
    """``scan`` or ``scan.skipped`` of a key of ``RUNS_SQL``."""
    return key.removeprefix(RUN_KEY_PREFIX).removesuffix(f":{machine}")


def run_key(step: str, *, skipped: bool, machine: str) -> str:
    return machine_key(f"{RUN_KEY_PREFIX}{step}{SKIPPED_SUFFIX if skipped else ''}", machine)


# Scan index: the transcripts table's generation, and what a scan needs of each file ---------------

MINE = "machine = :machine"
"""This machine's transcripts (``pipeline.machine``): each machine scans, extracts and lists its own.
Every statement below that reads ``transcripts`` takes ``:machine``."""

GENERATION_SQL = f"SELECT count(*), max(id), max(updated_at) FROM transcripts WHERE {MINE}"
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


# Sessions (`memd scan`'s report) ------------------------------------------------------------------

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
COUNTS_SQL = f"SELECT source, state, count(*) AS n FROM transcripts WHERE {MINE} GROUP BY source, state"
NEXT_IDLE_SQL = (
    f"{_SELECT} WHERE state = '{TranscriptState.ACTIVE}' AND eligible_at IS NOT NULL AND {MINE} "
    "ORDER BY eligible_at, id LIMIT 1"
)
ALL_SQL = f"{_SELECT} WHERE {MINE} {RECENT_FIRST}"
# The most recent ``:limit`` of each state, merged: each part is a short read of
# ix_transcripts_machine_state, where ``state IN (...)`` would sort every matching row.
NOTABLE_SQL = (
    " UNION ALL ".join(
        f"SELECT * FROM ({_SELECT} WHERE state = '{state}' AND {MINE} {RECENT_FIRST} LIMIT :limit)"
        for state in TRANSCRIPT_NOTABLE
    )
    + f" {RECENT_FIRST} LIMIT :limit"
)


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


def counts_from_rows(rows: list[tuple[str, str, int]]) -> dict[str, dict[str, int]]:
    """``COUNTS_SQL``'s rows as sessions by source, then by state."""
    out: dict[str, dict[str, int]] = {}
    for source, state, n in sorted(rows):
        out.setdefault(source, {})[state] = int(n)
    return out


# `memd status` ------------------------------------------------------------------------------------

HEARTBEATS_SQL = "SELECT * FROM heartbeats ORDER BY beat_at DESC LIMIT 500"
"""Every daemon's heartbeat, newest first (the table keeps a few weeks of stopped ones): `memd
status` shows the newest of each machine. Every column: a store made before machines were named
still reads (without them)."""


def latest_per_machine(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``HEARTBEATS_SQL``'s rows, the newest of each machine kept (a row without a machine, from
    before machines were named, counts by its host)."""
    seen: set[str] = set()
    out = []
    for row in rows:
        key = row.get("machine") or f"host:{row.get('host')}"
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


TRANSCRIPT_FAILURES_SQL = (
    "SELECT source, session_id, path, state, reason FROM transcripts "
    f"WHERE state IN ({_in(TRANSCRIPT_FAILED)}) AND {MINE} ORDER BY updated_at DESC LIMIT :limit"
)
EXTRACT_FAILURES_SQL = (
    "SELECT source, session_id, state, reason, updated_at FROM transcripts "
    f"WHERE state = '{TranscriptState.FAILED}' AND {MINE} ORDER BY updated_at DESC LIMIT :limit"
)
FAILED_JOBS_SQL = (
    f"SELECT key, last_error, updated_at FROM jobs WHERE kind = :kind AND state = '{JobState.FAILED}' "
    "ORDER BY updated_at DESC LIMIT :limit"
)
USAGE_SQL = (
    "SELECT count(*) AS calls, count(DISTINCT job_key) AS items, "
    "coalesce(sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens), 0) AS tokens, "
    "coalesce(sum(cost_usd), 0) AS cost FROM llm_calls WHERE at >= :start AND at <= :end"
)
RECENT_RUNS_SQL = (
    'SELECT run_id, scope, mode, started_at, finished_at, outcome, reason, "commit" AS commit_sha, usage '
    "FROM consolidation_runs ORDER BY started_at DESC LIMIT :limit"
)
PERSONAL_SEPARATOR = "@"


def personal_key(scope: str, machine: str) -> str:
    """The store's key of ``machine``'s own record of a per-person scope (``global`` on a shared
    store: ``pipeline.store.consolidation.scope_key``)."""
    return f"{scope}{PERSONAL_SEPARATOR}{machine}"


def shown_scope(key: str, machine: str) -> str | None:
    """A scope record's key as `memd status` shows it to ``machine``: its own personal record under
    the scope's name, another machine's not at all (None)."""
    scope, sep, owner = key.partition(PERSONAL_SEPARATOR)
    if not sep:
        return key
    return scope if owner == machine else None


def key_of_machine(rows: list[dict[str, Any]], machine_id: str, host: str | None) -> str:
    """This installation's machine key (``pipeline.store.machines``) among ``MACHINES_SQL``'s rows:
    its id on the host the id is bound to, the id and this host's on another."""
    for row in rows:
        if row["machine_id"] == machine_id and row["host_id"] == host:
            return str(row["key"])
    return machine_id


MACHINES_SQL = (
    "SELECT key, machine_id, host_id, hostname, person, seen_at FROM machines ORDER BY first_seen_at, key"
)
"""Which host each machine id is on (``pipeline.store.machines``), for `memd status`."""
SCOPES_SQL = "SELECT key, last_success_at, last_commit FROM scopes ORDER BY key"
PENDING_REVIEW_SQL = (
    f"SELECT count(*) AS n FROM consolidation_runs WHERE outcome = '{RunOutcome.PENDING_REVIEW}'"
)
# Every column: a store made before republished_at still reads (without it). This machine's own.
PUBLICATIONS_SQL = f"SELECT * FROM publications WHERE {MINE} ORDER BY target, scope"
LEASES_SQL = "SELECT * FROM leases ORDER BY name"
"""Every column: a store made before leases named their machine still reads."""


OPEN_BATCHES_SQL = (
    "SELECT batch_id, phase, state, submitted_at, custom_ids FROM batches "
    f"WHERE state IN ({_in(BATCH_OPEN)}) AND (machine IS NULL OR {MINE}) ORDER BY submitted_at, id"
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


# Memory use (`memd status`'s usage section; ``pipeline.hits.rate`` does the arithmetic) -----------
# Aggregated here, a few rows per scope, never a row per session or per use: `memd status` takes
# the same time with 100 sessions as with 10,000 (ix_memory_uses_scope_used,
# ix_transcripts_project_activity).

USE_SCOPES_SQL = "SELECT DISTINCT scope FROM memory_uses WHERE used_at >= :since"
"""The scopes memory was used from since ``:since``."""
TOPIC_USES_SQL = (
    "SELECT scope, file, count(*) AS uses FROM memory_uses WHERE used_at >= :since GROUP BY scope, file"
)
"""How often each file was used since ``:since`` (`memd mcp` ranks search results by it)."""
PROJECTS_SINCE_SQL = "SELECT DISTINCT project FROM transcripts WHERE last_activity >= :since"
"""The projects of the sessions active since ``:since`` (each maps to one scope)."""


def scope_usage_sql(projects: int | None, not_topics: frozenset[str]) -> str:
    """One scope's (``:scope``) figures since ``:since``: how many sessions are its own (those of
    its ``projects`` projects, bound as ``:p0``, ``:p1``...; every session for None, the global
    scope) and how many others used its memory; its uses and last use; the distinct sessions that
    read a topic file or were given a file of ``not_topics`` (the index, a recall block); the
    distinct topic files read."""

    def own(t: str, project: str) -> str:
        active = f"{t}.last_activity IS NOT NULL AND {t}.last_activity >= :since"
        if projects is None:
            return active
        if projects == 0:
            return "1 = 0"
        listed = ", ".join(f":p{i}" for i in range(projects))
        return f"{project} IN ({listed}) AND {active}"

    given = f"u.file IN ({_in(not_topics)})"
    theirs = own("s", "coalesce(s.project, '')")
    return (
        # The count searches the index by project. A use's session without a project (NULL) is not
        # the scope's own: its NOT must be true, never NULL.
        f"SELECT (SELECT count(*) FROM transcripts t WHERE {own('t', 't.project')}) AS own_sessions, "
        f"count(DISTINCT CASE WHEN NOT ({theirs}) THEN u.transcript_id END) AS other_sessions, "
        "count(*) AS uses, max(u.used_at) AS last_used_at, "
        f"count(DISTINCT CASE WHEN NOT {given} THEN u.transcript_id END) AS reading, "
        f"count(DISTINCT CASE WHEN {given} THEN u.transcript_id END) AS given, "
        f"count(DISTINCT CASE WHEN NOT {given} THEN u.file END) AS topics_read "
        "FROM memory_uses u LEFT JOIN transcripts s ON s.id = u.transcript_id "
        "WHERE u.scope = :scope AND u.used_at >= :since"
    )


LIVE_MEMORIES_SQL = (
    "SELECT scope, count(*) AS live, sum(CASE WHEN use_count > 0 THEN 1 ELSE 0 END) AS used, "
    "coalesce(sum(use_count), 0) AS use_count, max(last_used_at) AS last_used_at "
    "FROM stage1_outputs WHERE superseded_by IS NULL AND forgotten_at IS NULL GROUP BY scope"
)

OPEN_FLAGS_LIMIT = 50
OPEN_FLAGS_SQL = (
    "SELECT scope, file, verdict, note, created_at FROM memory_feedback "
    f"WHERE verdict IN ({_in(FLAG_VERDICTS)}) AND resolved_run IS NULL "
    f"ORDER BY created_at DESC, id DESC LIMIT {OPEN_FLAGS_LIMIT}"
)
"""The topics agents flagged wrong or stale (``memd mcp``'s ``memory_feedback``) that no consolidation
was given yet, newest first (``pipeline.store.notes``)."""
TOPIC_FLAGS_SQL = (
    "SELECT verdict, note, created_at FROM memory_feedback "
    f"WHERE scope = :scope AND file = :file AND verdict IN ({_in(FLAG_VERDICTS)}) "
    "AND resolved_run IS NULL ORDER BY created_at DESC, id DESC LIMIT 20"
)
"""One topic's open flags, newest first (its page)."""

_TALLIED = (Verdict.HELPED.value, Verdict.MISLED.value)
SCOPE_VERDICTS_SQL = (
    "SELECT scope, verdict, count(*) AS n FROM memory_feedback "
    f"WHERE verdict IN ({_in(_TALLIED)}) AND created_at >= :since GROUP BY scope, verdict"
)
"""How often agents said a scope's topics helped or misled them since ``:since`` (``memory_feedback``:
recorded beside the hit rate)."""
TOPIC_VERDICTS_SQL = (
    "SELECT verdict, count(*) AS n FROM memory_feedback "
    f"WHERE scope = :scope AND file = :file AND verdict IN ({_in(_TALLIED)}) AND created_at >= :since "
    "GROUP BY verdict"
)
"""The same for one topic (its page)."""
TOPIC_USE_SQL = (
    "SELECT count(*) AS uses, max(used_at) AS last_used_at FROM memory_uses "
    "WHERE scope = :scope AND file = :file AND used_at >= :since"
)
"""One topic's uses since ``:since`` (its page)."""


def tally(rows: list[dict[str, Any]]) -> dict[str, int]:
    """``helped`` and ``misled`` counted, from the rows of ``SCOPE_VERDICTS_SQL`` or ``TOPIC_VERDICTS_SQL``."""
    out = dict.fromkeys(_TALLIED, 0)
    for r in rows:
        out[str(r["verdict"])] += int(r["n"])
    return out


# The web page (`memd ui`, ``daemon.ui``) -----------------------------------------------------------

SESSIONS_COUNT_SQL = f"SELECT count(*) AS n FROM transcripts WHERE {MINE}"
SESSIONS_PAGE_SQL = f"{_SELECT} WHERE {MINE} {RECENT_FIRST} LIMIT :limit OFFSET :offset"
"""One page of every session of this machine, most recent first."""
SESSIONS_IN_STATE_COUNT_SQL = f"SELECT count(*) AS n FROM transcripts WHERE state = :state AND {MINE}"
SESSIONS_IN_STATE_PAGE_SQL = (
    f"{_SELECT} WHERE state = :state AND {MINE} {RECENT_FIRST} LIMIT :limit OFFSET :offset"
)
SESSIONS_MATCHING_SQL = (
    f"{_SELECT} WHERE (session_id = :needle OR project = :needle OR path = :needle) AND {MINE} "
    f"{RECENT_FIRST} LIMIT :limit"
)
"""The sessions whose id, project or transcript path is exactly ``:needle`` (a topic file's source)."""
BACKLOG_SQL = (
    f"SELECT state, coalesce(reason, '') AS reason, count(*) AS n FROM transcripts WHERE {MINE} "
    "GROUP BY state, coalesce(reason, '') ORDER BY state, n DESC"
)
"""Sessions by state and reason (the backlog and why each part of it waits)."""
SESSION_EXTRACTS_SQL = (
    "SELECT scope, count(*) AS n, max(forgotten_at) AS forgotten_at, "
    "sum(CASE WHEN forgotten_at IS NULL AND superseded_by IS NULL THEN 1 ELSE 0 END) AS live "
    "FROM stage1_outputs WHERE session_id = :session_id GROUP BY scope ORDER BY scope"
)
"""A session's extracts by scope: how many, how many are live, when it was forgotten."""
PROJECTS_SQL = "SELECT DISTINCT project FROM transcripts WHERE project IS NOT NULL AND project <> ''"
"""Every project folder a session was recorded in (each scope's folders: ``pipeline.projects.scopes``)."""
SESSION_SENT_SQL = (
    "SELECT id, scope, created_at, model, items_start, items_end, rollout_summary, raw_memory, "
    "memories, redactions, superseded_by, forgotten_at FROM stage1_outputs "
    "WHERE session_id = :session_id ORDER BY id DESC LIMIT :limit"
)
"""A session's extracts, newest first: what memd sent about it (phase 1's output, redacted) and
the redactor's counts (``pipeline.store.stage1`` reads the same rows)."""


class SentExtract(NamedTuple):
    """One extract of a session as the page shows it: the text phase 2 was given, and what the
    redactor replaced by rule (``redacted_in``: in the transcript before the request;
    ``redacted_out``: in the model's answer), never a value."""

    id: int
    scope: str
    created_at: datetime | None
    model: str
    items_start: int
    items_end: int
    summary: str
    notes: str
    memories: tuple[dict[str, Any], ...]
    redacted_in: dict[str, int]
    redacted_out: dict[str, int]
    superseded_by: int | None
    forgotten_at: datetime | None

    @property
    def live(self) -> bool:
        return self.superseded_by is None and self.forgotten_at is None


def redaction_counts(value: Any) -> tuple[dict[str, int], dict[str, int]]:
    """The stored ``redactions`` of an extract as (before the request, in the answer), each rule ->
    count: ``{"input": {...}, "output": {...}}`` as phase 1 records it; an older flat ``{rule: n}``
    counts as before the request."""
    found = json_value(value) or {}
    if not isinstance(found, dict):
        return {}, {}

    def counts(part: Any) -> dict[str, int]:
        if not isinstance(part, dict):
            return {}
        return {str(k): int(v) for k, v in sorted(part.items()) if isinstance(v, int) and v > 0}

    if "input" in found or "output" in found:
        return counts(found.get("input")), counts(found.get("output"))
    return counts(found), {}


def sent_from_row(r: Any) -> SentExtract:
    """A row of ``SESSION_SENT_SQL`` read by name (either backend)."""
    redacted_in, redacted_out = redaction_counts(r["redactions"])
    memories = json_value(r["memories"]) or []
    return SentExtract(
        id=int(r["id"]),
        scope=str(r["scope"]),
        created_at=parse_time(r["created_at"]),
        model=str(r["model"] or ""),
        items_start=int(r["items_start"] or 0),
        items_end=int(r["items_end"] or 0),
        summary=str(r["rollout_summary"] or ""),
        notes=str(r["raw_memory"] or ""),
        memories=tuple(m for m in memories if isinstance(m, dict)) if isinstance(memories, list) else (),
        redacted_in=redacted_in,
        redacted_out=redacted_out,
        superseded_by=None if r["superseded_by"] is None else int(r["superseded_by"]),
        forgotten_at=parse_time(r["forgotten_at"]),
    )
