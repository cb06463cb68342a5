"""The daemon's timers: the only module that imports APScheduler.

An ``AsyncIOScheduler`` with its in-memory job store, rebuilt from the settings at each start. Its
jobs only *request* work (``request("scan")``); the work runs in tasks the daemon owns, so a
scheduler shutdown, which cancels running coroutine jobs, never interrupts a git commit. Every job
coalesces missed runs into one, never overlaps itself and runs however late it is (after a laptop
sleep, say): ``coalesce=True, max_instances=1, misfire_grace_time=None``.

APScheduler reads the wall clock; nothing here takes the injected clock, so tests of this module
check what is scheduled rather than waiting for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler

JOB_DEFAULTS = {"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
SCAN_JOB = "scan"
SYNC_JOB = "sync"


class Schedule:
    """Periodic scans (each one followed by the rest of the cycle), brought forward on demand."""

    def __init__(
        self, request: Callable[[str], None], *, scan_interval_s: float, sync_interval_s: float | None = None
    ) -> None:
        self._request = request
        self._scan_interval_s = scan_interval_s
        self._sync_interval_s = sync_interval_s
        """``[sync] interval_minutes`` in seconds while a remote is configured, else None: no sync job."""
        self._scheduler = AsyncIOScheduler(timezone=UTC, job_defaults=dict(JOB_DEFAULTS))

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    def start(self, *, first_scan_delay_s: float = 0.0) -> None:
        """Start inside the running event loop; the first scan runs after ``first_scan_delay_s``."""
        self._scheduler.add_job(
            self._fire,
            "interval",
            seconds=self._scan_interval_s,
            args=[SCAN_JOB],
            id=SCAN_JOB,
            name="scan, then extract, consolidate and publish",
            replace_existing=True,
            next_run_time=_wall_now() + timedelta(seconds=first_scan_delay_s),
        )
        self._set_sync_job()
        self._scheduler.start()

    def _set_sync_job(self) -> None:
        """The periodic fetch and merge (``sync``, then publish), on ``[sync] interval_minutes``."""
        if self._sync_interval_s is None:
            if self._scheduler.get_job(SYNC_JOB) is not None:
                self._scheduler.remove_job(SYNC_JOB)
            return
        self._scheduler.add_job(
            self._fire,
            "interval",
            seconds=self._sync_interval_s,
            args=[SYNC_JOB],
            id=SYNC_JOB,
            name="sync the memory repository with its remote, then publish",
            replace_existing=True,
            next_run_time=_wall_now() + timedelta(seconds=self._sync_interval_s),
        )

    def job_options(self, job_id: str = SCAN_JOB) -> dict[str, object]:
        """How a job is configured (for tests and for `memd status` debugging)."""
        job = self._scheduler.get_job(job_id)
        if job is None:
            return {}
        return {
            "coalesce": job.coalesce,
            "max_instances": job.max_instances,
            "misfire_grace_time": job.misfire_grace_time,
            "interval_s": job.trigger.interval.total_seconds(),
        }

    def next_run(self, job_id: str = SCAN_JOB) -> datetime | None:
        job = self._scheduler.get_job(job_id)
        return None if job is None else job.next_run_time

    def bring_forward(self, delay_s: float, job_id: str = SCAN_JOB) -> bool:
        """Run ``job_id`` within ``delay_s`` seconds unless it already runs sooner; True if moved.
        The periodic cadence continues from that run."""
        job = self._scheduler.get_job(job_id)
        if job is None:
            return False
        target = _wall_now() + timedelta(seconds=max(0.0, delay_s))
        if job.next_run_time is not None and job.next_run_time <= target:
            return False
        job.modify(next_run_time=target)  # wakes the scheduler, which re-arms its timer
        return True

    def reconfigure(self, *, scan_interval_s: float, sync_interval_s: float | None = None) -> None:
        """Apply new intervals (after a settings reload); the next scan (sync) is one interval away."""
        if sync_interval_s != self._sync_interval_s:
            self._sync_interval_s = sync_interval_s
            if self._scheduler.running or self._scheduler.get_job(SCAN_JOB) is not None:
                self._set_sync_job()
        if scan_interval_s == self._scan_interval_s:
            return
        self._scan_interval_s = scan_interval_s
        if self._scheduler.get_job(SCAN_JOB) is not None:
            self._scheduler.reschedule_job(SCAN_JOB, trigger="interval", seconds=scan_interval_s)

    def pause(self) -> None:
        """No new triggers (the first thing a shutdown does)."""
        if self._scheduler.running:
            self._scheduler.pause()

    async def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
            await asyncio.sleep(0)  # AsyncIOScheduler.shutdown is itself scheduled on the loop

    async def _fire(self, job_id: str) -> None:
        self._request(job_id)


def _wall_now() -> datetime:
    return datetime.now(UTC)
