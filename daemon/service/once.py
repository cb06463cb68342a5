"""`memd run --once`: the daemon's parts for one cycle, then exit.

``await run_once(daemon, ...)`` opens the store and takes the instance as the daemon does when it
starts (``Daemon.open``), runs every step once (with ``wait``: the batches the extract step left open
are polled until none is or the wait is over, then the cycle finishes), records when it ran and how it
went for `memd status` (``LAST_ONCE_KEY``), and releases everything. A stop signal is told to
``on_interrupt`` at once (``Interrupt``: the step in flight, how long it may take); the step in flight
gets the shutdown timeout, and the result names the steps the stop kept from running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from daemon.service import cycle
from daemon.service.lifecycle import Daemon, Interrupt
from pipeline.status.liveness import LAST_ONCE_KEY, once_record
from pipeline.store import kv
from pipeline.store.read.keys import machine_key
from pipeline.vocabulary import DaemonState

log = structlog.get_logger(__name__)

OnStart = Callable[[str], object]
OnEnd = Callable[[cycle.StepResult], object]


@dataclass(frozen=True)
class BatchWait:
    """`memd run --once --wait`: after a cycle that left Message Batches open, poll them every
    ``poll_s`` (through phase 1, which collects what ended) for up to ``timeout_s``, then finish the
    cycle. ``on_poll(batches, sessions, waited_s)`` is told each time some are still pending."""

    timeout_s: float
    poll_s: float = 30.0
    on_poll: Callable[[int, int, float], object] | None = None


def pending_of(result: cycle.CycleResult) -> tuple[int, int]:
    """(batches, sessions) the cycle's last extract step left pending in Message Batches."""
    for step in reversed(result.results):
        if step.name == "extract":
            report = step.report
            if not isinstance(report, cycle.LeavesBatches) or report.batches_pending <= 0:
                return (0, 0)
            return (report.batches_pending, report.sessions_pending)
    return (0, 0)


async def run_once(
    daemon: Daemon,
    *,
    dry_run: bool = False,
    on_start: OnStart | None = None,
    on_end: OnEnd | None = None,
    on_interrupt: Callable[[Interrupt], object] | None = None,
    install_signals: bool = True,
    wait: BatchWait | None = None,
) -> cycle.CycleResult:
    """Open the store, take the instance, run every step once, release. Startup errors raise.
    A stop signal is told to ``on_interrupt`` at once; the result names the steps it kept from running.
    With ``wait``, batches the extract step left open are waited for before consolidating."""
    daemon.on_interrupt = on_interrupt
    daemon.transition(DaemonState.STARTING)
    with daemon.signals(install_signals, reload=False):
        return await _once(daemon, dry_run, on_start, on_end, None if dry_run else wait)


async def _once(
    daemon: Daemon, dry_run: bool, on_start: OnStart | None, on_end: OnEnd | None, wait: BatchWait | None
) -> cycle.CycleResult:
    try:
        await daemon.open()
        daemon.transition(DaemonState.RUNNING)
        started_at = daemon.clock.now()
        if not dry_run:
            await _record(daemon, started_at)
        work = daemon.adopt_work(
            daemon.run_cycle(list(cycle.STEP_ORDER), dry_run=dry_run, on_start=on_start, on_end=on_end)
            if wait is None
            else _cycle_waiting(daemon, wait, on_start=on_start, on_end=on_end)
        )
        stop = asyncio.ensure_future(daemon.stop_requested.wait())
        either: set[asyncio.Future[Any]] = {work, stop}
        await asyncio.wait(either, return_when="FIRST_COMPLETED")
        stop.cancel()
        if not work.done():
            daemon.transition(DaemonState.STOPPING)
            await daemon.drain()
        if work.done() and not work.cancelled():
            work.result()  # a step's bug that escaped run_step raises here, as before
        if not dry_run:
            await _record(daemon, started_at, finished=True)
        return daemon.cycle_result
    finally:
        daemon.forget_tasks()
        await daemon.release()
        daemon.transition(DaemonState.STOPPED)


async def _cycle_waiting(
    daemon: Daemon, wait: BatchWait, *, on_start: OnStart | None, on_end: OnEnd | None
) -> cycle.CycleResult:
    """Scan and extract; while batches are pending, poll them (an extract step, which collects
    what ended) until none is or ``wait.timeout_s`` has passed; then consolidate and publish.
    The result holds each step once (extract: its last run)."""
    head = [n for n in cycle.STEP_ORDER if n in ("scan", "extract")]
    steps = cycle.enabled(daemon.steps.steps, daemon.settings)
    tail = [n for n in cycle.STEP_ORDER if n not in head and n in steps]
    whole = await daemon.run_cycle(head, dry_run=False, on_start=on_start, on_end=on_end)
    clock = daemon.clock
    waited_from = clock.monotonic()
    batches, sessions = pending_of(whole)
    while batches and not daemon.stop_requested.is_set() and not whole.failures:
        waited_s = clock.monotonic() - waited_from
        if wait.on_poll is not None:
            wait.on_poll(batches, sessions, waited_s)
        left_s = wait.timeout_s - waited_s
        if left_s <= 0 or await daemon.stopped_within(min(wait.poll_s, left_s)):
            break
        poll = await daemon.run_cycle(["extract"], dry_run=False)
        whole.results = [r for r in whole.results if r.name != "extract"] + poll.results
        whole.not_run = poll.not_run
        batches, sessions = pending_of(whole)
        if (not batches or whole.failures) and on_end is not None and poll.results:
            on_end(poll.results[-1])  # the extract that collected them (or failed), as its own line
    daemon.cycle_result = whole
    if daemon.stop_requested.is_set():
        whole.not_run = [*whole.not_run, *tail]
        return whole
    return await daemon.run_cycle(tail, dry_run=False, on_start=on_start, on_end=on_end, into=whole)


async def _record(daemon: Daemon, started_at: datetime, *, finished: bool = False) -> None:
    """``memd run --once`` leaves a record for `memd status`: when it ran, and how it went."""
    store = daemon.store
    if store is None:
        return
    record = once_record(
        pid=daemon.pid,
        host=daemon.host,
        started_at=started_at,
        finished_at=daemon.clock.now() if finished else None,
        summary=daemon.cycle_result.summary() if finished else None,
    )
    try:
        await kv.put(store, machine_key(LAST_ONCE_KEY, store.machine), record, now=daemon.clock.now())
    except Exception as exc:
        log.warning("once_not_recorded", error=str(exc))
