from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, update

from daemon.config import ConfigError, load_settings
from daemon.service import instance as instance_mod
from daemon.service.cycle import StepEnv, StepSet
from daemon.service.hardstop import HardStop
from daemon.service.lifecycle import Daemon, Interrupt
from daemon.service.notify import Notifier
from daemon.service.once import run_once
from pipeline.clock import FakeClock
from pipeline.errors import InstanceBusy
from pipeline.machine import UNNAMED
from pipeline.settings import Settings
from pipeline.store import Store, heartbeats, jobs, kv, leases, open_store
from pipeline.store.read.keys import run_key
from pipeline.store.schema import leases as leases_table
from pipeline.store.schema import transcripts
from pipeline.vocabulary import DaemonState

TIMEOUT_S = 20


def make_settings(tmp_path: Path, **env: str) -> Settings:
    base = {"HOME": str(tmp_path / "home"), "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(tmp_path / "claude")}
    return load_settings(None, env={**base, **env}).settings


class FakeSteps:
    """Steps that record their calls; a test can make one of them wait or do something."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.env: StepEnv | None = None
        self.hooks: dict[str, Callable[[StepEnv], Awaitable[object]]] = {}
        self.closed = False

    def factory(self, env: StepEnv) -> StepSet:
        self.env = env

        def make(name: str) -> Any:
            async def step(*, dry_run: bool) -> object:
                self.calls.append(name)
                hook = self.hooks.get(name)
                return await hook(env) if hook else {"step": name}

            return step

        async def close() -> None:
            self.closed = True

        return StepSet({n: make(n) for n in ("scan", "extract", "consolidate", "publish")}, close=close)


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    yield str(path), sock
    sock.close()


async def recv_until(sock: socket.socket, prefix: bytes) -> bytes:
    loop = asyncio.get_running_loop()
    while True:
        data = await asyncio.wait_for(loop.sock_recv(sock, 4096), timeout=TIMEOUT_S)
        if data.startswith(prefix):
            return data


def make_daemon(settings: Settings, clock: FakeClock, steps: FakeSteps, **kw: Any) -> Daemon:
    kw.setdefault("watch", False)
    return Daemon(
        settings=settings,
        clock=clock,
        open_store=open_store,
        steps_factory=steps.factory,
        host="h1",
        pid=4242,
        **kw,
    )


async def wait_cycles(daemon: Daemon, n: int) -> None:
    while daemon.cycles_done < n:
        daemon.cycle_finished.clear()
        await asyncio.wait_for(daemon.cycle_finished.wait(), timeout=TIMEOUT_S)


async def read_store(settings: Settings, read: Callable[[Store], Awaitable[Any]]) -> Any:
    store = await open_store(settings.paths.state_db)
    try:
        return await read(store)
    finally:
        await store.close()


async def test_starts_ready_runs_a_first_cycle_and_stops_cleanly(
    tmp_path: Path, clock: FakeClock, notify_socket: tuple[str, socket.socket]
) -> None:
    settings = make_settings(tmp_path)
    steps = FakeSteps()
    daemon = make_daemon(settings, clock, steps, notifier=Notifier(notify_socket[0]))
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    ready = await recv_until(notify_socket[1], b"READY=1")
    assert b"STATUS=" in ready
    assert daemon.state is DaemonState.RUNNING
    await wait_cycles(daemon, 1)
    assert steps.calls == ["scan", "extract", "consolidate", "publish"]
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0
    assert (await recv_until(notify_socket[1], b"STOPPING=1")).startswith(b"STOPPING=1")
    assert daemon.state is DaemonState.STOPPED
    assert steps.closed

    async def check(store: Store) -> None:
        assert await leases.holders(store) == []
        hb = await heartbeats.latest(store)
        assert hb is not None
        assert hb.stopped_at is not None
        assert hb.status["state"] == "stopped"
        recorded = await kv.get(store, run_key("scan", skipped=False, machine=store.machine))
        assert recorded["outcome"] == "ok"
        assert recorded["report"] == {"step": "scan"}

    await read_store(settings, check)


async def test_in_flight_work_may_finish_after_a_stop_request(tmp_path: Path, clock: FakeClock) -> None:
    steps = FakeSteps()
    started, release = asyncio.Event(), asyncio.Event()

    async def slow_extract(env: StepEnv) -> object:
        started.set()
        await release.wait()
        return {"extracted": 1}

    steps.hooks["extract"] = slow_extract
    settings = make_settings(tmp_path)
    daemon = make_daemon(settings, clock, steps)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await asyncio.wait_for(started.wait(), timeout=TIMEOUT_S)
    daemon.request_stop()
    daemon.request("scan")  # ignored: no new work once stopping
    release.set()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0
    assert steps.calls == ["scan", "extract"]  # the cycle stopped after the step in flight

    async def check(store: Store) -> None:
        assert (await kv.get(store, run_key("extract", skipped=False, machine=store.machine)))[
            "outcome"
        ] == "ok"

    await read_store(settings, check)


async def test_work_that_overruns_the_shutdown_timeout_is_cancelled_and_handed_back(
    tmp_path: Path, clock: FakeClock
) -> None:
    steps = FakeSteps()
    holding = asyncio.Event()

    async def stuck_extract(env: StepEnv) -> object:
        await jobs.enqueue(env.store, "extract", "1", now=clock.now())
        job = await jobs.claim_next(
            env.store, "extract", owner=env.owner, now=clock.now(), lease=timedelta(hours=1)
        )
        assert job is not None
        holding.set()
        await asyncio.Event().wait()  # never finishes on its own
        return None

    steps.hooks["extract"] = stuck_extract
    settings = make_settings(tmp_path, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="0.2")
    daemon = make_daemon(settings, clock, steps)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await asyncio.wait_for(holding.wait(), timeout=TIMEOUT_S)
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0

    async def check(store: Store) -> None:
        assert await jobs.counts(store, "extract") == {"pending": 1}
        assert await leases.holders(store) == []

    await read_store(settings, check)


async def test_a_second_stop_request_does_not_wait(tmp_path: Path, clock: FakeClock) -> None:
    steps = FakeSteps()
    started = asyncio.Event()

    async def endless(env: StepEnv) -> object:
        started.set()
        await asyncio.Event().wait()
        return None

    steps.hooks["scan"] = endless
    daemon = make_daemon(make_settings(tmp_path, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="3600"), clock, steps)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await asyncio.wait_for(started.wait(), timeout=TIMEOUT_S)
    daemon.request_stop()
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0


async def test_a_second_daemon_on_the_same_store_is_refused(tmp_path: Path, clock: FakeClock) -> None:
    settings = make_settings(tmp_path)
    first = make_daemon(settings, clock, FakeSteps())
    run = asyncio.create_task(first.run_forever(install_signals=False))
    await wait_cycles(first, 1)
    second = make_daemon(settings, clock, FakeSteps())
    with pytest.raises(InstanceBusy, match="pid 4242"):
        await second.run_forever(install_signals=False)
    assert second.state is DaemonState.STOPPED
    first.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0


async def test_heartbeats_renew_the_lease_and_a_lost_lease_stops_the_daemon(
    tmp_path: Path, clock: FakeClock
) -> None:
    settings = make_settings(tmp_path)
    daemon = make_daemon(settings, clock, FakeSteps(), heartbeat_interval_s=0.05)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await wait_cycles(daemon, 1)
    for _ in range(2):  # the second beat began after the cycle ended (a step's start also beats)
        daemon.heartbeat_done.clear()
        await asyncio.wait_for(daemon.heartbeat_done.wait(), timeout=TIMEOUT_S)
    assert daemon.store is not None
    hb = await heartbeats.latest(daemon.store)
    assert hb is not None
    assert hb.status["state"] == "running"
    assert "scan ok" in hb.status["last_cycle"]
    # Another host takes the instance over (this one slept through its lease, say).
    async with daemon.store.write() as conn:
        await conn.execute(
            update(leases_table).where(leases_table.c.name == "instance").values(owner="thief")
        )
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 1


async def test_reload_keeps_the_old_settings_when_the_file_is_bad(tmp_path: Path, clock: FakeClock) -> None:
    settings = make_settings(tmp_path)
    results: list[Settings | Exception] = [
        ConfigError("config.toml: schedule.scan_interval_minutes: must be > 0"),
        make_settings(
            tmp_path, MEMD_SCHEDULE__SCAN_INTERVAL_MINUTES="2", MEMD_PATHS__STATE_DIR=str(tmp_path / "x")
        ),
    ]

    def reload() -> Settings:
        result = results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    daemon = make_daemon(settings, clock, FakeSteps(), reload_settings=reload)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await wait_cycles(daemon, 1)
    assert daemon.schedule is not None
    assert not daemon.reload()
    assert daemon.settings is settings
    assert daemon.reload()
    assert daemon.settings.schedule.scan_interval_minutes == 2
    assert daemon.schedule.job_options()["interval_s"] == 120.0
    assert daemon.settings.paths.state_dir == settings.paths.state_dir  # takes a restart
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0


async def test_file_events_bring_the_next_scan_forward(tmp_path: Path, clock: FakeClock) -> None:
    root = tmp_path / "claude"
    root.mkdir()
    daemon = make_daemon(make_settings(tmp_path), clock, FakeSteps(), watch=True, min_scan_gap_s=0)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await wait_cycles(daemon, 1)
    assert daemon.watcher is not None
    await asyncio.wait_for(daemon.watcher.started.wait(), timeout=TIMEOUT_S)
    for n in range(200):  # until the watcher thread has armed and reported a change
        (root / f"s{n}.jsonl").write_text("{}\n")
        daemon.cycle_finished.clear()
        try:
            await asyncio.wait_for(daemon.cycle_finished.wait(), timeout=0.5)
            break
        except TimeoutError:
            continue
    assert daemon.cycles_done >= 2  # the periodic scan is 10 minutes away: this one came from the events
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0


async def test_a_session_turning_idle_brings_the_next_scan_forward(tmp_path: Path, clock: FakeClock) -> None:
    steps = FakeSteps()

    async def scan(env: StepEnv) -> object:
        if len(steps.calls) == 1:  # the first scan finds a session that is idle now
            async with env.store.write() as conn:
                await conn.execute(
                    insert(transcripts).values(
                        machine=UNNAMED,
                        source="claude_code",
                        path="/t/1.jsonl",
                        state="active",
                        eligible_at=clock.now(),
                        first_seen_at=clock.now(),
                        updated_at=clock.now(),
                    )
                )
        return {}

    steps.hooks["scan"] = scan
    daemon = make_daemon(make_settings(tmp_path), clock, steps, min_scan_gap_s=0)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await wait_cycles(daemon, 2)
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0


async def test_run_once_runs_every_step_and_releases_the_store(tmp_path: Path, clock: FakeClock) -> None:
    settings = make_settings(tmp_path)
    steps = FakeSteps()
    started: list[str] = []
    result = await run_once(
        make_daemon(settings, clock, steps), on_start=started.append, install_signals=False
    )
    assert started == steps.calls == ["scan", "extract", "consolidate", "publish"]
    assert not result.failures

    async def check(store: Store) -> None:
        assert await leases.holders(store) == []
        assert (await kv.get(store, run_key("publish", skipped=False, machine=store.machine)))[
            "outcome"
        ] == "ok"

    await read_store(settings, check)
    # A dry run records nothing.
    dry = await run_once(make_daemon(settings, clock, FakeSteps()), dry_run=True, install_signals=False)
    assert [r.outcome for r in dry.results] == ["ok"] * 4


async def test_a_crashed_predecessor_is_cleaned_up_at_start(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(instance_mod, "pid_alive", lambda pid: pid != 999_999)
    settings = make_settings(tmp_path)
    store = await open_store(settings.paths.state_db)
    try:
        # What a kill -9 leaves: the instance lease, a claimed job, a heartbeat without a stop.
        await leases.acquire(
            store, "instance", owner="dead", host="h1", pid=999_999, now=clock.now(), ttl=timedelta(hours=1)
        )
        await jobs.enqueue(store, "extract", "7", now=clock.now())
        await jobs.claim_next(store, "extract", owner="dead", now=clock.now(), lease=timedelta(hours=1))
        await heartbeats.beat(
            store,
            instance="dead",
            host="h1",
            pid=999_999,
            version="0",
            started_at=clock.now(),
            now=clock.now(),
            status={},
        )
    finally:
        await store.close()
    steps = FakeSteps()
    seen: dict[str, Any] = {}

    async def extract(env: StepEnv) -> object:
        seen["jobs"] = await jobs.counts(env.store, "extract")
        return {}

    steps.hooks["extract"] = extract
    await run_once(make_daemon(settings, clock, steps), install_signals=False)
    assert seen["jobs"] == {"pending": 1}  # handed back at once, not after its one-hour lease


async def test_something_already_due_never_makes_scans_spin(tmp_path: Path, clock: FakeClock) -> None:
    steps = FakeSteps()

    async def scan(env: StepEnv) -> object:
        async with (
            env.store.write() as conn
        ):  # a session the scanner keeps "active" though its idle time passed
            await conn.execute(
                insert(transcripts).values(
                    machine=UNNAMED,
                    source="claude_code",
                    path=f"/t/{len(steps.calls)}.jsonl",
                    state="active",
                    eligible_at=clock.now() - timedelta(hours=1),
                    first_seen_at=clock.now(),
                    updated_at=clock.now(),
                )
            )
        return {}

    steps.hooks["scan"] = scan
    daemon = make_daemon(make_settings(tmp_path), clock, steps, min_scan_gap_s=60)
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await wait_cycles(daemon, 1)
    assert daemon.schedule is not None
    nxt = daemon.schedule.next_run()
    assert nxt is not None
    wait_s = (nxt - datetime.now(UTC)).total_seconds()
    assert 50 < wait_s <= 61  # brought forward from the 10-minute interval, but not below the gap
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0


async def test_the_heartbeat_records_the_step_in_progress_its_start_and_deadline(
    tmp_path: Path, clock: FakeClock
) -> None:
    steps = FakeSteps()
    started, release = asyncio.Event(), asyncio.Event()

    async def slow_scan(env: StepEnv) -> object:
        started.set()
        await release.wait()
        return {}

    steps.hooks["scan"] = slow_scan
    settings = make_settings(tmp_path, MEMD_SCHEDULE__STEP_DEADLINE_MINUTES="2")
    daemon = make_daemon(settings, clock, steps, heartbeat_interval_s=3600)  # only the step's own beat
    run = asyncio.create_task(daemon.run_forever(install_signals=False))
    await asyncio.wait_for(started.wait(), timeout=TIMEOUT_S)
    await asyncio.wait_for(daemon.heartbeat_done.wait(), timeout=TIMEOUT_S)
    beat = await read_store(settings, heartbeats.latest)
    assert beat.status["step"] == "scan"
    assert beat.status["step_started_at"] == clock.now().isoformat()
    assert beat.status["step_deadline_s"] == 120
    release.set()
    daemon.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0
    assert daemon.abandoned is None


async def test_a_stop_that_cancels_a_step_says_which(tmp_path: Path, clock: FakeClock) -> None:
    steps = FakeSteps()
    started = asyncio.Event()

    async def endless(env: StepEnv) -> object:
        started.set()
        await asyncio.Event().wait()
        return None

    steps.hooks["consolidate"] = endless
    daemon = make_daemon(make_settings(tmp_path, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="0.1"), clock, steps)
    once = asyncio.create_task(run_once(daemon, install_signals=False))
    await asyncio.wait_for(started.wait(), timeout=TIMEOUT_S)
    daemon.request_stop()
    result = await asyncio.wait_for(once, timeout=TIMEOUT_S)
    assert daemon.abandoned == "consolidate"
    assert result.summary() == "scan ok, extract ok, consolidate cancelled, publish skipped: interrupted"


async def test_a_stop_signal_a_worker_thread_receives_still_reaches_the_loop_at_once(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The kernel may hand SIGINT/SIGTERM to any thread: to one of the step's worker threads while
    the event loop sleeps with nothing due. The loop must wake for it, not when the step is done."""
    steps = FakeSteps()
    in_thread = threading.Event()
    release = threading.Event()
    left = threading.Event()  # the step's thread is done: the loop would wake for that anyway
    worker: list[int] = []

    def block() -> None:
        worker.append(threading.get_ident())
        in_thread.set()
        release.wait(TIMEOUT_S)
        left.set()

    async def extract(env: StepEnv) -> object:
        await asyncio.to_thread(block)
        return None

    steps.hooks["extract"] = extract
    exits: list[int] = []
    hard_stop = HardStop(exit=exits.append)
    interrupts: list[Interrupt] = []
    told = asyncio.Event()
    step_done_when_told: list[bool] = []

    def on_interrupt(interrupt: Interrupt) -> None:
        interrupts.append(interrupt)
        step_done_when_told.append(left.is_set())
        told.set()

    daemon = make_daemon(make_settings(tmp_path), clock, steps, hard_stop=hard_stop)
    once = asyncio.create_task(run_once(daemon, on_interrupt=on_interrupt))
    try:
        assert await asyncio.to_thread(in_thread.wait, TIMEOUT_S)
        # from a third thread, once the loop is asleep in its selector with nothing due: no timer
        # here, so only the signal can wake it before the step's thread is done (a loop that misses
        # it is told when the thread is released, and the assertion below fails)
        threading.Timer(0.2, signal.pthread_kill, (worker[0], signal.SIGINT)).start()
        await told.wait()
        assert step_done_when_told == [False]  # at once, not when the step's thread is done
        assert interrupts == [Interrupt("extract", daemon.settings.schedule.shutdown_timeout_s, False)]
    finally:
        release.set()
        result = await asyncio.wait_for(once, timeout=TIMEOUT_S)
        hard_stop.disarm()
    assert (
        result.summary()
        == "scan ok, extract ok, consolidate skipped: interrupted, publish skipped: interrupted"
    )
    assert exits == []


def test_a_wakeup_fd_refused_off_the_main_thread_leaks_no_socket() -> None:
    """Stop handlers can only be installed on the main thread; elsewhere the refusal leaves nothing open."""
    from daemon.service.lifecycle import _wakes

    def off_main() -> BaseException | None:
        loop = asyncio.new_event_loop()
        try:
            before = len(os.listdir("/proc/self/fd"))
            try:
                with _wakes(loop):
                    pass
            except ValueError as exc:
                assert len(os.listdir("/proc/self/fd")) == before
                return exc
            return None
        finally:
            loop.close()

    found: list[BaseException | None] = []
    worker = threading.Thread(target=lambda: found.append(off_main()))
    worker.start()
    worker.join(TIMEOUT_S)
    assert isinstance(found[0], ValueError)
