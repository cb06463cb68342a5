"""The daemon's timers: periodic jobs on the event loop, one task, no scheduler library.

Each job (the scan, and the sync while a remote is configured) only *requests* work
(``request("scan")``); the work runs in tasks the daemon owns, so stopping the timers never
interrupts a git commit. A job runs however late it is (after a laptop sleep, say), never overlaps
itself (firing is a request, which the daemon merges with any pending one), and coalesces the runs
it missed into one: the next run after that is the first of its cadence still ahead.

Run times are read on the wall clock, as a person's "every 15 minutes" means; nothing here takes
the injected clock, so tests of this module check what is scheduled, or bring a run forward to now.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import structlog

log = structlog.get_logger(__name__)

SCAN_JOB = "scan"
SYNC_JOB = "sync"


class _Job:
    """A periodic job: its interval and when it runs next."""

    __slots__ = ("interval", "next_run")

    def __init__(self, interval_s: float, next_run: datetime) -> None:
        self.interval = timedelta(seconds=interval_s)
        self.next_run = next_run

    def ran(self, now: datetime) -> None:
        """After a run due at ``next_run``: the first run of the cadence after ``now`` (the runs
        missed meanwhile coalesced into the one that ran)."""
        missed = max(0, math.floor((now - self.next_run) / self.interval))
        self.next_run += self.interval * (missed + 1)


class Schedule:
    """Periodic scans (each one followed by the rest of the cycle), brought forward on demand."""

    def __init__(
        self, request: Callable[[str], None], *, scan_interval_s: float, sync_interval_s: float | None = None
    ) -> None:
        self._request = request
        self._scan_interval_s = scan_interval_s
        self._sync_interval_s = sync_interval_s
        """``[sync] interval_minutes`` in seconds while a remote is configured, else None: no sync job."""
        self._jobs: dict[str, _Job] = {}
        self._paused = False
        self._changed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Started and not shut down (paused included)."""
        return self._task is not None and not self._task.done()

    def start(self, *, first_scan_delay_s: float = 0.0) -> None:
        """Start inside the running event loop; the first scan runs after ``first_scan_delay_s``."""
        self._loop = asyncio.get_running_loop()
        self._jobs[SCAN_JOB] = _Job(
            self._scan_interval_s, _wall_now() + timedelta(seconds=first_scan_delay_s)
        )
        self._set_sync_job()
        self._task = self._loop.create_task(self._run(), name="schedule")

    def _set_sync_job(self) -> None:
        """The periodic fetch and merge (``sync``, then publish), on ``[sync] interval_minutes``."""
        if self._sync_interval_s is None:
            self._jobs.pop(SYNC_JOB, None)
        else:
            first = _wall_now() + timedelta(seconds=self._sync_interval_s)
            self._jobs[SYNC_JOB] = _Job(self._sync_interval_s, first)
        self._wake()

    def job_options(self, job_id: str = SCAN_JOB) -> dict[str, object]:
        """How a job is configured (for tests and debugging): its interval; {} when there is none."""
        job = self._jobs.get(job_id)
        return {} if job is None else {"interval_s": job.interval.total_seconds()}

    def next_run(self, job_id: str = SCAN_JOB) -> datetime | None:
        job = self._jobs.get(job_id)
        return None if job is None else job.next_run

    def bring_forward(self, delay_s: float, job_id: str = SCAN_JOB) -> bool:
        """Run ``job_id`` within ``delay_s`` seconds unless it already runs sooner; True if moved.
        The periodic cadence continues from that run."""
        job = self._jobs.get(job_id)
        if job is None:
            return False
        target = _wall_now() + timedelta(seconds=max(0.0, delay_s))
        if job.next_run <= target:
            return False
        job.next_run = target
        self._wake()
        return True

    def reconfigure(self, *, scan_interval_s: float, sync_interval_s: float | None = None) -> None:
        """Apply new intervals (after a settings reload); the next scan (sync) is one interval away."""
        if sync_interval_s != self._sync_interval_s:
            self._sync_interval_s = sync_interval_s
            if SCAN_JOB in self._jobs:
                self._set_sync_job()
        if scan_interval_s == self._scan_interval_s:
            return
        self._scan_interval_s = scan_interval_s
        if SCAN_JOB in self._jobs:
            self._jobs[SCAN_JOB] = _Job(scan_interval_s, _wall_now() + timedelta(seconds=scan_interval_s))
            self._wake()

    def pause(self) -> None:
        """No new triggers (the first thing a shutdown does)."""
        self._paused = True

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _wake(self) -> None:
        """The timer task looks at the jobs again (from any thread)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._changed.set)

    async def _run(self) -> None:
        """Sleep until the next job is due (or the jobs change), then request each job that is due."""
        while True:
            self._changed.clear()
            if not self._paused:
                now = _wall_now()
                for job_id, job in list(self._jobs.items()):
                    if job.next_run <= now:
                        job.ran(now)
                        try:
                            self._request(job_id)
                        except Exception as exc:  # the timers go on for the next run
                            log.error("schedule_request_failed", job=job_id, error=str(exc))
            due = min((job.next_run for job in self._jobs.values()), default=None)
            timer = None
            if due is not None and not self._paused:
                wait_s = max(0.0, (due - _wall_now()).total_seconds())
                timer = asyncio.get_running_loop().call_later(wait_s, self._changed.set)
            try:
                await self._changed.wait()
            finally:
                if timer is not None:
                    timer.cancel()


def _wall_now() -> datetime:
    return datetime.now(UTC)
