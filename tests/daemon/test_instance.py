from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from daemon.service import instance as instance_mod
from daemon.service.instance import InstanceGuard, instance_lease, lock_path
from pipeline.clock import FakeClock
from pipeline.errors import InstanceBusy, LeaseLost
from pipeline.store import Store, leases
from tests.conftest import as_machine, postgres_only


def _guard(
    store: Store, clock: FakeClock, state_dir: Path, owner: str, *, host: str = "h1", pid: int = 100
) -> InstanceGuard:
    return InstanceGuard(store, state_dir=state_dir, clock=clock, owner=owner, host=host, pid=pid)


async def test_second_instance_on_this_host_is_refused_and_told_who_holds_it(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    first = _guard(store, clock, tmp_path, "a")
    assert await first.acquire() is None
    second = _guard(store, clock, tmp_path, "b", pid=101)
    with pytest.raises(InstanceBusy) as refused:
        await second.acquire()
    assert (refused.value.host, refused.value.pid) == ("h1", 100)
    assert refused.value.since == clock.now()
    assert "host h1, pid 100, since" in str(refused.value)
    await first.release()
    assert await second.acquire() is None
    assert [h.owner for h in await leases.holders(store)] == ["b"]
    await second.release()


async def test_a_live_instance_of_another_machine_keeps_a_sqlite_store_until_it_expires(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    # A SQLite store is one file: whoever else has it (another state directory, so another
    # machine id, with a pid that may well be alive here) keeps it until its lease expires.
    async with as_machine(sqlite_store, "m2") as elsewhere:
        other = _guard(elsewhere, clock, tmp_path / "h2", "a", host="h2", pid=999_999)
        await other.acquire()
        here = _guard(sqlite_store, clock, tmp_path / "h1", "b")
        with pytest.raises(InstanceBusy, match="host h2, pid 999999"):
            await here.acquire()  # pid 999999 is absent here, and that says nothing of m2's
        clock.advance(instance_mod.LEASE_TTL + timedelta(seconds=1))
        took = await here.acquire()
        assert took is not None
        assert (took.owner, took.host) == ("a", "h2")
        with pytest.raises(LeaseLost):
            await other.renew()


@postgres_only
async def test_machines_sharing_a_postgresql_store_run_one_daemon_each(
    store: Store, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with as_machine(store, "m1") as one, as_machine(store, "m2") as two:
        # One hostname, and pids that exist nowhere: each machine judges only its own holders.
        first = _guard(one, clock, tmp_path / "m1", "a", host="same-hostname", pid=os.getpid())
        second = _guard(two, clock, tmp_path / "m2", "b", host="same-hostname", pid=999_998)
        assert await first.acquire() is None
        assert await second.acquire() is None  # its own machine's lease: both run
        assert {h.name: h.owner for h in await leases.holders(one)} == {
            "instance:m1": "a",
            "instance:m2": "b",
        }
        # A second daemon on m1 (another state directory with m1's id) is refused while m1's
        # holder lives; m2's holder, whose pid is absent here, is never judged by it.
        again = _guard(one, clock, tmp_path / "m1-again", "c", host="same-hostname", pid=999_997)
        with pytest.raises(InstanceBusy, match=f"pid {os.getpid()}"):
            await again.acquire()
        third = _guard(two, clock, tmp_path / "m2-again", "d", host="same-hostname", pid=999_996)
        monkeypatch.setattr(instance_mod, "pid_alive", lambda pid: pid != 999_998)
        took = await third.acquire()  # m2's own dead holder: taken over at once
        assert took is not None
        assert took.owner == "b"
        await third.release()
        await first.renew()
        await first.release()


async def test_a_dead_holder_on_this_host_is_taken_over_at_once(
    store: Store, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A crash leaves the lease row behind; its process is gone (here: a pid nobody has).
    await leases.acquire(
        store,
        instance_lease(store),
        owner="dead",
        host="h1",
        pid=999_999,
        now=clock.now(),
        ttl=timedelta(hours=1),
    )
    monkeypatch.setattr(instance_mod, "pid_alive", lambda pid: pid != 999_999)
    took = await _guard(store, clock, tmp_path, "b").acquire()
    assert took is not None
    assert took.owner == "dead"


async def test_a_holder_whose_lock_is_free_is_gone_even_if_its_pid_was_reused(
    store: Store, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashed = _guard(store, clock, tmp_path, "a", pid=555)
    await crashed.acquire()
    crashed._unlock_file()  # what the kernel does when the process dies; the lease row stays
    monkeypatch.setattr(instance_mod, "pid_alive", lambda pid: True)  # pid 555 now belongs to someone else
    took = await _guard(store, clock, tmp_path, "b", pid=556).acquire()
    assert took is not None
    assert took.owner == "a"


async def test_a_previous_incarnation_with_our_pid_is_gone(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    # A restarted container: same host, same pid, a different owner, another state directory.
    await leases.acquire(
        store, instance_lease(store), owner="old", host="h1", pid=100, now=clock.now(), ttl=timedelta(hours=1)
    )
    took = await _guard(store, clock, tmp_path, "new", pid=100).acquire()
    assert took is not None
    assert took.owner == "old"


async def test_lock_file_records_the_holder_and_survives_release(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    guard = _guard(store, clock, tmp_path, "a")
    await guard.acquire()
    path = lock_path(tmp_path, store.url)
    assert '"owner": "a"' in path.read_text()
    await guard.release()
    await guard.release()  # idempotent
    assert path.exists()
    assert await leases.holders(store) == []
