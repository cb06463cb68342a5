from __future__ import annotations

import asyncio

from daemon.service.schedule import SCAN_JOB, Schedule


async def test_jobs_coalesce_never_overlap_and_run_however_late() -> None:
    schedule = Schedule(lambda job: None, scan_interval_s=600)
    schedule.start(first_scan_delay_s=3600)
    try:
        assert schedule.job_options() == {
            "coalesce": True,
            "max_instances": 1,
            "misfire_grace_time": None,
            "interval_s": 600.0,
        }
    finally:
        await schedule.shutdown()
    assert not schedule.running


async def test_a_trigger_only_requests_work_and_can_be_brought_forward() -> None:
    fired = asyncio.Event()
    requested: list[str] = []

    def request(job: str) -> None:
        requested.append(job)
        fired.set()

    schedule = Schedule(request, scan_interval_s=600)
    schedule.start(first_scan_delay_s=3600)  # far away: nothing fires on its own during the test
    try:
        later = schedule.next_run()
        assert later is not None
        assert not schedule.bring_forward(7200)  # never moves a run later
        assert schedule.next_run() == later
        assert schedule.bring_forward(0)
        await asyncio.wait_for(fired.wait(), timeout=10)
        assert requested == [SCAN_JOB]
        # The periodic cadence continues from the brought-forward run.
        nxt = schedule.next_run()
        assert nxt is not None
        assert nxt < later
    finally:
        await schedule.shutdown()


async def test_reconfigure_changes_the_interval() -> None:
    schedule = Schedule(lambda job: None, scan_interval_s=600)
    schedule.start(first_scan_delay_s=3600)
    try:
        schedule.reconfigure(scan_interval_s=120)
        assert schedule.job_options()["interval_s"] == 120.0
    finally:
        await schedule.shutdown()


async def test_a_sync_job_runs_on_its_interval_only_while_a_remote_is_configured() -> None:
    from daemon.service.schedule import SYNC_JOB

    fired = asyncio.Event()
    requested: list[str] = []

    def request(job: str) -> None:
        requested.append(job)
        fired.set()

    schedule = Schedule(request, scan_interval_s=600)
    schedule.start(first_scan_delay_s=3600)
    try:
        assert schedule.job_options(SYNC_JOB) == {}  # no remote: no sync job
        schedule.reconfigure(scan_interval_s=600, sync_interval_s=900)  # a reload set [sync] remote
        assert schedule.job_options(SYNC_JOB)["interval_s"] == 900.0
        assert schedule.job_options(SYNC_JOB)["coalesce"] is True
        assert schedule.bring_forward(0, SYNC_JOB)
        await asyncio.wait_for(fired.wait(), timeout=10)
        assert requested == [SYNC_JOB]  # it asks for the sync step (and publish after it)
        schedule.reconfigure(scan_interval_s=600, sync_interval_s=None)
        assert schedule.job_options(SYNC_JOB) == {}
    finally:
        await schedule.shutdown()


def test_the_sync_job_chains_sync_then_publish() -> None:
    from daemon.service.lifecycle import chain_from

    assert chain_from("sync") == ["sync", "publish"]
