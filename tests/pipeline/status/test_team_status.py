"""`memd status` on the machines sharing a store: two hosts with one machine id, and a store shared
without a ``[sync] remote`` (memory does not travel)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.machine import host_id
from pipeline.store import Store, leases, machines
from tests.conftest import as_machine, postgres_only
from tests.pipeline.status.test_read import read_report

MID = "fedcba9876543210fedcba9876543210"


async def _this_machine(store: Store, clock: FakeClock, state_dir: Path) -> None:
    """This host (its ``machine-id`` in ``state_dir``) known to the store as machine ``MID``."""
    (state_dir / "machine-id").write_text(MID + "\n")
    await machines.identify(
        store, machine_id=MID, host=host_id(state_dir) or "", hostname="h", person=None, now=clock.now()
    )


async def _another_machine(other: Store, clock: FakeClock) -> None:
    """Machine ``b…b`` on another host, identified through ``other`` (the store opened as it)."""
    await machines.identify(
        other, machine_id="b" * 32, host="1" * 16, hostname="b", person=None, now=clock.now()
    )


async def test_status_says_two_hosts_share_the_machine_id_and_what_to_do(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    (tmp_path / "machine-id").write_text(MID + "\n")
    here = host_id(tmp_path)
    assert here is not None
    async with as_machine(store, MID) as other:
        await machines.identify(
            other, machine_id=MID, host="0" * 16, hostname="clone", person=None, now=clock.now()
        )
        running = await leases.acquire(
            other, "instance", owner="o", host="clone", pid=1, now=clock.now(), ttl=timedelta(minutes=2)
        )
        assert isinstance(running, leases.Acquired)  # the clone's daemon runs
        key = await machines.identify(
            store, machine_id=MID, host=here, hostname="original", person=None, now=clock.now()
        )
        report = await read_report(store, clock, tmp_path)
    team = report["team"]
    assert team["machine"] == key != MID  # the clone came first here: this host runs under a key of its own
    note = team["notes"][0]  # (on PostgreSQL, then: memory does not travel without a [sync] remote)
    assert f"two hosts share machine id {MID[:12]}" in note
    assert "clone" in note
    assert "stop memd there" in note


async def test_status_says_nothing_of_a_machine_alone(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    await _this_machine(store, clock, tmp_path)
    report = await read_report(store, clock, tmp_path)
    assert report["team"] is None


@postgres_only
async def test_status_says_memory_does_not_travel_on_a_shared_store_without_a_sync_remote(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await _this_machine(store, clock, tmp_path)
    async with as_machine(store, "b" * 32) as other:
        await _another_machine(other, clock)
    report = await read_report(store, clock, tmp_path)
    [note] = report["team"]["notes"]
    assert "memory does not travel" in note
    assert "[sync] remote" in note


@postgres_only
async def test_status_shows_this_machines_own_global_record_only(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from pipeline.store import consolidation

    await _this_machine(store, clock, tmp_path)
    await consolidation.save_success(
        store, "global", inputs=[], commit="a" * 40, project=None, now=clock.now()
    )
    async with as_machine(store, "b" * 32) as other:
        await _another_machine(other, clock)
        await consolidation.save_success(
            other, "global", inputs=[], commit="b" * 40, project=None, now=clock.now()
        )
        assert await consolidation.candidate_scopes(other) == ["global"]
    report = await read_report(store, clock, tmp_path)
    assert [(s["scope"], s["last_commit"]) for s in report["memory"]["scopes"]] == [("global", "a" * 40)]


async def test_memd_status_prints_each_team_note_on_its_own_line(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    import asyncio

    from daemon.cli.status import _rows
    from pipeline.status import read as status_read
    from pipeline.store.read import rows as status_rows
    from tests.pipeline.status.test_read import current_schema, status_settings

    (tmp_path / "machine-id").write_text(MID + "\n")
    async with as_machine(store, MID) as other:
        await machines.identify(
            other, machine_id=MID, host="0" * 16, hostname="clone", person=None, now=clock.now()
        )
        await leases.acquire(
            other, "instance", owner="o", host="clone", pid=1, now=clock.now(), ttl=timedelta(minutes=2)
        )
        await machines.identify(
            store,
            machine_id=MID,
            host=host_id(tmp_path) or "",
            hostname="original",
            person=None,
            now=clock.now(),
        )
    settings = status_settings(store.url, tmp_path)
    schema = await current_schema(store)

    def human() -> list[tuple[str, str]]:
        rows = status_rows.open_rows(store.url, pg_schema=schema)
        try:
            return _rows(status_read.collect(rows, settings, now=clock.now(), pid_alive=lambda pid: True))
        finally:
            rows.close()

    lines = await asyncio.to_thread(human)
    team = [text for label, text in lines if label == "team"]
    assert team
    assert team[0].startswith(f"two hosts share machine id {MID[:12]}: this one (original) and clone")


@postgres_only
async def test_status_says_a_machine_claiming_this_persons_name_without_its_key_is_refused(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from pipeline.gitrepo.signing import Signer
    from pipeline.team.people import bind

    (tmp_path / "machine-id").write_text(MID + "\n")
    await machines.identify(
        store, machine_id=MID, host=host_id(tmp_path) or "", hostname="h", person="alice", now=clock.now()
    )
    async with as_machine(store, "b" * 32) as other:
        await machines.identify(
            other, machine_id="b" * 32, host="1" * 16, hostname="mallorys", person="alice", now=clock.now()
        )
        await bind(other, Signer(tmp_path / "other-state"), "alice", now=clock.now())
    await bind(store, Signer(tmp_path / "state"), "alice", now=clock.now())
    report = await read_report(store, clock, tmp_path)
    note = next(n for n in report["team"]["notes"] if "[team] person" in n)
    assert "'alice' is claimed by 1 machine(s) whose signing key is not bound to it: mallorys" in note
    assert "refused" in note
