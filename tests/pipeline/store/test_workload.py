from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import insert

from pipeline.clock import FakeClock
from pipeline.machine import UNNAMED
from pipeline.store import Store, jobs, workload
from pipeline.store.schema import transcripts


async def _transcript(
    store: Store, clock: FakeClock, n: int, state: str, eligible_at: datetime | None = None
) -> int:
    async with store.write() as conn:
        result = await conn.execute(
            insert(transcripts).values(
                machine=UNNAMED,
                source="claude_code",
                path=f"/t/{n}.jsonl",
                session_id=f"s{n}",
                state=state,
                eligible_at=eligible_at,
                first_seen_at=clock.now(),
                updated_at=clock.now(),
            )
        )
        return int(result.inserted_primary_key[0])


async def test_extract_pending_counts_eligible_sessions_and_claimable_jobs(
    store: Store, clock: FakeClock
) -> None:
    now = clock.now()
    assert await workload.extract_pending(store, now=now) == 0
    await _transcript(store, clock, 1, "eligible")
    await _transcript(store, clock, 2, "active")
    assert await workload.extract_pending(store, now=now) == 1
    await jobs.enqueue(store, "extract", "9", now=now, not_before=now + timedelta(hours=1))
    assert await workload.extract_pending(store, now=now) == 1  # not due yet
    assert await workload.extract_pending(store, now=now + timedelta(hours=2)) == 2


async def test_next_due_is_the_earliest_idle_session_or_retry(store: Store, clock: FakeClock) -> None:
    now = clock.now()
    assert await workload.next_due_at(store, now=now) is None
    await _transcript(store, clock, 1, "active", eligible_at=now + timedelta(hours=3))
    await _transcript(store, clock, 2, "active", eligible_at=now + timedelta(hours=2))
    await _transcript(store, clock, 3, "eligible", eligible_at=now - timedelta(hours=1))
    assert await workload.next_due_at(store, now=now) == now + timedelta(hours=2)
    await jobs.enqueue(store, "extract", "3", now=now, not_before=now + timedelta(minutes=5))
    assert await workload.next_due_at(store, now=now) == now + timedelta(minutes=5)
