"""Phase 1's queries: the transcript behind a job, the extract it supersedes, storing an outcome.

Storing an extract is one transaction that also completes the job, fenced by its owner token: a
worker whose claim was taken over stores nothing (``LeaseLost``) rather than a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from pipeline.store.engine import Store
from pipeline.store.jobs import Job, claimable, fenced
from pipeline.store.schema import batches, jobs, stage1_outputs, transcripts
from pipeline.vocabulary import BATCH_OPEN, BatchState, JobKind, JobState, TranscriptState


@dataclass(frozen=True)
class TranscriptRow:
    id: int
    source: str
    path: str
    session_id: str | None
    cwd: str | None
    project: str | None
    state: str
    extracted_offset: int
    started_at: datetime | None
    last_activity: datetime | None
    size: int | None = None  # the size the last scan's stat saw: phase 1 reads no further


@dataclass(frozen=True)
class Stage1Row:
    id: int
    transcript_id: int
    rollout_summary: str
    raw_memory: str
    rollout_slug: str
    memories: list[dict[str, Any]]
    range_start: int
    range_end: int
    items_start: int
    items_end: int
    scope: str
    model: str
    usage: dict[str, Any]
    redactions: dict[str, int] | None
    superseded_by: int | None


def _t_row(r: Any) -> TranscriptRow:
    return TranscriptRow(
        id=r.id,
        source=r.source,
        path=r.path,
        session_id=r.session_id,
        cwd=r.cwd,
        project=r.project,
        state=r.state,
        extracted_offset=int(r.extracted_offset or 0),
        started_at=r.started_at,
        last_activity=r.last_activity,
        size=None if r.size is None else int(r.size),
    )


def _s_row(r: Any) -> Stage1Row:
    return Stage1Row(
        id=r.id,
        transcript_id=r.transcript_id,
        rollout_summary=r.rollout_summary,
        raw_memory=r.raw_memory,
        rollout_slug=r.rollout_slug,
        memories=list(r.memories or []),
        range_start=int(r.range_start),
        range_end=int(r.range_end),
        items_start=int(r.items_start or 0),
        items_end=int(r.items_end or 0),
        scope=r.scope,
        model=r.model,
        usage=dict(r.usage or {}),
        redactions=dict(r.redactions) if r.redactions else None,
        superseded_by=r.superseded_by,
    )


async def get_transcript(store: Store, transcript_id: int) -> TranscriptRow | None:
    async with store.read() as conn:
        row = (await conn.execute(select(transcripts).where(transcripts.c.id == transcript_id))).first()
    return None if row is None else _t_row(row)


async def current_output(store: Store, transcript_id: int) -> Stage1Row | None:
    """The transcript's extract in force (not superseded, not forgotten), if any."""
    stmt = (
        select(stage1_outputs)
        .where(
            stage1_outputs.c.transcript_id == transcript_id,
            stage1_outputs.c.superseded_by.is_(None),
            stage1_outputs.c.forgotten_at.is_(None),
        )
        .order_by(stage1_outputs.c.id.desc())
        .limit(1)
    )
    async with store.read() as conn:
        row = (await conn.execute(stmt)).first()
    return None if row is None else _s_row(row)


async def outputs_for(store: Store, transcript_id: int) -> list[Stage1Row]:
    """Every extract of a transcript, oldest first (superseded ones included)."""
    stmt = (
        select(stage1_outputs)
        .where(stage1_outputs.c.transcript_id == transcript_id)
        .order_by(stage1_outputs.c.id)
    )
    async with store.read() as conn:
        return [_s_row(r) for r in (await conn.execute(stmt)).all()]


async def claimable_keys(store: Store, *, now: datetime, limit: int) -> list[str]:
    """The keys of extract jobs a claim would take now, oldest first (for dry runs and batch sizing)."""
    stmt = (
        select(jobs.c.key)
        .where(claimable(JobKind.EXTRACT, now, store.machine))
        .order_by(jobs.c.id)
        .limit(limit)
    )
    async with store.read() as conn:
        return [str(k) for k in (await conn.execute(stmt)).scalars().all()]


async def count_claimable(store: Store, *, now: datetime) -> int:
    async with store.read() as conn:
        return int(
            (
                await conn.execute(select(func.count()).where(claimable(JobKind.EXTRACT, now, store.machine)))
            ).scalar_one()
        )


async def _finish_job(
    conn: AsyncConnection, job: Job, *, state: JobState, now: datetime, reason: str | None
) -> None:
    await fenced(conn, job, state=state, owner=None, lease_until=None, updated_at=now, last_error=reason)


async def save_extract(
    store: Store,
    job: Job,
    *,
    now: datetime,
    output: dict[str, Any],
    previous_id: int | None,
    extracted_offset: int,
) -> int:
    """Store an extract, supersede ``previous_id``, mark the transcript extracted, complete the job.

    One transaction, fenced by the job's owner: ``LeaseLost`` stores nothing. Returns the new row id.
    """
    async with store.write() as conn:
        await _finish_job(conn, job, state=JobState.DONE, now=now, reason=None)
        new_id = int(
            (
                await conn.execute(insert(stage1_outputs).values(**output).returning(stage1_outputs.c.id))
            ).scalar_one()
        )
        if previous_id is not None:
            await conn.execute(
                update(stage1_outputs).where(stage1_outputs.c.id == previous_id).values(superseded_by=new_id)
            )
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.id == output["transcript_id"])
            .values(
                state=TranscriptState.EXTRACTED,
                reason=None,
                extracted_offset=extracted_offset,
                extracted_at=now,
                updated_at=now,
            )
        )
    return new_id


async def mark_extracted(
    store: Store, job: Job, *, transcript_id: int, now: datetime, extracted_offset: int
) -> None:
    """Nothing new to extract (the session grew by nothing readable): complete the job, keep the extract."""
    async with store.write() as conn:
        await _finish_job(conn, job, state=JobState.DONE, now=now, reason=None)
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.id == transcript_id)
            .values(
                state=TranscriptState.EXTRACTED,
                reason=None,
                extracted_offset=extracted_offset,
                extracted_at=now,
                updated_at=now,
            )
        )


async def fail_extract(
    store: Store,
    job: Job,
    *,
    transcript_id: int | None,
    now: datetime,
    reason: str,
    state: TranscriptState = TranscriptState.FAILED,
) -> None:
    """The item will not heal: the job fails and the transcript takes ``state`` (failed, unreadable) and ``reason``."""
    async with store.write() as conn:
        await _finish_job(conn, job, state=JobState.FAILED, now=now, reason=reason)
        if transcript_id is not None:
            await conn.execute(
                update(transcripts)
                .where(transcripts.c.id == transcript_id)
                .values(state=state, reason=reason, updated_at=now)
            )


async def skip_extract(store: Store, job: Job, *, transcript_id: int, now: datetime, reason: str) -> None:
    """The user opted out since the session was queued: the job is done, nothing is extracted, and
    the transcript is skipped with ``reason``."""
    async with store.write() as conn:
        await _finish_job(conn, job, state=JobState.DONE, now=now, reason=None)
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.id == transcript_id)
            .values(state=TranscriptState.SKIPPED, reason=reason, eligible_at=None, updated_at=now)
        )


async def set_transcript_state(
    store: Store, transcript_id: int, *, state: TranscriptState, reason: str | None, now: datetime
) -> None:
    async with store.write() as conn:
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.id == transcript_id)
            .values(state=state, reason=reason, updated_at=now)
        )


async def transfer_job(store: Store, job: Job, *, new_owner: str, now: datetime) -> None:
    """Give a claimed job to another owner (a Message Batch), fenced by the current owner."""
    async with store.write() as conn:
        await fenced(conn, job, owner=new_owner, updated_at=now)


# ---------------------------------------------------------------- Message Batches


@dataclass(frozen=True)
class BatchRow:
    batch_id: str
    phase: str
    entries: dict[str, dict[str, Any]]
    state: str
    submitted_at: datetime


async def record_batch(
    store: Store,
    batch_id: str,
    *,
    phase: str,
    entries: dict[str, dict[str, Any]],
    now: datetime,
    state: BatchState = BatchState.SUBMITTED,
) -> None:
    """Remember a batch before anything waits on it (``entries``: custom_id -> what finishing needs)."""
    async with store.write() as conn:
        await conn.execute(
            insert(batches).values(
                batch_id=batch_id,
                phase=phase,
                custom_ids=entries,
                state=state,
                submitted_at=now,
                machine=store.machine,
            )
        )


async def adopt_batch(store: Store, placeholder: str, *, batch_id: str) -> None:
    """The batch recorded as ``placeholder`` was created as ``batch_id``."""
    async with store.write() as conn:
        await conn.execute(
            update(batches)
            .where(batches.c.batch_id == placeholder, batches.c.state == BatchState.SUBMITTING)
            .values(batch_id=batch_id, state=BatchState.SUBMITTED)
        )


async def known_batch_ids(store: Store) -> set[str]:
    async with store.read() as conn:
        return {str(b) for b in (await conn.execute(select(batches.c.batch_id))).scalars().all()}


async def open_batches(store: Store, *, phase: str) -> list[BatchRow]:
    """This machine's batches submitted and not yet collected, and any left mid-submission by a stop."""
    stmt = (
        select(batches)
        .where(
            batches.c.phase == phase,
            batches.c.state.in_(sorted(BATCH_OPEN)),
            or_(batches.c.machine.is_(None), batches.c.machine == store.machine),
        )
        .order_by(batches.c.id)
    )
    async with store.read() as conn:
        rows = (await conn.execute(stmt)).all()
    return [BatchRow(r.batch_id, r.phase, dict(r.custom_ids or {}), r.state, r.submitted_at) for r in rows]


async def close_batch(store: Store, batch_id: str, *, state: BatchState, now: datetime) -> None:
    async with store.write() as conn:
        await conn.execute(
            update(batches).where(batches.c.batch_id == batch_id).values(state=state, ended_at=now)
        )


async def requeue_extract(
    store: Store, job: Job, *, now: datetime, not_before: datetime, reason: str, payload: dict[str, Any]
) -> None:
    """Hand the job back (fenced) with a new payload, e.g. counting an invalid output from a batch."""
    async with store.write() as conn:
        await fenced(
            conn,
            job,
            state=JobState.PENDING,
            owner=None,
            lease_until=None,
            not_before=not_before,
            updated_at=now,
            last_error=reason,
            payload=payload,
        )
