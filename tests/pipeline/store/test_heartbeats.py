from __future__ import annotations

from datetime import timedelta

from pipeline.clock import FakeClock
from pipeline.store import Store, heartbeats


async def _beat(store: Store, clock: FakeClock, instance: str, **status: object) -> None:
    await heartbeats.beat(
        store,
        instance=instance,
        host="h1",
        pid=42,
        version="0.1.0",
        started_at=clock.now(),
        now=clock.now(),
        status=dict(status),
    )


async def test_beat_inserts_then_refreshes_one_row(store: Store, clock: FakeClock) -> None:
    assert await heartbeats.latest(store) is None
    await _beat(store, clock, "a", state="starting")
    started = clock.now()
    clock.advance(15)
    await heartbeats.beat(
        store,
        instance="a",
        host="h1",
        pid=42,
        version="0.1.0",
        started_at=started,
        now=clock.now(),
        status={"state": "running"},
    )
    hb = await heartbeats.latest(store)
    assert hb is not None
    assert (hb.instance, hb.started_at, hb.beat_at, hb.status) == (
        "a",
        started,
        clock.now(),
        {"state": "running"},
    )
    assert hb.stopped_at is None


async def test_stop_is_recorded_and_latest_is_the_newest_beat(store: Store, clock: FakeClock) -> None:
    await _beat(store, clock, "old")
    await heartbeats.stopped(store, instance="old", now=clock.now(), status={"state": "crashed"})
    clock.advance(60)
    await _beat(store, clock, "new", state="running")
    hb = await heartbeats.latest(store)
    assert hb is not None
    assert hb.instance == "new"
    assert hb.stopped_at is None


async def test_prune_forgets_only_long_stopped_instances(store: Store, clock: FakeClock) -> None:
    await _beat(store, clock, "gone")
    await heartbeats.stopped(store, instance="gone", now=clock.now(), status={})
    await _beat(store, clock, "alive")
    clock.advance(timedelta(days=31))
    assert await heartbeats.prune(store, before=clock.now() - timedelta(days=30)) == 1
    hb = await heartbeats.latest(store)
    assert hb is not None
    assert hb.instance == "alive"
