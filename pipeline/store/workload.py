"""Cheap questions the daemon asks before it loads anything heavy: is there work, and when is the next?

Each is one or two indexed queries, so an idle daemon can ask them every cycle and load the LLM
client only when a phase has something to do. (Phase 2's own planner, ``pipeline.consolidate.plan``,
answers the same question for consolidation without loading the client.)
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, or_, select

from pipeline.store.engine import Store
from pipeline.store.jobs import claimable
from pipeline.store.schema import jobs, transcripts
from pipeline.vocabulary import JobKind, JobState, TranscriptState


async def extract_pending(store: Store, *, now: datetime) -> int:
    """Sessions waiting for phase 1: eligible transcripts, plus extraction jobs that may be claimed now."""
    eligible = (
        select(func.count())
        .select_from(transcripts)
        .where(transcripts.c.state == TranscriptState.ELIGIBLE, transcripts.c.machine == store.machine)
    )
    takeable = select(func.count()).select_from(jobs).where(claimable(JobKind.EXTRACT, now, store.machine))
    async with store.read() as conn:
        n_eligible = (await conn.execute(eligible)).scalar_one()
        n_jobs = (await conn.execute(takeable)).scalar_one()
    return int(n_eligible) + int(n_jobs)


async def next_due_at(store: Store, *, now: datetime) -> datetime | None:
    """When something next becomes due without any file changing: an active session turning idle,
    or a job handed back with a ``not_before`` (a rate limit, a retry)."""
    idle = select(func.min(transcripts.c.eligible_at)).where(
        transcripts.c.state == TranscriptState.ACTIVE,
        transcripts.c.eligible_at.is_not(None),
        transcripts.c.machine == store.machine,
    )
    retry = select(func.min(jobs.c.not_before)).where(
        jobs.c.state == JobState.PENDING,
        jobs.c.not_before > now,
        or_(jobs.c.machine.is_(None), jobs.c.machine == store.machine),
    )
    async with store.read() as conn:
        candidates = [(await conn.execute(idle)).scalar_one(), (await conn.execute(retry)).scalar_one()]
    found = [c for c in candidates if c is not None]
    return min(found) if found else None
