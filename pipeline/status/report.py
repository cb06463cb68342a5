"""`memd status`'s report as types: the domain's own records where it has them (the sync state is
``SyncState``), else one frozen record (``pipeline.status.record``, a dataclass to type checkers) per
section, from which the JSON (``as_json``), the terminal view (``daemon.cli.status``)
and the page's overview are rendered.

A field's name is its JSON key. A field declared ``= omitted()`` is left out of the JSON while it is
None (a stopped daemon has no uptime). A section that could not be read is ``Unreadable``, shown
as ``{"error": ...}``. Standard library only.
"""

from dataclasses import fields as dataclass_fields
from dataclasses import is_dataclass
from enum import Enum
from typing import Any

from pipeline.status.liveness import Overrun
from pipeline.status.record import fields, is_record, omitted, record
from pipeline.sync.state import SyncState
from pipeline.vocabulary import Health


def as_json(value: Any) -> Any:
    """The report (or any part of it) as JSON data: records and dataclasses become objects, in
    field order."""
    if is_record(value):
        out: dict[str, Any] = {}
        for f in fields(value):
            item = getattr(value, f.name)
            if item is None and f.omit_none:
                continue
            out[f.name] = as_json(item)
        return out
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_json(getattr(value, f.name)) for f in dataclass_fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    return value


@record
class Unreadable:
    """A section the store could not give; the others still show."""

    error: str


@record
class DaemonView:
    """One daemon's last heartbeat, and its health."""

    machine: str | None
    pid: int
    host: str
    version: str
    started_at: str | None
    heartbeat_at: str | None
    heartbeat_age_s: float | None
    step: str | None
    last_cycle: str | None
    running: bool
    state: Health
    this_machine: bool | None = omitted()
    """Whether it is this machine's (left out of the report's ``daemon``, which is)."""
    stopped_at: str | None = omitted()
    stuck_step: Overrun | None = omitted()
    uptime_s: float | None = omitted()


@record
class NoDaemon:
    """No heartbeat of this machine's daemon (or no store to read one from)."""

    state: Health
    running: bool = False


@record
class NextIdle:
    """The next session of this machine to become idle: which, and when."""

    source: str
    session_id: str | None
    project: str | None
    at: str | None
    in_s: float | None


@record
class TranscriptFailure:
    """A session that could not be read or extracted."""

    source: str
    session_id: str | None
    path: str
    state: str
    reason: str | None


@record
class Transcripts:
    """This machine's sessions, counted by state and by source."""

    total: int
    by_state: dict[str, int]
    by_source: dict[str, dict[str, int]]
    next_idle: NextIdle | None
    failures: list[TranscriptFailure]


@record
class RunView:
    """A step's last run as the daemon recorded it (``report``: the step's own summary)."""

    at: str | None
    outcome: str | None
    duration_s: float | None
    error: str | None
    report: Any


@record
class PhaseRun(RunView):
    """A phase's last run, with what its model calls cost (None: its times were not recorded)."""

    calls: int | None = omitted()
    tokens: int | None = omitted()
    cost_usd: float | None = omitted()
    sessions: int | None = omitted()
    """Phase 1: the sessions its calls were for."""
    scopes: int | None = omitted()
    """Phase 2: the scopes its calls were for."""


@record
class LastCheck:
    """The last time a step found nothing to do, when more recent than its last run."""

    at: str | None
    reason: str | None
    outcome: str = "nothing to do"


@record
class Failure:
    """A session, a job or a consolidation run that failed."""

    reason: str | None
    at: str | None
    session_id: str | None = omitted()
    source: str | None = omitted()
    job: str | None = omitted()
    scope: str | None = omitted()
    run: str | None = omitted()


@record
class Phase1:
    """Phase 1: its last run, its recent failures, its last check."""

    last_run: PhaseRun | None
    failures: list[Failure]
    last_check: LastCheck | None


@record
class RecentRun:
    """One of the last consolidation runs."""

    scope: str
    run: str
    outcome: str | None
    at: str | None
    commit: str | None
    duplicates_found: int | None = omitted()
    """Duplicate topics the run's checks found (``pipeline.checks.duplicates``); None: none."""
    duplicates_fixed: int | None = omitted()
    """Of those, how many its repair turn took away."""


@record
class Phase2:
    """Phase 2: its last run, the recent runs and failures, its last check."""

    last_run: PhaseRun | None
    recent: list[RecentRun]
    failures: list[Failure]
    last_check: LastCheck | None


@record
class BatchView:
    """One Message Batch not yet collected."""

    batch_id: str
    phase: str
    state: str
    submitted_at: str | None
    age_s: float | None
    sessions: int
    session_ids: list[str]


@record
class Batches:
    """This machine's Message Batches submitted and not yet collected."""

    pending: int
    sessions: int
    oldest_at: str | None
    oldest_age_s: float | None
    batches: list[BatchView]


@record
class RateLimit:
    """The gate as phases 1 and 2 see it."""

    remaining_percent: float | None
    gated: bool
    reason: str | None
    reset_at: str | None
    observed_at: str | None


@record
class Budget:
    """Today's tokens and cost against ``[llm] daily_token_budget`` and ``daily_budget_usd``, and
    this month's cost (UTC)."""

    used_today_tokens: int
    cost_today_usd: float
    daily_token_budget: int | None
    exhausted: bool
    cost_month_usd: float = 0.0
    daily_budget_usd: float | None = None


@record
class Model:
    """The model endpoints: ``[llm] local_only``, and what memd learned about each endpoint."""

    local_only: bool
    endpoints: dict[str, str]


@record
class ScopeView:
    """A scope's last successful consolidation."""

    scope: str
    last_success_at: str | None
    last_commit: str | None


@record
class StaleTopic:
    """A topic published marked stale: its id (``<scope>/<file>``), why, since when."""

    topic: str
    reason: str
    since: str | None
    folders: list[str]
    """The project folders of the topic's scope (``pipeline.projects.scopes``), shown beside its id."""


@record
class Memory:
    """The memory repository: its HEAD, its scopes, the runs waiting in the inbox."""

    directory: str
    exists: bool
    head: str | None
    branch: str | None
    scopes: list[ScopeView]
    pending_inbox_runs: int
    stale: list[StaleTopic] | None = omitted()
    """Topics this machine last published marked stale (a cited file changed or is gone)."""


@record
class WholeRun:
    """A publish step that did nothing as a whole (nothing consolidated yet, say), and why."""

    outcome: str | None
    reason: str | None


@record
class PublishRun(RunView):
    """The last publish step, with its targets' outcomes."""

    results: dict[str, int] | None = None
    """Its targets' outcomes, counted."""
    whole_run: WholeRun | None = None


@record
class TargetView:
    """One (target, scope) this machine publishes."""

    target: str
    scope: str
    path: str | None
    published_at: str | None
    outcome: str | None
    reason: str | None
    republished_at: str | None
    republish_reason: str | None
    folders: list[str]
    """The project folders whose sessions map to the scope (``pipeline.projects.scopes``)."""


@record
class Publish:
    """The last publish step and every target this machine publishes."""

    last_run: PublishRun | RunView | None
    """``RunView``: a run that recorded no results."""
    targets: list[TargetView]


@record
class MemoryUse:
    """A scope's live extracts: how many, how many were ever used, their use counts, last use."""

    live: int = 0
    used: int = 0
    use_count: int = 0
    last_used_at: str | None = None


@record
class ScopeUsage:
    """A published scope's hit rate: how many later sessions read its memory."""

    scope: str
    since: str | None
    hit_rate: float | None
    sessions: int
    sessions_reading: int
    sessions_given: int
    uses: int
    last_used_at: str | None
    topics_published: int
    topics_read: int
    memories: MemoryUse
    folders: list[str]
    """The project folders whose sessions map to the scope (``pipeline.projects.scopes``)."""
    helped: int = 0
    misled: int = 0
    """How often agents said one of the scope's topics helped or misled them in the window
    (`memd mcp`'s ``memory_feedback``)."""


@record
class Usage:
    """Memory use per scope over the last ``window_days``."""

    window_days: int
    scopes: list[ScopeUsage]


@record
class Flagged:
    """A topic an agent called wrong or stale (`memd mcp`'s ``memory_feedback``), not yet given to a
    consolidation."""

    id: str
    verdict: str
    note: str | None
    at: str | None
    folders: list[str]
    """The project folders of the topic's scope (``pipeline.projects.scopes``), shown beside its id."""


@record
class LeaseView:
    """A lease held in the store (the instance, a scope being consolidated)."""

    name: str
    machine: str | None
    host: str | None
    pid: int | None
    since: str | None
    expires_at: str | None
    expired: bool


@record
class OnceView:
    """This machine's last ``memd run --once``."""

    pid: Any
    host: Any
    started_at: Any
    finished_at: Any
    summary: Any
    running: bool


@record
class Team:
    """What `memd status` has to say about the machines sharing this store: one sentence each (two
    hosts with one machine id; memory that does not travel without a ``[sync] remote``)."""

    machine: str
    """This installation's machine key in the store."""
    notes: list[str]


@record
class TargetState:
    """One ``[publish]`` target of an agent: ``on``, ``off (set [publish] <key> = true)`` or ``not
    installed`` (the agent's own folder is absent here)."""

    target: str
    state: str


@record
class AgentView:
    """An agent memd knows, whether it is installed here, and what memd publishes for it."""

    name: str
    label: str
    home: str
    installed: bool
    targets: list[TargetState]


@record
class Sections:
    """Everything read from the store; each section on its own (``Unreadable`` when it failed)."""

    daemon: DaemonView | NoDaemon | Unreadable
    machines: list[DaemonView] | Unreadable
    transcripts: Transcripts | Unreadable
    phase1: Phase1 | Unreadable
    phase2: Phase2 | Unreadable
    batches: Batches | Unreadable
    rate_limit: RateLimit | Unreadable
    budget: Budget | Unreadable
    memory: Memory | Unreadable
    publish: Publish | Unreadable
    sync: SyncState | Unreadable | None
    """This machine's last sync, the record the sync keeps (``pipeline.sync.state``)."""
    usage: Usage | Unreadable
    leases: list[LeaseView] | Unreadable
    last_once: OnceView | Unreadable | None
    last_scan: RunView | None
    team: Team | Unreadable | None = None
    flagged: list[Flagged] | Unreadable | None = None
    model: Model | Unreadable | None = None
    agents: list[AgentView] | Unreadable | None = None
    """Every agent memd knows, with each of its publish targets on, off or not installed."""


@record
class StatusReport:
    """`memd status`'s whole report: where it read, what it read (``sections``, None when the
    store could not be opened, then ``error`` says why) and whether the daemon is healthy."""

    version: str
    checked_at: str
    config: str
    state_db: str
    daemon: DaemonView | NoDaemon | Unreadable
    sections: Sections | None
    error: str | None = None

    @property
    def state(self) -> Health | None:
        return None if isinstance(self.daemon, Unreadable) else self.daemon.state

    @property
    def healthy(self) -> bool:
        return self.state == Health.RUNNING

    def json(self) -> dict[str, Any]:
        """The ``--json`` report: the head, then every section, then ``healthy``."""
        out: dict[str, Any] = {
            "version": self.version,
            "checked_at": self.checked_at,
            "config": self.config,
            "state_db": self.state_db,
        }
        if self.error is not None:
            out["error"] = self.error
        out["daemon"] = as_json(self.daemon)
        if self.sections is not None:
            out.update({k: v for k, v in as_json(self.sections).items() if k != "daemon"})
        out["healthy"] = self.healthy
        return out
