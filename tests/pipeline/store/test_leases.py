from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pipeline.clock import FakeClock
from pipeline.errors import LeaseLost
from pipeline.store import Store, leases
from pipeline.store.leases import Acquired, Holder

TTL = timedelta(minutes=2)


async def _take(store: Store, clock: FakeClock, owner: str, **kw: object) -> Acquired | Holder:
    return await leases.acquire(
        store,
        "scope:global",
        owner=owner,
        host="h1",
        pid=100,
        now=clock.now(),
        ttl=TTL,
        **kw,  # type: ignore[arg-type]
    )


async def test_a_live_lease_is_refused_and_names_its_holder(store: Store, clock: FakeClock) -> None:
    assert isinstance(await _take(store, clock, "a"), Acquired)
    other = await _take(store, clock, "b")
    assert isinstance(other, Holder)
    assert (other.owner, other.host, other.pid) == ("a", "h1", 100)


async def test_an_expired_lease_is_taken_over(store: Store, clock: FakeClock) -> None:
    await _take(store, clock, "a")
    clock.advance(TTL + timedelta(seconds=1))
    got = await _take(store, clock, "b")
    assert isinstance(got, Acquired)
    assert got.took_over is not None
    assert got.took_over.owner == "a"
    with pytest.raises(LeaseLost):
        await leases.renew(store, "scope:global", owner="a", now=clock.now(), ttl=TTL)


async def test_a_lease_whose_owner_is_gone_is_taken_over_at_once(store: Store, clock: FakeClock) -> None:
    await _take(store, clock, "a")
    got = await _take(store, clock, "b", owner_gone=lambda h: h.owner == "a")
    assert isinstance(got, Acquired)


async def test_renew_extends_and_release_frees(store: Store, clock: FakeClock) -> None:
    await _take(store, clock, "a")
    clock.advance(TTL - timedelta(seconds=1))
    await leases.renew(store, "scope:global", owner="a", now=clock.now(), ttl=TTL)
    clock.advance(timedelta(seconds=30))
    assert isinstance(await _take(store, clock, "b"), Holder)
    assert await leases.release(store, "scope:global", owner="a")
    assert isinstance(await _take(store, clock, "b"), Acquired)
    assert [h.owner for h in await leases.holders(store)] == ["b"]


async def test_concurrent_acquirers_get_one_winner(store: Store, clock: FakeClock) -> None:
    results = await asyncio.gather(*(_take(store, clock, f"w{i}") for i in range(8)))
    assert sum(isinstance(r, Acquired) for r in results) == 1
