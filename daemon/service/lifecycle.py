"""The daemon's lifecycle: start, run until told to stop, stop cleanly (the one-shot mode, `memd run
--once`, is ``daemon.service.once`` on the same parts).

``Daemon.run_forever()`` goes through explicit states (logged on each transition):

    created -> starting -> running -> stopping -> stopped     (or -> crashed)

*starting* opens the state store, takes the instance lock and lease (refusing to start beside a
live instance: it logs ``daemon_refused`` and stops; taking over from a dead one at once), writes the first heartbeat, starts the
schedule and the file watcher, and only then tells systemd ``READY=1``. *running* is a set of
tasks the daemon owns: the worker that runs requested cycles, the heartbeat (which also renews
the instance lease, and records the step in progress, since when, and its deadline, so that
`memd status` shows a step that overran as stuck), the systemd watchdog, the file watcher, the
settings reloader. Signal handlers only set flags, and arm the ``HardStop``. *stopping* pauses the
schedule, lets the in-flight step finish for up to ``schedule.shutdown_timeout_s`` and then cancels
it (its work is handed back), releases every lease and job this instance holds, records the stop,
and returns the exit status.

A step stuck in a thread (a system call no cancellation reaches) cannot keep the process alive:
the stop signal arms ``daemon.service.hardstop.HardStop``, which ends the process ``STOP_GRACE_S`` after
the shutdown timeout whatever is still running (the event loop itself included), and a stop that
had to abandon a step says so (``abandoned``) so that the CLI ends the process at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from types import FrameType
from typing import TYPE_CHECKING, Any

import structlog

from daemon.exits import Exit
from daemon.runtime import StoreOpener
from daemon.service import cycle
from daemon.service.hardstop import HardStop
from daemon.service.hints import off_hints
from daemon.service.instance import InstanceGuard
from daemon.service.notify import Notifier
from daemon.service.watch import SourceWatcher
from pipeline import __version__, roster
from pipeline.clock import Clock
from pipeline.errors import InstanceBusy, LeaseLost
from pipeline.settings import Settings
from pipeline.status.liveness import HEARTBEAT_INTERVAL_S, beat_status, stuck_step
from pipeline.store import Store, heartbeats, kv, workload
from pipeline.vocabulary import DaemonState

if TYPE_CHECKING:
    from daemon.service.schedule import Schedule

log = structlog.get_logger(__name__)

HEARTBEAT_RETENTION = timedelta(days=30)
MIN_SCAN_GAP_S = 60.0
"""A scan brought forward (by file events, or by something falling due) runs no sooner than this after the last."""
CANCEL_GRACE_S = 5.0
STOP_GRACE_S = CANCEL_GRACE_S + 3.0
"""After a stop signal, the process ends within ``shutdown_timeout_s`` plus this, whatever still runs."""

StepsFactory = Callable[[cycle.StepEnv], cycle.StepSet]
SettingsReloader = Callable[[], Settings]
Sidecar = Callable[[Store, Callable[[], Settings]], Awaitable[None]]
"""A service the daemon runs beside its cycles while it runs (the web page): given the open store and
the current settings, it runs until cancelled at the stop, and handles its own failures."""


@contextlib.contextmanager
def _wakes(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Any signal wakes the event loop. The kernel may hand a signal to any thread (one of a step's
    worker threads, say); Python then runs its handler only when the main thread next runs, which,
    while the loop sleeps in its selector with nothing due, is not until something else wakes it.
    The wakeup fd is written by whichever thread takes the signal, so the selector returns at once.
    (``loop.add_signal_handler`` sets its own, which wakes the loop too: it replaces this one.)"""
    read_end, write_end = socket.socketpair()

    def drain() -> None:
        with contextlib.suppress(OSError):
            while read_end.recv(4096):
                pass

    with read_end, write_end:
        read_end.setblocking(False)
        write_end.setblocking(False)
        previous = signal.set_wakeup_fd(write_end.fileno(), warn_on_full_buffer=False)  # main thread only
        try:
            loop.add_reader(read_end.fileno(), drain)
            try:
                yield
            finally:
                loop.remove_reader(read_end.fileno())
        finally:
            signal.set_wakeup_fd(previous)


def watched_roots(settings: Settings) -> list[Any]:
    """The roots of the enabled sources whose agent's root is watched for file events (an agent
    whose root is only searched, bounded, on each scan is left to the periodic scan)."""
    return [
        cfg.root
        for name, cfg in settings.sources.enabled().items()
        if (agent := roster.find(name)) is None or agent.watched
    ]


@dataclass(frozen=True)
class Interrupt:
    """A stop signal, as `memd run --once` tells it: the step in flight and how long it may take."""

    step: str | None
    wait_s: float
    again: bool
    """The second signal: the step in flight is abandoned."""


def sync_interval_s(settings: Settings) -> float | None:
    """The sync job's period, or None while no ``[sync] remote`` is configured."""
    return settings.sync.interval_minutes * 60 if settings.sync.enabled else None


def chain_from(job: str) -> list[str]:
    """What a trigger asks for: a scan is followed by the rest of the cycle, and so on."""
    return list(cycle.STEP_ORDER[cycle.STEP_ORDER.index(job) :])


class Daemon:
    def __init__(
        self,
        *,
        settings: Settings,
        clock: Clock,
        open_store: StoreOpener,
        steps_factory: StepsFactory,
        notifier: Notifier | None = None,
        reload_settings: SettingsReloader | None = None,
        host: str,
        pid: int,
        watch: bool = True,
        heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S,
        min_scan_gap_s: float = MIN_SCAN_GAP_S,
        hard_stop: HardStop | None = None,
        sidecars: Sequence[tuple[str, Sidecar]] = (),
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._open_store = open_store
        self._steps_factory = steps_factory
        self._notifier = notifier or Notifier(None)
        self._reload_settings = reload_settings
        self.host = host
        self.pid = pid
        self.owner = uuid.uuid4().hex
        self._watch_enabled = watch
        self._heartbeat_interval_s = heartbeat_interval_s
        self._min_scan_gap_s = min_scan_gap_s
        self._sidecars = tuple(sidecars)

        self.state = DaemonState.CREATED
        self.exit_code: int = Exit.OK
        self.store: Store | None = None
        self.schedule: Schedule | None = None
        self.watcher: SourceWatcher | None = None
        self._guard: InstanceGuard | None = None
        self._steps = cycle.StepSet({})
        self._started_at = clock.now()
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._reload = asyncio.Event()
        self._wake = asyncio.Event()
        self._wanted: set[str] = set()
        self._current_step: str | None = None
        self._step_started_at: datetime | None = None
        self._overran_step: str | None = None
        self._beat_soon = asyncio.Event()
        self._signalled = False
        self.on_interrupt: Callable[[Interrupt], object] | None = None
        self.cycle_result = cycle.CycleResult()
        self.hard_stop = hard_stop or HardStop()
        self.hard_stop.what = lambda: self._current_step
        self.abandoned: str | None = None
        """The step a stop had to cancel (its thread may still be stuck): the process must not wait for it."""
        self._last_cycle: str | None = None
        self._last_scan_mono: float | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.cycles_done = 0
        self.cycle_finished = asyncio.Event()
        """Set after each cycle of the daemon's worker (tests await it)."""
        self.beats = 0
        self.heartbeat_done = asyncio.Event()
        """Set after each heartbeat written by the heartbeat task (tests await it)."""

    # Requests (from signals, the schedule, the watcher, tests) --------------------------------------

    def request_stop(self) -> None:
        if self._stop.is_set():
            self._force.set()  # a second SIGTERM/SIGINT: do not wait for in-flight work
        self._stop.set()

    def request_reload(self) -> None:
        self._reload.set()

    def request(self, job: str) -> None:
        """Ask for ``job`` and the steps after it to run soon (ignored while stopping)."""
        if self._stop.is_set():
            return
        self._wanted.update(chain_from(job))
        self._wake.set()

    # The daemon --------------------------------------------------------------------------------------

    async def run_forever(self, *, install_signals: bool = True) -> int:
        """Run until SIGTERM/SIGINT (or ``request_stop``); returns the exit status. Startup errors raise."""
        with self.signals(install_signals, reload=True):
            try:
                await self._start()
            except InstanceBusy as busy:  # refused, not crashed: another daemon holds the store
                log.warning("daemon_refused", reason="busy", holder_host=busy.host, holder_pid=busy.pid)
                await self._shutdown()
                raise
            except BaseException:
                self.transition(DaemonState.CRASHED)
                await self._shutdown()
                raise
            self.transition(DaemonState.RUNNING)
            self._notifier.ready(self._status_line())
            await self._stop.wait()
            await self._shutdown()
        return self.exit_code

    async def open(self) -> Store:
        """Open the state store, take the instance (``InstanceBusy`` beside a live one) and make the steps."""
        self.store = store = await self._open_store(self.settings.paths.state_db)
        await self._take_instance()
        self._steps = self._steps_factory(cycle.StepEnv(store, lambda: self.settings, self.owner))
        return store

    async def _start(self) -> None:
        self.transition(DaemonState.STARTING)
        store = await self.open()
        await self._beat()
        from daemon.service.schedule import Schedule  # lazy: apscheduler, for the service only (not --once)

        self.schedule = Schedule(
            self.request,
            scan_interval_s=self.settings.schedule.scan_interval_minutes * 60,
            sync_interval_s=sync_interval_s(self.settings),
        )
        self.schedule.start()
        self._spawn(self._work_loop(), "worker")
        self._spawn(self._heartbeat_loop(), "heartbeat")
        self._spawn(self._reload_loop(), "reloader")
        if self._notifier.watchdog_interval_s:
            self._spawn(self._watchdog_loop(self._notifier.watchdog_interval_s), "watchdog")
        if self._watch_enabled:
            self.watcher = SourceWatcher(self._roots(), self._on_files_changed)
            self._spawn(self.watcher.run(), "watcher")
        for name, sidecar in self._sidecars:
            self._spawn(sidecar(store, lambda: self.settings), name)

    async def _take_instance(self) -> None:
        assert self.store is not None
        self._guard = InstanceGuard(
            self.store,
            state_dir=self.settings.paths.state_dir,
            clock=self._clock,
            owner=self.owner,
            host=self.host,
            pid=self.pid,
        )
        await self._guard.take()

    async def _shutdown(self) -> None:
        if self.state is not DaemonState.CRASHED:
            self.transition(DaemonState.STOPPING)
        self._notifier.stopping()
        self._stop.set()
        if self.schedule is not None:
            self.schedule.pause()
            await self.schedule.shutdown()
        if self.watcher is not None:
            self.watcher.stop()
        self._wake.set()
        await self.drain()
        await self.release()
        if self.state is not DaemonState.CRASHED:
            self.transition(DaemonState.STOPPED)

    async def drain(self) -> None:
        """Let the in-flight step finish within the shutdown timeout, then cancel what is left."""
        worker = [t for t in self._tasks if t.get_name() == "worker"]
        if worker and not worker[0].done():
            timeout_s = 0.0 if self._force.is_set() else self.settings.schedule.shutdown_timeout_s
            force = asyncio.ensure_future(self._force.wait())
            done, _ = await asyncio.wait({worker[0], force}, timeout=timeout_s, return_when="FIRST_COMPLETED")
            force.cancel()
            if worker[0] not in done:
                log.warning("shutdown_cancelling_work", step=self._current_step, timeout_s=timeout_s)
                self.abandoned = self._current_step or "work"
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=CANCEL_GRACE_S)

    async def release(self) -> None:
        """Close what the steps loaded, hand back jobs and leases, record the stop, close the store."""
        try:
            await self._steps.aclose()
        except Exception as exc:
            log.warning("steps_close_failed", error=str(exc))
        if self.store is None:
            return
        if self._guard is not None:
            await self._guard.give_back()
        await self.store.close()

    # Tasks the daemon owns --------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any], name: str) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or self._stop.is_set():
            return
        exc = task.exception()
        if exc is not None:
            log.error("task_crashed", task=task.get_name(), exc_info=exc)
            self.exit_code = Exit.FAILED
            self.request_stop()

    async def _work_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return
            names, self._wanted = cycle.ordered(self._wanted), set()
            result = await self.run_cycle(names, dry_run=False)
            self._last_cycle = f"{self._clock.now():%H:%M}Z {result.summary()}"
            self._notifier.status(self._status_line())
            await self._after_cycle()
            self.cycles_done += 1
            self.cycle_finished.set()

    async def _after_cycle(self) -> None:
        """Watch roots that appeared; bring the next scan forward to when something becomes due."""
        if self.watcher is not None:
            self.watcher.refresh()
        if self.store is None or self.schedule is None or self._stop.is_set():
            return
        try:
            due = await workload.next_due_at(self.store, now=self._clock.now())
        except Exception as exc:
            log.warning("next_due_unknown", error=str(exc))
            return
        if due is not None:
            delay_s = max((due - self._clock.now()).total_seconds() + 1.0, self._scan_gap_left_s())
            if self.schedule.bring_forward(delay_s):
                log.info("scan_brought_forward", reason="due", at=due.isoformat())

    def _scan_gap_left_s(self) -> float:
        """How long until a brought-forward scan may run (never a tight loop of scans)."""
        if self._last_scan_mono is None:
            return 0.0
        return max(0.0, self._min_scan_gap_s - (self._clock.monotonic() - self._last_scan_mono))

    async def _heartbeat_loop(self) -> None:
        """A beat every interval, and one as soon as a step starts (so the step shows at once)."""
        while not self._stop.is_set():
            stop, soon = (
                asyncio.ensure_future(self._stop.wait()),
                asyncio.ensure_future(self._beat_soon.wait()),
            )
            await asyncio.wait(
                {stop, soon}, timeout=self._heartbeat_interval_s, return_when="FIRST_COMPLETED"
            )
            stop.cancel()
            soon.cancel()
            if self._stop.is_set():
                return
            self._beat_soon.clear()
            try:
                assert self._guard is not None
                await self._guard.renew()
                await self._beat()
                self._check_overrun()
                self.beats += 1
                self.heartbeat_done.set()
            except LeaseLost:
                log.error("instance_lease_lost", reason="another memd took over this state store")
                self.exit_code = Exit.FAILED
                self.request_stop()
                return
            except Exception as exc:  # the store is down for a while: keep going, say so
                log.warning("heartbeat_failed", error=str(exc))

    async def _watchdog_loop(self, interval_s: float) -> None:
        while not self._stop.is_set():
            self._notifier.watchdog()
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=interval_s)
            except TimeoutError:
                pass

    async def _reload_loop(self) -> None:
        while True:
            await self._reload.wait()
            self._reload.clear()
            self.reload()

    def reload(self) -> bool:
        """Load the settings again; a bad file keeps the old settings and logs why."""
        if self._reload_settings is None:
            return False
        try:
            new = self._reload_settings()
        except Exception as exc:  # ConfigError, and anything the file system throws at us
            log.error("settings_reload_failed", reason=str(exc), kept="previous settings")
            self._notifier.status(f"settings reload failed, running with the previous settings: {exc}")
            return False
        old = self.settings
        if (new.paths.state_db, new.paths.state_dir) != (old.paths.state_db, old.paths.state_dir):
            log.warning(
                "settings_reload_partial", reason="paths.state_db and paths.state_dir change on restart"
            )
            new = new.model_copy(
                update={
                    "paths": new.paths.model_copy(
                        update={"state_db": old.paths.state_db, "state_dir": old.paths.state_dir}
                    )
                }
            )
        self.settings = new
        if self.schedule is not None:
            self.schedule.reconfigure(
                scan_interval_s=new.schedule.scan_interval_minutes * 60, sync_interval_s=sync_interval_s(new)
            )
        if self.watcher is not None:
            self.watcher.set_roots(self._roots())
        log.info("settings_reloaded")
        self._notifier.status(f"settings reloaded; {self._status_line()}")
        return True

    # Work ---------------------------------------------------------------------------------------

    async def run_cycle(
        self,
        names: list[str],
        *,
        dry_run: bool,
        on_start: Callable[[str], object] | None = None,
        on_end: Callable[[cycle.StepResult], object] | None = None,
        into: cycle.CycleResult | None = None,
    ) -> cycle.CycleResult:
        def started(name: str) -> None:
            self._current_step = name
            self._step_started_at = self._clock.now()
            self._beat_soon.set()
            self._notifier.status(self._status_line())
            if name == "scan":
                self._last_scan_mono = self._clock.monotonic()
            if on_start is not None:
                on_start(name)

        async def ended(result: cycle.StepResult) -> None:
            self._current_step = None
            self._step_started_at = None
            if not dry_run:
                await self._record(result)
            if on_end is not None:
                on_end(result)

        self.cycle_result = into if into is not None else cycle.CycleResult()
        result = await cycle.run_cycle(
            cycle.enabled(self._steps.steps, self.settings),
            names,
            clock=self._clock,
            dry_run=dry_run,
            keep_going=lambda: not self._stop.is_set(),
            on_start=started,
            on_end=ended,
            into=self.cycle_result,
        )
        if not dry_run and "scan" in names:
            await self._hints(result)
        return result

    async def _hints(self, result: cycle.CycleResult) -> None:
        """Say once what a default that is off keeps from an agent here (``daemon.service.hints``)."""
        if self.store is None:
            return
        try:
            hints = await off_hints(self.store, self.settings, now=self._clock.now())
        except Exception as exc:  # a hint never fails a cycle
            log.warning("hint_failed", error=type(exc).__name__)
            return
        for hint in hints:
            result.hints.append(hint)
            log.info("agent_gets_no_memory", hint=hint)  # the daemon's log; `run --once` prints it

    async def _record(self, result: cycle.StepResult) -> None:
        if self.store is None:
            return
        try:
            key = result.record_key(self.store.machine)
            await kv.put(self.store, key, result.to_json(), now=self._clock.now())
        except Exception as exc:
            log.warning("step_not_recorded", step=result.name, error=str(exc))

    def _on_files_changed(self) -> None:
        if self.schedule is None or self._stop.is_set():
            return
        delay_s = self._scan_gap_left_s()
        if self.schedule.bring_forward(delay_s):
            log.info("scan_brought_forward", reason="file_events", delay_s=round(delay_s, 1))

    def _step_deadline_s(self) -> float:
        return self.settings.schedule.step_deadline_minutes * 60

    def _check_overrun(self) -> None:
        """Log once a step that has run past its deadline (`memd status` shows it as stuck)."""
        step = self._current_step
        overrun = stuck_step(self._beat_status(), self._clock.now())
        if overrun is not None and step != self._overran_step:
            self._overran_step = step
            log.warning("step_overran", **asdict(overrun))

    def _beat_status(self) -> dict[str, Any]:
        return beat_status(
            state=self.state.value,
            step=self._current_step,
            step_started_at=self._step_started_at,
            step_deadline_s=self._step_deadline_s(),
            last_cycle=self._last_cycle,
        )

    async def _beat(self) -> None:
        assert self.store is not None
        now = self._clock.now()
        status = self._beat_status()
        await heartbeats.beat(
            self.store,
            instance=self.owner,
            host=self.host,
            pid=self.pid,
            version=__version__,
            started_at=self._started_at,
            now=now,
            status=status,
        )
        if self.state is DaemonState.STARTING:
            await heartbeats.prune(self.store, before=now - HEARTBEAT_RETENTION)

    async def stopped_within(self, seconds: float) -> bool:
        """Sleep ``seconds``, or less when a stop is asked for (then True)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)
        return self._stop.is_set()

    # For the one-shot mode (``daemon.service.once``) ------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def steps(self) -> cycle.StepSet:
        return self._steps

    @property
    def stop_requested(self) -> asyncio.Event:
        return self._stop

    def adopt_work(self, work: Awaitable[cycle.CycleResult]) -> asyncio.Future[cycle.CycleResult]:
        """Run ``work`` as the daemon's worker: a stop drains it as it drains the cycle loop."""
        task = asyncio.ensure_future(work)
        task.set_name("worker")
        self._tasks.add(task)
        return task

    def forget_tasks(self) -> None:
        self._tasks.clear()

    # Helpers ----------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def signals(self, install: bool, *, reload: bool) -> Iterator[None]:
        """SIGTERM and SIGINT ask for a stop (twice: at once), SIGHUP for a reload.

        The stop signals get a plain ``signal.signal`` handler rather than the event loop's: it runs
        even while the loop is blocked, arms the ``HardStop`` and hands the request to the loop."""
        loop = asyncio.get_running_loop()
        stops = (signal.SIGTERM, signal.SIGINT)
        previous: dict[int, Any] = {}

        def on_stop_signal(signum: int, frame: FrameType | None) -> None:
            again, self._signalled = self._signalled, True
            timeout_s = self.settings.schedule.shutdown_timeout_s
            self.hard_stop.arm(STOP_GRACE_S if again else timeout_s + STOP_GRACE_S)
            loop.call_soon_threadsafe(self._stop_signalled, again)

        with contextlib.ExitStack() as stack:
            if install:
                stack.enter_context(_wakes(loop))
                for sig in stops:
                    previous[sig] = signal.signal(sig, on_stop_signal)
                if reload:
                    loop.add_signal_handler(signal.SIGHUP, self.request_reload)
            try:
                yield
            finally:
                if install:
                    for signum, handler in previous.items():
                        signal.signal(signum, handler)
                    if reload:
                        loop.remove_signal_handler(signal.SIGHUP)

    def _stop_signalled(self, again: bool) -> None:
        step = self._current_step
        self.request_stop()
        if self.on_interrupt is not None:
            wait_s = 0.0 if again else self.settings.schedule.shutdown_timeout_s
            self.on_interrupt(Interrupt(step, wait_s, again))

    def _roots(self) -> list[Any]:
        return watched_roots(self.settings)

    def _status_line(self) -> str:
        if self._current_step is not None:
            return f"{self._current_step}..."
        if self._last_cycle is None:
            return "started; first scan due"
        return f"idle; last cycle {self._last_cycle}"

    def transition(self, state: DaemonState) -> None:
        if state is self.state:
            return
        log.info("daemon_state", state=state.value, previous=self.state.value)
        self.state = state
