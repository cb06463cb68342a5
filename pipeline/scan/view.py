"""What a scan reports: the sessions by source and state, the notable ones, the next to go idle.

Standard library only, so `memd scan` can show the store's view after its quick check
(``pipeline.scan.probe``) without loading SQLAlchemy: ``read_view`` reads them through the read API
(``pipeline.store.read.sessions``) on whichever reader it is given, ``sqlite3`` after the quick
check, the open store after a full scan.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.frozen import frozen_by_position
from pipeline.machine import UNNAMED
from pipeline.store.read.rows import Rows
from pipeline.store.read.sessions import SessionRecord, next_idle, sessions, state_counts
from pipeline.vocabulary import TRANSCRIPT_NOTABLE

__all__ = ["ScanReport", "ScanSummary", "SessionRecord", "read_view", "sessions_as_json", "summarize_scan"]


@dataclass
class ScanReport:
    sessions: list[SessionRecord]
    """Every session; filled only when the scan was asked to ``collect_sessions``."""
    changed_paths: set[str] = field(default_factory=set)
    files_seen: int = 0
    files_parsed: int = 0
    bytes_parsed: int = 0
    duration_s: float = 0.0
    enqueued: int = 0
    by_source: dict[str, dict[str, int]] = field(default_factory=dict)
    notable_sessions: list[SessionRecord] = field(default_factory=list)
    next_idle_session: SessionRecord | None = None

    def counts(self) -> dict[str, dict[str, int]]:
        """Sessions by source, then by state."""
        return self.by_source

    def notable(self) -> list[SessionRecord]:
        """What `memd scan` tables by default: eligible, failed, unreadable or changed in this scan."""
        return self.notable_sessions

    def next_idle(self) -> SessionRecord | None:
        """The active session that will be idle first."""
        return self.next_idle_session


@frozen_by_position
class ScanSummary:
    """What a scan did, small enough to record every cycle (the full list of sessions stays in the store)."""

    files_seen: int
    files_parsed: int
    bytes_parsed: int
    enqueued: int
    sessions: dict[str, dict[str, int]]
    next_idle: str | None

    @property
    def failure(self) -> str | None:
        """What went wrong although the step ran to its end (``daemon.service.cycle.StepReport``): nothing."""
        return None

    @property
    def spend(self) -> tuple[int, float] | None:
        """A step's model tokens and dollars (``daemon.service.cycle.StepReport``): none spent here."""
        return None

    def summary(self) -> dict[str, Any]:
        """As the step's outcome is recorded (``daemon.service.cycle.StepReport``): its fields."""
        return dict(vars(self))


def summarize_scan(report: ScanReport) -> ScanSummary:
    nxt = report.next_idle()
    next_idle = None
    if nxt is not None and nxt.eligible_at is not None:
        next_idle = f"{nxt.source} {nxt.session_id} at {nxt.eligible_at.isoformat(timespec='minutes')}"
    return ScanSummary(
        files_seen=report.files_seen,
        files_parsed=report.files_parsed,
        bytes_parsed=report.bytes_parsed,
        enqueued=report.enqueued,
        sessions=report.counts(),
        next_idle=next_idle,
    )


def read_view(
    rows: Rows,
    report: ScanReport,
    *,
    notable_limit: int,
    collect_sessions: bool,
    machine: str = UNNAMED,
    changed: Iterable[str] = (),
) -> None:
    """Fill ``report``'s view of ``machine``'s sessions (counts, next idle, notable or all); the
    notable ones are those in a notable state and those at ``changed`` paths."""
    report.by_source = state_counts(rows, machine)
    report.next_idle_session = next_idle(rows, machine)
    if notable_limit:
        report.notable_sessions = sessions(
            rows, machine, states=TRANSCRIPT_NOTABLE, paths=changed, limit=notable_limit
        )
    if collect_sessions:
        report.sessions = sessions(rows, machine)


def sessions_as_json(sessions: Iterable[SessionRecord]) -> str:
    return json.dumps([s.as_json() for s in sessions], indent=2)
