"""What the daemon writes about itself for `memd status`, and the rules that judge its health.

The daemon beats every ``HEARTBEAT_INTERVAL_S``; a heartbeat older than ``HEARTBEAT_STALE_S``
(``STALE_BEATS`` missed beats) means it makes no progress. ``health`` is the whole rule.

The daemon's heartbeat carries a small JSON status (``beat_status``): its state, the step in
progress, when that step started and its deadline (``[schedule] step_deadline_minutes``, as the
daemon had it). `memd status` calls the daemon stuck when that step has run past its deadline
(``stuck_step``), whatever the heartbeat's age: a step waiting on a thread that never returns leaves
the event loop, and so the heartbeat, running. ``memd run --once`` leaves a record of itself in the
store's kv under ``LAST_ONCE_KEY`` (``once_record``). Standard library only: `memd status` reads it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.clock import parse_time
from pipeline.frozen import frozen_by_position
from pipeline.store.read.values import iso
from pipeline.vocabulary import DaemonState, Health

HEARTBEAT_INTERVAL_S = 15.0
"""How often the daemon beats."""
STALE_BEATS = 6
HEARTBEAT_STALE_S = HEARTBEAT_INTERVAL_S * STALE_BEATS
"""A heartbeat older than this (``STALE_BEATS`` beats missed) means the daemon makes no progress."""
LAST_ONCE_KEY = "last_once"
"""``kv[LAST_ONCE_KEY]``: the last ``memd run --once`` (pid, host, started, finished, its summary)."""


def beat_status(
    *,
    state: str,
    step: str | None,
    step_started_at: datetime | None,
    step_deadline_s: float | None,
    last_cycle: str | None,
) -> dict[str, Any]:
    """The heartbeat's status JSON."""
    return {
        "state": state,
        "step": step,
        "step_started_at": iso(step_started_at) if step is not None else None,
        "step_deadline_s": step_deadline_s if step is not None else None,
        "last_cycle": last_cycle,
    }


@frozen_by_position
class Overrun:
    """A step that has run past its deadline: its name, since when, for how long, its deadline."""

    step: str
    started_at: str | None
    running_s: float
    deadline_s: float


def stuck_step(status: Any, now: datetime) -> Overrun | None:
    """The step in progress when it has run past its deadline."""
    if not isinstance(status, dict) or not status.get("step"):
        return None
    started = parse_time(status.get("step_started_at"))
    deadline_s = status.get("step_deadline_s")
    if started is None or not isinstance(deadline_s, int | float):
        return None
    running_s = (now - started).total_seconds()
    if running_s <= deadline_s:
        return None
    return Overrun(str(status["step"]), iso(started), round(running_s, 1), deadline_s)


def health(
    status: Any, *, stopped: bool, pid_alive: bool | None, age_s: float | None, now: datetime
) -> tuple[Health, Overrun | None]:
    """A daemon's health from its last heartbeat: its ``status`` JSON, whether it recorded a stop,
    whether its process is alive (None: another machine's, which cannot be asked) and the
    heartbeat's age; with the step that overran its deadline when that is why it is stuck."""
    if stopped:
        crashed = isinstance(status, dict) and status.get("state") == DaemonState.CRASHED
        return (Health.CRASHED if crashed else Health.STOPPED), None
    if pid_alive is False:
        return Health.DEAD, None
    if age_s is not None and age_s > HEARTBEAT_STALE_S:
        return Health.STUCK, None
    if (overrun := stuck_step(status, now)) is not None:
        return Health.STUCK, overrun
    return Health.RUNNING, None


def once_record(
    *,
    pid: int,
    host: str,
    started_at: datetime,
    finished_at: datetime | None = None,
    summary: str | None = None,
) -> dict[str, Any]:
    """``kv[LAST_ONCE_KEY]``: written when ``memd run --once`` starts, and again when it ends."""
    return {
        "pid": pid,
        "host": host,
        "started_at": iso(started_at),
        "finished_at": iso(finished_at),
        "summary": summary,
    }
