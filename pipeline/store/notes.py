"""Notes and feedback agents hand memd mid-session (``memd mcp``): their records, and their part in
phase 2.

A *note* (``memory_remember``) waits as an input of its scope's next consolidation until a run takes
it: ``run_id`` is set when a run that was given it ends having committed, parked in the inbox or
found nothing to change. Its state is then that run's: landed (``applied``), waiting for review
(``pending``) or rejected by the user (``rejected``). A note no run has taken yet is ``pending``.

A *flag* is a ``wrong`` or ``stale`` verdict (``memory_feedback``) on a topic, open until a run of
its scope that was shown it ends the same way (``resolved_run``). ``helped`` and ``misled`` are
recorded only, beside the hit rate.

Open notes and flags make their scope need a run (``pipeline.consolidate.plan``). On a shared store
(team mode) global's are this person's machines' only, as its extracts are
(``pipeline.store.consolidation``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Table, and_, delete, func, insert, select, update

from pipeline.layout import GLOBAL_SCOPE
from pipeline.store.engine import Store
from pipeline.store.read import flags as read_flags
from pipeline.store.read.flags import Flag
from pipeline.store.read.rows import on_store
from pipeline.store.schema import consolidation_runs, memory_feedback, memory_notes
from pipeline.vocabulary import RunOutcome

NoteState = Literal["pending", "applied", "rejected"]
_LANDED = (RunOutcome.COMMITTED, RunOutcome.ACCEPTED, RunOutcome.UNCHANGED, RunOutcome.CLEARED)


@dataclass(frozen=True)
class Note:
    id: int
    scope: str
    project: str | None
    text: str
    reason: str | None
    origin: str
    created_at: datetime


def _note(r: Any) -> Note:
    return Note(r.id, r.scope, r.project, r.text, r.reason, r.origin, r.created_at)


NOTES_LOCK = 7438203
"""The PostgreSQL advisory lock ``add_note_capped`` holds for its transaction (SQLite's write
transaction is ``BEGIN IMMEDIATE``: one writer at a time already)."""


async def add_note_capped(
    store: Store,
    *,
    scope: str,
    project: str | None,
    text: str,
    reason: str | None,
    origin: str,
    session: str,
    now: datetime,
    since: datetime,
    per_hour: int,
    open_max: int,
) -> int | Literal["rate", "open"]:
    """Add a note unless ``scope`` was handed ``per_hour`` notes by this machine since ``since``
    (``"rate"``) or holds ``open_max`` notes no run took yet (``"open"``): counted and written in one
    transaction, so servers handing notes at once (one process per agent session) share the cap."""
    from sqlalchemy import text as sql

    recent = (
        select(func.count())
        .select_from(memory_notes)
        .where(
            memory_notes.c.scope == scope,
            memory_notes.c.machine == store.machine,
            memory_notes.c.created_at >= since,
        )
    )
    waiting = (
        select(func.count())
        .select_from(memory_notes)
        .where(memory_notes.c.scope == scope, memory_notes.c.run_id.is_(None))
    )
    values = {"scope": scope, "project": project, "text": text, "reason": reason, "origin": origin}
    async with store.write() as conn:
        if store.dialect == "postgresql":
            await conn.execute(sql(f"SELECT pg_advisory_xact_lock({NOTES_LOCK})"))
        if int((await conn.execute(recent)).scalar_one()) >= per_hour:
            return "rate"
        if int((await conn.execute(waiting)).scalar_one()) >= open_max:
            return "open"
        result = await conn.execute(
            insert(memory_notes).values(session=session, machine=store.machine, created_at=now, **values)
        )
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


async def note_state(store: Store, note_id: int) -> NoteState | None:
    """Where note ``note_id`` is (None: no such note)."""
    stmt = (
        select(memory_notes.c.run_id, consolidation_runs.c.outcome)
        .select_from(
            memory_notes.outerjoin(consolidation_runs, consolidation_runs.c.run_id == memory_notes.c.run_id)
        )
        .where(memory_notes.c.id == note_id)
    )
    async with store.read() as conn:
        row = (await conn.execute(stmt)).first()
    if row is None:
        return None
    if row.outcome == RunOutcome.REJECTED:
        return "rejected"
    # Not taken yet, waiting in the inbox, or its run still recorded as running (a process killed
    # after it landed: the scope's next run records how it ended, ``scope_run._recover_landed``).
    return "applied" if row.outcome in _LANDED else "pending"


async def _mine(store: Store, scope: str, column: Any) -> Any:
    """The condition on ``column`` (a table's ``machine``) for ``scope``: global's are this person's."""
    if scope != GLOBAL_SCOPE or not store.shared:
        return None
    from pipeline.store.machines import person_machines

    return column.in_(sorted(await person_machines(store)))


async def open_notes(store: Store, scope: str) -> list[Note]:
    """The notes of ``scope`` no run has taken yet, oldest first."""
    cond = and_(memory_notes.c.scope == scope, memory_notes.c.run_id.is_(None))
    mine = await _mine(store, scope, memory_notes.c.machine)
    if mine is not None:
        cond = and_(cond, mine)
    async with store.read() as conn:
        rows = (await conn.execute(select(memory_notes).where(cond).order_by(memory_notes.c.id))).all()
    return [_note(r) for r in rows]


async def add_feedback(
    store: Store, *, scope: str, file: str, verdict: str, note: str | None, session: str, now: datetime
) -> int:
    values = {"scope": scope, "file": file, "verdict": verdict, "note": note}
    return await _insert(store, memory_feedback, session=session, now=now, **values)


async def _insert(store: Store, table: Table, *, session: str, now: datetime, **values: Any) -> int:
    """One row of ``table`` (a note or a verdict) handed in by ``session`` on this machine; its id."""
    async with store.write() as conn:
        result = await conn.execute(
            insert(table).values(session=session, machine=store.machine, created_at=now, **values)
        )
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


async def open_flags(store: Store, scope: str | None = None) -> list[Flag]:
    """The open flags no run was given yet (of ``scope``, or of every scope), in the order given
    (the rule: ``pipeline.store.read.flags``)."""
    machines = None
    if scope is not None and scope == GLOBAL_SCOPE and store.shared:
        from pipeline.store.machines import person_machines

        machines = await person_machines(store)
    return await on_store(store, lambda rows: read_flags.open_flags(rows, scope, machines=machines))


async def scopes_with_open(store: Store) -> set[str]:
    """Every scope holding an open note or flag (a scope with nothing else may need its first run)."""
    async with store.read() as conn:
        noted = (
            await conn.execute(select(memory_notes.c.scope).where(memory_notes.c.run_id.is_(None)).distinct())
        ).scalars()
        found = {str(s) for s in noted}
    return found | await on_store(store, read_flags.flagged_scopes)


async def take(
    store: Store, *, run_id: str, notes: Iterable[int], flags: Iterable[int], now: datetime
) -> None:
    """Run ``run_id`` took ``notes`` and was given ``flags`` (it committed, parked or changed nothing)."""
    note_ids, flag_ids = sorted(set(notes)), sorted(set(flags))
    async with store.write() as conn:
        if note_ids:
            await conn.execute(
                update(memory_notes)
                .where(memory_notes.c.id.in_(note_ids), memory_notes.c.run_id.is_(None))
                .values(run_id=run_id)
            )
        if flag_ids:
            await conn.execute(
                update(memory_feedback)
                .where(memory_feedback.c.id.in_(flag_ids), memory_feedback.c.resolved_run.is_(None))
                .values(resolved_run=run_id, resolved_at=now)
            )


async def verdict_counts(store: Store, scope: str, file: str) -> dict[str, int]:
    """Every verdict ever given on one topic, counted."""
    stmt = (
        select(memory_feedback.c.verdict, func.count())
        .where(memory_feedback.c.scope == scope, memory_feedback.c.file == file)
        .group_by(memory_feedback.c.verdict)
    )
    async with store.read() as conn:
        return {str(v): int(n) for v, n in (await conn.execute(stmt)).all()}


async def feedback_since(store: Store, session: str, since: datetime) -> int:
    """How many verdicts ``session`` gave since ``since`` (its rate limit)."""
    stmt = (
        select(func.count())
        .select_from(memory_feedback)
        .where(memory_feedback.c.session == session, memory_feedback.c.created_at >= since)
    )
    async with store.read() as conn:
        return int((await conn.execute(stmt)).scalar_one())


async def same_note(store: Store, scope: str, text: str) -> int | None:
    """The id of the newest note of ``scope`` with exactly ``text`` (None: none)."""
    stmt = (
        select(memory_notes.c.id)
        .where(memory_notes.c.scope == scope, memory_notes.c.text == text)
        .order_by(memory_notes.c.id.desc())
        .limit(1)
    )
    async with store.read() as conn:
        found = (await conn.execute(stmt)).scalar()
    return None if found is None else int(found)


async def forget_scope(store: Store, scope: str) -> int:
    """Delete every note and verdict of ``scope`` (``memd forget --project``); returns how many went."""
    async with store.write() as conn:
        notes = await conn.execute(delete(memory_notes).where(memory_notes.c.scope == scope))
        verdicts = await conn.execute(delete(memory_feedback).where(memory_feedback.c.scope == scope))
    return int(notes.rowcount) + int(verdicts.rowcount)


async def release(store: Store, run_ids: Iterable[str]) -> None:
    """The notes and flags runs ``run_ids`` took wait again for the next run: those runs were dropped
    without anyone reviewing them (``memd forget`` drops a scope's pending inbox runs)."""
    ids = sorted(set(run_ids))
    if not ids:
        return
    async with store.write() as conn:
        await conn.execute(update(memory_notes).where(memory_notes.c.run_id.in_(ids)).values(run_id=None))
        await conn.execute(
            update(memory_feedback)
            .where(memory_feedback.c.resolved_run.in_(ids))
            .values(resolved_run=None, resolved_at=None)
        )
