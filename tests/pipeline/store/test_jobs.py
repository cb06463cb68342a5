from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pipeline.clock import FakeClock
from pipeline.errors import LeaseLost
from pipeline.store import Store, jobs

LEASE = timedelta(minutes=5)


async def test_eight_concurrent_workers_claim_each_of_200_items_exactly_once(
    store: Store, clock: FakeClock
) -> None:
    now = clock.now()
    for i in range(200):
        await jobs.enqueue(store, "extract", f"t{i}", now=now)

    claimed: list[str] = []

    async def worker(n: int) -> None:
        while True:
            job = await jobs.claim_next(store, "extract", owner=f"w{n}", now=now, lease=LEASE)
            if job is None:
                return
            claimed.append(job.key)
            await jobs.complete(store, job, now=now)

    await asyncio.gather(*(worker(n) for n in range(8)))
    assert sorted(claimed) == sorted(f"t{i}" for i in range(200))
    assert len(claimed) == len(set(claimed)) == 200
    assert await jobs.counts(store, "extract") == {"done": 200}


async def test_not_before_holds_a_job_back_until_due(store: Store, clock: FakeClock) -> None:
    await jobs.enqueue(store, "extract", "a", now=clock.now(), not_before=clock.now() + timedelta(minutes=10))
    assert await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE) is None
    clock.advance(timedelta(minutes=10))
    job = await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE)
    assert job is not None
    assert job.key == "a"


async def test_completion_is_fenced_by_the_owner_token(store: Store, clock: FakeClock) -> None:
    await jobs.enqueue(store, "extract", "a", now=clock.now())
    first = await jobs.claim_next(store, "extract", owner="w1", now=clock.now(), lease=LEASE)
    assert first is not None
    # w1 stalls past its lease; w2 takes the job over.
    clock.advance(LEASE + timedelta(seconds=1))
    second = await jobs.claim_next(store, "extract", owner="w2", now=clock.now(), lease=LEASE)
    assert second is not None
    assert second.id == first.id
    assert second.attempts == 2
    with pytest.raises(LeaseLost):
        await jobs.complete(store, first, now=clock.now())
    with pytest.raises(LeaseLost):
        await jobs.renew(store, first, now=clock.now(), lease=LEASE)
    await jobs.complete(store, second, now=clock.now())
    assert await jobs.counts(store) == {"done": 1}


async def test_a_live_lease_is_not_claimed_twice(store: Store, clock: FakeClock) -> None:
    await jobs.enqueue(store, "extract", "a", now=clock.now())
    assert await jobs.claim_next(store, "extract", owner="w1", now=clock.now(), lease=LEASE) is not None
    assert await jobs.claim_next(store, "extract", owner="w2", now=clock.now(), lease=LEASE) is None


async def test_retry_later_and_fail_record_the_reason(store: Store, clock: FakeClock) -> None:
    await jobs.enqueue(store, "extract", "a", now=clock.now())
    await jobs.enqueue(store, "extract", "b", now=clock.now())
    a = await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE)
    b = await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE)
    assert a is not None
    assert b is not None
    later = clock.now() + timedelta(seconds=30)
    await jobs.retry_later(store, a, now=clock.now(), not_before=later, reason="429 rate limited")
    await jobs.fail(store, b, now=clock.now(), reason="400 prompt too long")
    assert await jobs.counts(store) == {"pending": 1, "failed": 1}
    assert await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE) is None
    clock.advance(timedelta(seconds=30))
    again = await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE)
    assert again is not None
    assert again.key == "a"


async def test_enqueue_does_not_steal_a_running_job_but_requeues_a_finished_one(
    store: Store, clock: FakeClock
) -> None:
    await jobs.enqueue(store, "extract", "a", now=clock.now(), payload={"v": 1})
    job = await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE)
    assert job is not None
    await jobs.enqueue(store, "extract", "a", now=clock.now(), payload={"v": 2})
    assert await jobs.counts(store) == {"running": 1}
    await jobs.complete(store, job, now=clock.now())
    await jobs.enqueue(store, "extract", "a", now=clock.now(), payload={"v": 3})
    again = await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=LEASE)
    assert again is not None
    assert again.payload == {"v": 3}


async def test_release_owner_hands_running_jobs_back(store: Store, clock: FakeClock) -> None:
    for key in "abc":
        await jobs.enqueue(store, "extract", key, now=clock.now())
    for _ in range(2):
        assert await jobs.claim_next(store, "extract", owner="dead", now=clock.now(), lease=LEASE)
    assert await jobs.release_owner(store, "dead", now=clock.now()) == 2
    assert await jobs.counts(store) == {"pending": 3}


async def test_an_extract_job_of_one_machine_is_claimed_only_there(store: Store, clock: FakeClock) -> None:
    from pipeline.store import stage1, workload
    from pipeline.vocabulary import JobKind
    from tests.conftest import as_machine

    now = clock.now()
    async with as_machine(store, "m1") as one, as_machine(store, "m2") as two:
        await jobs.enqueue_many(one, JobKind.EXTRACT, ["7"], now=now, mine=True)  # m1's transcript 7
        assert await stage1.count_claimable(two, now=now) == 0
        assert await stage1.claimable_keys(two, now=now, limit=10) == []
        assert await workload.extract_pending(two, now=now) == 0
        assert await jobs.claim_next(two, JobKind.EXTRACT, owner="w2", now=now, lease=LEASE) is None
        assert await stage1.count_claimable(one, now=now) == 1
        job = await jobs.claim_next(one, JobKind.EXTRACT, owner="w1", now=now, lease=LEASE)
        assert job is not None
        assert job.key == "7"
        # Its lease running out makes it m1's to take again, never m2's.
        later = now + LEASE + timedelta(seconds=1)
        assert await jobs.claim_next(two, JobKind.EXTRACT, owner="w2", now=later, lease=LEASE) is None
        assert await jobs.claim_next(one, JobKind.EXTRACT, owner="w1b", now=later, lease=LEASE) is not None


async def test_every_fenced_update_of_a_job_refuses_an_owner_that_lost_it(
    store: Store, clock: FakeClock
) -> None:
    """One fence (``jobs.fenced``) for the job's own updates and phase 1's: a worker whose claim was
    taken over can neither hand the job to a batch, nor requeue it, nor fail it; the new owner's row
    is left as it was."""
    from pipeline.store import stage1

    await jobs.enqueue(store, "extract", "a", now=clock.now())
    first = await jobs.claim_next(store, "extract", owner="w1", now=clock.now(), lease=LEASE)
    assert first is not None
    clock.advance(LEASE + timedelta(seconds=1))
    second = await jobs.claim_next(store, "extract", owner="w2", now=clock.now(), lease=LEASE)
    assert second is not None
    now = clock.now()
    with pytest.raises(LeaseLost):
        await stage1.transfer_job(store, first, new_owner="batch-1", now=now)
    with pytest.raises(LeaseLost):
        await stage1.requeue_extract(store, first, now=now, not_before=now, reason="r", payload={"n": 1})
    with pytest.raises(LeaseLost):
        await stage1.fail_extract(store, first, transcript_id=None, now=now, reason="gone")
    with pytest.raises(LeaseLost):
        await jobs.fail(store, first, now=now, reason="gone")
    assert await jobs.counts(store) == {"running": 1}
    await stage1.transfer_job(store, second, new_owner="batch-1", now=now)
    held = await jobs.claim_next(store, "extract", owner="w3", now=now, lease=LEASE)
    assert held is None  # the batch holds it now
