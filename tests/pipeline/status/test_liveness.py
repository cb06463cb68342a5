"""The one health rule: from a daemon's last heartbeat to running, stuck, dead, crashed or stopped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pipeline.status.liveness import HEARTBEAT_INTERVAL_S, HEARTBEAT_STALE_S, beat_status, health
from pipeline.vocabulary import DaemonState, Health

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def status(state: DaemonState = DaemonState.RUNNING, *, step_for_s: float | None = None) -> object:
    return beat_status(
        state=state,
        step="extract" if step_for_s is not None else None,
        step_started_at=NOW - timedelta(seconds=step_for_s or 0),
        step_deadline_s=60.0,
        last_cycle=None,
    )


def test_a_heartbeat_missed_for_several_periods_is_stuck() -> None:
    assert HEARTBEAT_STALE_S > 2 * HEARTBEAT_INTERVAL_S  # one late beat is not a stuck daemon
    fresh = health(status(), stopped=False, pid_alive=True, age_s=HEARTBEAT_STALE_S, now=NOW)
    stale = health(status(), stopped=False, pid_alive=True, age_s=HEARTBEAT_STALE_S + 1, now=NOW)
    elsewhere = health(status(), stopped=False, pid_alive=None, age_s=HEARTBEAT_STALE_S + 1, now=NOW)
    assert (fresh, stale, elsewhere) == ((Health.RUNNING, None), (Health.STUCK, None), (Health.STUCK, None))


def test_a_step_past_its_deadline_is_stuck_and_named() -> None:
    state, overrun = health(status(step_for_s=61), stopped=False, pid_alive=True, age_s=1, now=NOW)
    assert state is Health.STUCK
    assert overrun is not None
    assert (overrun.step, overrun.running_s, overrun.deadline_s) == ("extract", 61.0, 60.0)


def test_a_stopped_daemon_says_how_it_stopped_and_a_gone_one_is_dead() -> None:
    crashed = health(status(DaemonState.CRASHED), stopped=True, pid_alive=None, age_s=500, now=NOW)
    stopped = health(status(DaemonState.STOPPED), stopped=True, pid_alive=None, age_s=500, now=NOW)
    dead = health(status(), stopped=False, pid_alive=False, age_s=1, now=NOW)
    assert (crashed[0], stopped[0], dead[0]) == (Health.CRASHED, Health.STOPPED, Health.DEAD)
