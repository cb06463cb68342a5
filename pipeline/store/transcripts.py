"""The scanner's queries: what each transcript file looked like last time, and its recorded verdict.

Each machine sharing a store sees only its own files (``store.machine``); the rows it reads again
by id are its own because only its own ids ever reach it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, bindparam, case, insert, select, update

from pipeline.store.engine import Store
from pipeline.store.read.rows import on_store
from pipeline.store.read.sessions import (
    Generation,
    Seen,
)
from pipeline.store.read.sessions import generation as read_generation
from pipeline.store.schema import transcripts as t
from pipeline.transcript import SessionFacts
from pipeline.vocabulary import TranscriptState


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


def _known_stmt() -> Any:
    parse_ok = and_(t.c.parse_state.isnot(None), t.c.state != TranscriptState.UNREADABLE)
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
# ``Seen`` (what the scanner needs of a file it does not read again) is defined beside the scan
# index, which stores exactly this.


async def seen_files(store: Store) -> dict[str, Seen]:
    """Every known file of this machine, by path, as a ``Seen`` tuple."""
    stmt = select(
        t.c.path,
        t.c.id,
        t.c.source,
        t.c.dev,
        t.c.ino,
        t.c.size,
        t.c.mtime_ns,
        case((t.c.state == TranscriptState.ACTIVE, t.c.eligible_at), else_=None),
        t.c.state,
    ).where(t.c.machine == store.machine)
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


async def generation(store: Store) -> Generation:
    """Changes whenever a transcript row is added, removed or updated (see ``pipeline.scan.index``)."""
    return await on_store(store, lambda rows: read_generation(rows, store.machine))


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
        unreadable_reason=r.reason if r.state == TranscriptState.UNREADABLE else None,
        incomplete_reason=r.reason if r.state == TranscriptState.INCOMPLETE else None,
        parsed_offset=r.parsed_offset or 0,
        extracted_offset=r.extracted_offset or 0,
        failed_reason=r.reason if r.state == TranscriptState.FAILED else None,
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
                if r.state != TranscriptState.GONE
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
            values = {
                "first_seen_at": now,
                "parsed_offset": 0,
                "user_messages": 0,
                **row,
                "machine": store.machine,
            }
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
