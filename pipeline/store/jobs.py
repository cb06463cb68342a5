"""Work items: enqueue, claim with one portable statement, renew, complete, fail, hand back.

A claim is a single ``UPDATE jobs SET owner=... WHERE id = (SELECT id ... FOR UPDATE SKIP LOCKED
LIMIT 1) RETURNING ...`` (SQLite ignores ``FOR UPDATE``; its write lock serializes the statement).
Every later change to a claimed job is fenced by the owner token: a worker whose lease expired
and was taken over cannot complete or renew it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from pipeline.errors import LeaseLost
from pipeline.store.engine import Store
from pipeline.store.schema import jobs
from pipeline.vocabulary import JobKind, JobState


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    key: str
    payload: dict[str, Any]
    owner: str
    lease_until: datetime
    attempts: int


async def enqueue(
    store: Store,
    kind: JobKind,
    key: str,
    *,
    now: datetime,
    payload: dict[str, Any] | None = None,
    not_before: datetime | None = None,
) -> None:
    """Make ``(kind, key)`` pending. An existing job is reset to pending unless a worker holds it."""
    values = {
        "kind": kind,
        "key": key,
        "state": JobState.PENDING,
        "payload": payload or {},
        "not_before": not_before,
        "attempts": 0,
        "last_error": None,
        "created_at": now,
        "updated_at": now,
    }
    stmt = store.insert(jobs).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[jobs.c.kind, jobs.c.key],
        set_={
            "state": JobState.PENDING,
            "payload": stmt.excluded.payload,
            "not_before": stmt.excluded.not_before,
            "attempts": 0,
            "last_error": None,
            "updated_at": now,
        },
        where=or_(jobs.c.state != JobState.RUNNING, jobs.c.lease_until < now),
    )
    async with store.write() as conn:
        await conn.execute(stmt)


async def enqueue_many(
    store: Store, kind: JobKind, keys: list[str], *, now: datetime, mine: bool = False
) -> None:
    """``enqueue`` for many keys in one transaction (a scan that finds thousands of sessions);
    ``mine``: only this machine (``store.machine``) may claim them."""
    if not keys:
        return
    stmt = store.insert(jobs)
    stmt = stmt.on_conflict_do_update(
        index_elements=[jobs.c.kind, jobs.c.key],
        set_={
            "state": JobState.PENDING,
            "not_before": None,
            "attempts": 0,
            "last_error": None,
            "updated_at": now,
            "machine": stmt.excluded.machine,
        },
        where=or_(jobs.c.state != JobState.RUNNING, jobs.c.lease_until < now),
    )
    rows: list[dict[str, Any]] = [
        {
            "kind": kind,
            "key": key,
            "state": JobState.PENDING,
            "payload": {},
            "attempts": 0,
            "created_at": now,
            "updated_at": now,
            "machine": store.machine if mine else None,
        }
        for key in keys
    ]
    async with store.write() as conn:
        await conn.execute(stmt, rows)


def claimable(kind: JobKind, now: datetime, machine: str) -> Any:
    """The condition of a job of ``kind`` a claim on ``machine`` may take at ``now`` (a job that
    names another machine is that machine's: it reads that machine's file)."""
    return and_(
        jobs.c.kind == kind,
        or_(jobs.c.machine.is_(None), jobs.c.machine == machine),
        or_(
            and_(
                jobs.c.state == JobState.PENDING, or_(jobs.c.not_before.is_(None), jobs.c.not_before <= now)
            ),
            # A running job whose lease ran out was abandoned (a crash, a kill): take it over.
            and_(jobs.c.state == JobState.RUNNING, jobs.c.lease_until < now),
        ),
    )


async def claim_next(
    store: Store, kind: JobKind, *, owner: str, now: datetime, lease: timedelta
) -> Job | None:
    """Claim the oldest claimable job of ``kind`` for ``owner``, or None. One statement, race-free."""
    pick = (
        select(jobs.c.id)
        .where(claimable(kind, now, store.machine))
        .order_by(jobs.c.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    stmt = (
        update(jobs)
        .where(jobs.c.id == pick)
        .values(
            state=JobState.RUNNING,
            owner=owner,
            lease_until=now + lease,
            attempts=jobs.c.attempts + 1,
            updated_at=now,
        )
        .returning(jobs.c.id, jobs.c.kind, jobs.c.key, jobs.c.payload, jobs.c.lease_until, jobs.c.attempts)
    )
    async with store.write() as conn:
        row = (await conn.execute(stmt)).first()
    if row is None:
        return None
    return Job(
        id=row.id,
        kind=row.kind,
        key=row.key,
        payload=dict(row.payload or {}),
        owner=owner,
        lease_until=row.lease_until,
        attempts=row.attempts,
    )


async def fenced(conn: AsyncConnection, job: Job, **values: Any) -> None:
    """Set ``values`` on ``job``'s row in the caller's transaction, only while ``job.owner`` still
    holds it (running); ``LeaseLost`` when another owner took it over or it ended."""
    result = await conn.execute(
        update(jobs)
        .where(jobs.c.id == job.id, jobs.c.owner == job.owner, jobs.c.state == JobState.RUNNING)
        .values(**values)
    )
    if result.rowcount != 1:
        raise LeaseLost(f"job {job.kind}:{job.key} is no longer held by {job.owner}")


async def _fenced(store: Store, job: Job, **values: Any) -> None:
    async with store.write() as conn:
        await fenced(conn, job, **values)


async def renew(store: Store, job: Job, *, now: datetime, lease: timedelta) -> None:
    await _fenced(store, job, lease_until=now + lease, updated_at=now)


async def complete(store: Store, job: Job, *, now: datetime) -> None:
    await _fenced(
        store, job, state=JobState.DONE, owner=None, lease_until=None, updated_at=now, last_error=None
    )


async def fail(store: Store, job: Job, *, now: datetime, reason: str) -> None:
    """The job will not heal: record why and stop trying."""
    await _fenced(
        store, job, state=JobState.FAILED, owner=None, lease_until=None, updated_at=now, last_error=reason
    )


async def retry_later(store: Store, job: Job, *, now: datetime, not_before: datetime, reason: str) -> None:
    """Hand the job back to the queue, to be claimed again no earlier than ``not_before``."""
    await _fenced(
        store,
        job,
        state=JobState.PENDING,
        owner=None,
        lease_until=None,
        not_before=not_before,
        updated_at=now,
        last_error=reason,
    )


async def release_owner(store: Store, owner: str, *, now: datetime) -> int:
    """Hand back every job ``owner`` still holds (a clean shutdown, or a dead owner found at start)."""
    stmt = (
        update(jobs)
        .where(jobs.c.owner == owner, jobs.c.state == JobState.RUNNING)
        .values(state=JobState.PENDING, owner=None, lease_until=None, updated_at=now)
    )
    async with store.write() as conn:
        result = await conn.execute(stmt)
    return int(result.rowcount)


async def counts(store: Store, kind: JobKind | None = None) -> dict[str, int]:
    from sqlalchemy import func

    stmt = select(jobs.c.state, func.count()).group_by(jobs.c.state)
    if kind is not None:
        stmt = stmt.where(jobs.c.kind == kind)
    async with store.read() as conn:
        return {state: int(n) for state, n in (await conn.execute(stmt)).all()}
