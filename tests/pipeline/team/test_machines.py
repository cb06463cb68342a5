"""A machine is what it is: two installations with one machine id (a cloned VM, a restored backup,
a copied home) on two hosts are two machines (``pipeline.store.machines``): neither takes over the
other's daemon lease, marks the other's transcripts gone or extracts what the other extracts."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from daemon.service.instance import InstanceGuard
from pipeline.clock import FakeClock
from pipeline.errors import InstanceBusy
from pipeline.machine import host_id
from pipeline.scan.scanner import scan
from pipeline.store import Store, jobs, machines
from pipeline.store.schema import transcripts
from tests.conftest import as_machine
from tests.pipeline.scan.test_scanner import _repo, _session, _settings

MID = "0123456789abcdef0123456789abcdef"
ABSENT_PID = 4_194_999  # above Linux's largest pid_max: no such process here


async def _identify(store: Store, host: str, clock: FakeClock, person: str | None = None) -> str:
    return await machines.identify(
        store, machine_id=MID, host=host, hostname=f"{host}.local", person=person, now=clock.now()
    )


async def _running(
    store: Store, clock: FakeClock, tmp_path: Path, owner: str, pid: int = 100
) -> InstanceGuard:
    """``store``'s machine with its daemon running (its instance lease held)."""
    guard = InstanceGuard(store, state_dir=tmp_path / owner, clock=clock, owner=owner, host="h", pid=pid)
    await guard.acquire()
    return guard


async def test_a_second_host_with_the_same_machine_id_is_a_machine_of_its_own(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    async with as_machine(store, MID) as other:
        first = await _identify(store, "host-a", clock)
        await _running(store, clock, tmp_path, "a")
        second = await _identify(other, "host-b", clock)
        assert first == MID  # the first host keeps the id (and every row recorded under it)
        assert second != first
        assert second.startswith(MID)
        assert (store.machine, other.machine) == (first, second)
        assert await _identify(store, "host-a", clock) == first  # stable across restarts
        assert await _identify(other, "host-b", clock) == second
        [seen_by_a] = await machines.shared_id(store)
        [seen_by_b] = await machines.shared_id(other)
        assert (seen_by_a.hostname, seen_by_b.hostname) == ("host-b.local", "host-a.local")


async def test_two_hosts_sharing_a_machine_id_never_take_over_each_others_instance_lease(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    async with as_machine(store, MID) as other:
        await _identify(store, "host-a", clock)
        a = await _running(store, clock, tmp_path, "a", pid=ABSENT_PID)
        await _identify(other, "host-b", clock)
        b = InstanceGuard(other, state_dir=tmp_path / "b", clock=clock, owner="b", host="h", pid=100)
        if store.shared:  # PostgreSQL: one daemon per machine, and these are two machines
            assert await b.acquire() is None
            await a.renew()
            await b.renew()
            await b.release()
        else:  # one SQLite file keeps one daemon: the other host's is refused, its pid means nothing here
            with pytest.raises(InstanceBusy):
                await b.acquire()
            await a.renew()
        await a.release()


async def test_a_copy_neither_marks_the_originals_transcripts_gone_nor_extracts_them_again(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings = _settings(tmp_path)
    repo = _repo(tmp_path / "work" / "app")
    path = _session(tmp_path, repo, clock.now() - timedelta(hours=7))
    await _identify(store, "host-a", clock)
    [original] = (await scan(store, settings, clock)).sessions
    assert original.state == "eligible"
    await _running(store, clock, tmp_path, "a")
    async with as_machine(store, MID) as copy:
        await _identify(copy, "host-b", clock)  # the copied home: the same files at the same paths
        elsewhere = settings.model_copy(
            update={"paths": settings.paths.model_copy(update={"state_dir": tmp_path / "st-b"})}
        )
        report = await scan(copy, elsewhere, clock)
        assert report.enqueued == 0  # the original extracts what it found; the copy does not again
        lease = timedelta(minutes=1)
        assert await jobs.claim_next(copy, "extract", owner="b", now=clock.now(), lease=lease) is None
        job = await jobs.claim_next(store, "extract", owner="a", now=clock.now(), lease=lease)
        assert job is not None
        assert job.key == str(original.id)
        path.unlink()  # gone from the copy's disk: the copy's news only
        await scan(copy, elsewhere, clock)
        async with store.read() as conn:
            rows = dict((await conn.execute(select(transcripts.c.machine, transcripts.c.state))).all())
        assert rows == {MID: "eligible", copy.machine: "gone"}


def test_the_host_identity_is_stable_and_differs_for_another_folder(tmp_path: Path) -> None:
    here = host_id(tmp_path / "state")
    assert here == host_id(tmp_path / "state")
    assert host_id(tmp_path / "copied-state") != here


async def test_an_installation_that_moved_to_another_host_keeps_its_machine_and_its_work(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """Nothing runs under the id on its old host (a restored backup, a state directory moved): the
    new host takes the id's key over, so nothing recorded under it is left behind or done again."""
    settings = _settings(tmp_path)
    _session(tmp_path, _repo(tmp_path / "work" / "app"), clock.now() - timedelta(hours=7))
    await _identify(store, "old-host", clock)
    [session] = (await scan(store, settings, clock)).sessions
    async with as_machine(store, MID) as moved:
        assert await _identify(moved, "new-host", clock) == MID
        assert await machines.shared_id(moved) == []
        lease = timedelta(minutes=1)
        job = await jobs.claim_next(moved, "extract", owner="b", now=clock.now(), lease=lease)
        assert job is not None
        assert job.key == str(session.id)  # its pending extraction goes on where it moved


def test_the_host_identity_reads_the_os_id_and_never_blocks_on_a_fifo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from pipeline import machine

    os_id = tmp_path / "machine-id"
    os_id.write_text("a" * 32 + "\n")
    monkeypatch.setattr(machine, "_OS_IDS", (os_id,))
    one = host_id(tmp_path / "state")
    os_id.write_text("b" * 32 + "\n")  # another host's OS: another identity for the same folder
    assert host_id(tmp_path / "state") != one
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(machine, "_OS_IDS", (fifo,))
    assert host_id(tmp_path / "state") is not None  # the hostname stands in; nothing waits on the FIFO


async def test_two_starts_at_once_agree_on_one_machine_key(store: Store, clock: FakeClock) -> None:
    import asyncio

    async with as_machine(store, MID) as one, as_machine(store, MID) as two:
        keys = await asyncio.gather(_identify(one, "host-a", clock), _identify(two, "host-a", clock))
    assert keys == [MID, MID]
