"""The scanner's queries: what each transcript file looked like last time, and its recorded verdict."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, bindparam, case, func, insert, select, update

from pipeline.eligibility import ACTIVE, SessionFacts
from pipeline.store.engine import Store
from pipeline.store.schema import transcripts as t


@dataclass(frozen=True, slots=True)
class KnownFile:
    """The stored row of a file about to be parsed again: where its last parse stopped, and its verdict."""

    id: int
    source: str
    path: str
    stat: tuple[int | None, int | None, int | None, int | None]
    parsed_offset: int
    parse_ok: bool
    project: str | None
    state: str
    extracted_offset: int


@dataclass(frozen=True, slots=True)
class FactsRow:
    id: int
    path: str
    state: str
    reason: str | None
    facts: SessionFacts


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


def _known_stmt() -> Any:
    parse_ok = and_(t.c.parse_state.isnot(None), t.c.state != "unreadable")
    return select(
        t.c.id,
        t.c.source,
        t.c.path,
        t.c.dev,
        t.c.ino,
        t.c.size,
        t.c.mtime_ns,
        t.c.parsed_offset,
        case((parse_ok, 1), else_=0),
        t.c.project,
        t.c.state,
        t.c.extracted_offset,
    )


def _known_file(row: Any) -> KnownFile:
    return KnownFile(
        row[0],
        row[1],
        row[2],
        (row[3], row[4], row[5], row[6]),
        row[7] or 0,
        bool(row[8]),
        row[9],
        row[10],
        row[11] or 0,
    )


# What every scan reads for every file, kept small and flat (no objects, no JSON, no datetimes):
# path -> (id, source, (dev, ino, size, mtime_ns), idle_at as epoch seconds for an active session
# else None, state). The scan index (``pipeline.scan_index``) stores exactly this.
Seen = tuple[int, str, tuple[int | None, int | None, int | None, int | None], float | None, str]


async def seen_files(store: Store) -> dict[str, Seen]:
    """Every known file, by path, as a ``Seen`` tuple."""
    stmt = select(
        t.c.path,
        t.c.id,
        t.c.source,
        t.c.dev,
        t.c.ino,
        t.c.size,
        t.c.mtime_ns,
        case((t.c.state == ACTIVE, t.c.eligible_at), else_=None),
        t.c.state,
    )
    async with store.read() as conn:
        rows = (await conn.execute(stmt)).all()
    out: dict[str, Seen] = {}
    for path, rid, source, dev, ino, size, mtime, idle_at, state in rows:
        if isinstance(idle_at, str):  # SQLite hands back a CASE over a datetime column as text
            idle_at = datetime.fromisoformat(idle_at).replace(tzinfo=UTC)
        out[path] = (rid, source, (dev, ino, size, mtime), idle_at.timestamp() if idle_at else None, state)
    return out


async def refresh(store: Store, ids: list[int]) -> tuple[dict[str, KnownFile], dict[int, Any]]:
    """The authoritative rows and parser states of the files about to be parsed again."""
    known: dict[str, KnownFile] = {}
    states: dict[int, Any] = {}
    async with store.read() as conn:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for row in (await conn.execute(_known_stmt().where(t.c.id.in_(chunk)))).all():
                known[row[2]] = _known_file(row)
            rows = (await conn.execute(select(t.c.id, t.c.parse_state).where(t.c.id.in_(chunk)))).all()
            states.update({rid: state for rid, state in rows if state})
    return known, states


async def generation(store: Store) -> tuple[Any, ...]:
    """Changes whenever a transcript row is added, removed or updated (see ``pipeline.scan_index``)."""
    stmt = select(func.count(), func.max(t.c.id), func.max(t.c.updated_at))
    async with store.read() as conn:
        count, max_id, latest = (await conn.execute(stmt)).one()
    return (int(count), int(max_id or 0), latest.isoformat() if latest else "")


def _facts(r: Any) -> SessionFacts:
    flags = r.flags or {}
    return SessionFacts(
        last_activity=r.last_activity,
        user_messages=r.user_messages or 0,
        project=r.project,
        subagent=bool(flags.get("subagent")),
        compaction_run=bool(flags.get("compaction_run")),
        memd_generated=bool(flags.get("memd_generated")),
        non_interactive=bool(flags.get("non_interactive")),
        opted_out=bool(flags.get("opted_out")),
        project_opted_out=bool(flags.get("project_opted_out")),
        external_context=tuple(r.external_context or ()),
        unreadable_reason=r.reason if r.state == "unreadable" else None,
        incomplete_reason=r.reason if r.state == "incomplete" else None,
        parsed_offset=r.parsed_offset or 0,
        extracted_offset=r.extracted_offset or 0,
        failed_reason=r.reason if r.state == "failed" else None,
    )


async def facts_for(store: Store, ids: list[int]) -> list[FactsRow]:
    """The recorded facts of these transcripts, to evaluate them again without reading the files."""
    out: list[FactsRow] = []
    async with store.read() as conn:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = (await conn.execute(select(t).where(t.c.id.in_(chunk)))).all()
            out.extend(
                FactsRow(id=r.id, path=r.path, state=r.state, reason=r.reason, facts=_facts(r))
                for r in rows
                if r.state != "gone"
            )
    return out


async def apply_scan(store: Store, rows: list[dict[str, Any]], *, now: datetime) -> dict[str, int]:
    """Insert new files and update known ones in one transaction; returns path -> id of new rows."""
    inserts = [r for r in rows if "id" not in r]
    updates = [r for r in rows if "id" in r]
    new_ids: dict[str, int] = {}
    async with store.write() as conn:
        by_keys: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        for row in inserts:
            values = {"first_seen_at": now, "parsed_offset": 0, "user_messages": 0, **row}
            by_keys[tuple(sorted(values))].append(values)
        for group in by_keys.values():
            returning = insert(t).returning(t.c.id, t.c.path, sort_by_parameter_order=True)
            result = await conn.execute(returning, group)
            new_ids.update({path: int(rid) for rid, path in result.all()})
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        for row in updates:
            groups[tuple(sorted(row))].append(row)
        for keys, group in groups.items():
            columns = [k for k in keys if k != "id"]

            stmt = (
                update(t).where(t.c.id == bindparam("_id")).values({k: bindparam(f"_v_{k}") for k in columns})
            )
            params = [{"_id": r["id"], **{f"_v_{k}": r[k] for k in columns}} for r in group]
            await conn.execute(stmt, params)
    return new_ids


def _session_stmt() -> Any:
    return select(
        t.c.id,
        t.c.source,
        t.c.path,
        t.c.session_id,
        t.c.project,
        t.c.user_messages,
        t.c.last_activity,
        t.c.flags,
        t.c.external_context,
        t.c.state,
        t.c.reason,
        t.c.eligible_at,
    )


async def sessions(
    store: Store,
    *,
    states: Iterable[str] | None = None,
    paths: Iterable[str] | None = None,
    limit: int | None = None,
) -> list[SessionRecord]:
    """Sessions, most recently active first: all of them, or (up to ``limit``) those in ``states``
    or at ``paths``."""
    stmt = _session_stmt().order_by(t.c.last_activity.desc(), t.c.id)
    rows: list[Any] = []
    async with store.read() as conn:
        if states is None and paths is None:
            rows = list((await conn.execute(stmt)).all())
        else:
            wanted = list(paths or ())[: limit or None]
            seen: set[int] = set()
            batches = [stmt.where(t.c.state.in_(list(states or ()))).limit(limit)]
            batches += [stmt.where(t.c.path.in_(wanted[i : i + 500])) for i in range(0, len(wanted), 500)]
            for query in batches:
                for row in (await conn.execute(query)).all():
                    if row.id not in seen:
                        seen.add(row.id)
                        rows.append(row)
            rows.sort(key=lambda r: (-(r.last_activity.timestamp() if r.last_activity else 0.0), r.id))
            rows = rows[:limit] if limit else rows
    return [_session_record(r) for r in rows]


async def state_counts(store: Store) -> dict[str, dict[str, int]]:
    """Sessions by source, then by state."""
    stmt = select(t.c.source, t.c.state, func.count()).group_by(t.c.source, t.c.state)
    async with store.read() as conn:
        rows = (await conn.execute(stmt)).all()
    out: dict[str, dict[str, int]] = {}
    for source, state, n in sorted(rows):
        out.setdefault(source, {})[state] = int(n)
    return out


async def next_idle(store: Store) -> SessionRecord | None:
    """The active session whose idle time comes first."""
    stmt = _session_stmt().where(t.c.state == ACTIVE, t.c.eligible_at.isnot(None)).order_by(t.c.eligible_at)
    async with store.read() as conn:
        row = (await conn.execute(stmt.limit(1))).first()
    return None if row is None else _session_record(row)


def _session_record(r: Any) -> SessionRecord:
    return SessionRecord(
        id=r.id,
        source=r.source,
        path=r.path,
        session_id=r.session_id,
        project=r.project,
        user_messages=r.user_messages or 0,
        last_activity=r.last_activity,
        subagent=bool((r.flags or {}).get("subagent")),
        external_context=tuple(r.external_context or ()),
        state=r.state,
        reason=r.reason,
        eligible_at=r.eligible_at,
    )
