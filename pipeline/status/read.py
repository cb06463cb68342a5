"""What `memd status` and the page's overview report (``pipeline.status.report``), read through the read
API (``pipeline.store.read``: read-only ``sqlite3`` on SQLite, SQLAlchemy only for PostgreSQL).

Each rule is the one the daemon reads by: the gate (``pipeline.store.read.gate``), the open flags
(``pipeline.store.read.flags``), the stale topics, the pending review runs, the sync state
(``pipeline.sync.state.SyncState``, shown as it is), a daemon's health
(``pipeline.status.liveness.health``); the memory repository's HEAD comes from
``pipeline.status.git_refs``. Every section is read on its own: a section that fails is
``Unreadable`` and the others still show.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pipeline import roster, store_url
from pipeline.clock import parse_time
from pipeline.endpoint_facts import KV_ENDPOINTS, described
from pipeline.machine import host_id, known_id
from pipeline.ratelimit_rule import utc_day_start
from pipeline.status.agents import agent_views
from pipeline.status.flags import flagged
from pipeline.status.git_refs import git_head
from pipeline.status.liveness import LAST_ONCE_KEY, health
from pipeline.status.record import replace
from pipeline.status.report import (
    AgentView,
    Batches,
    BatchView,
    Budget,
    DaemonView,
    Failure,
    LastCheck,
    LeaseView,
    Memory,
    Model,
    NextIdle,
    NoDaemon,
    OnceView,
    Phase1,
    Phase2,
    PhaseRun,
    Publish,
    PublishRun,
    RateLimit,
    RecentRun,
    RunView,
    ScopeView,
    Sections,
    StaleTopic,
    StatusReport,
    TargetView,
    Team,
    TranscriptFailure,
    Transcripts,
    Unreadable,
    WholeRun,
)
from pipeline.status.usage import scope_folders, scope_of, usage
from pipeline.store.read.gate import GateState, gate
from pipeline.store.read.keys import (
    MACHINES_SQL,
    PERSON_VERDICT_KEY,
    RUNS_SQL,
    SKIPPED_SUFFIX,
    key_of_machine,
    kv_value,
    machine_key,
    run_name,
    runs_params,
    shown_scope,
    stale_topics,
)
from pipeline.store.read.rows import Rows
from pipeline.store.read.runs import (
    FAILED_JOBS_SQL,
    OPEN_BATCHES_SQL,
    PUBLICATIONS_SQL,
    RECENT_RUNS_SQL,
    SCOPES_SQL,
    Heartbeat,
    holders,
    newest_heartbeats,
    pending_batch_from_row,
    pending_review,
    run_failure,
    spend,
)
from pipeline.store.read.sessions import (
    EXTRACT_FAILURES_SQL,
    TRANSCRIPT_FAILURES_SQL,
    next_idle,
    state_counts,
)
from pipeline.store.read.values import iso, json_value
from pipeline.sync.state import SyncState
from pipeline.sync.state import read as read_sync
from pipeline.sync.urls import shown_url
from pipeline.team import NO_REMOTE
from pipeline.vocabulary import Health, JobKind

if TYPE_CHECKING:
    from pipeline.settings import Settings

T = TypeVar("T")

LIST_LIMIT = 5


# Reading ------------------------------------------------------------------------------------------


def collect(
    rows: Rows,
    settings: Settings,
    *,
    now: datetime,
    pid_alive: Callable[[int], bool],
    machine: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Sections:
    """Every section of the report. ``machine`` (default: the one recorded in the settings' state
    directory) is this machine: its daemon is the report's ``daemon``, every machine's is listed
    under ``machines``, and the transcripts and phase-1 failures are its own."""
    mine = machine or this_machine(rows, settings.paths.state_dir)
    found_runs = _section(lambda: _runs(rows, mine))
    runs = {} if isinstance(found_runs, Unreadable) else found_runs
    daemons = _section(lambda: _machines(rows, now, mine, pid_alive))
    return Sections(
        daemon=_daemon(daemons),
        machines=daemons,
        transcripts=_section(lambda: _transcripts(rows, now, mine)),
        phase1=_section(lambda: _phase1(rows, runs, mine)),
        phase2=_section(lambda: _phase2(rows, runs)),
        batches=_section(lambda: _batches(rows, now, mine)),
        rate_limit=_section(lambda: _rate_limit(rows, settings, now)),
        budget=_section(lambda: _budget(rows, settings, now)),
        memory=_section(lambda: _memory(rows, settings.paths.memory_dir, mine)),
        publish=_section(lambda: _publish(rows, runs.get("publish"), mine)),
        sync=_section(lambda: _sync(rows, settings, mine)),
        usage=_section(lambda: usage(rows, now)),
        leases=_section(lambda: _leases(rows, now)),
        last_once=_section(lambda: _last_once(rows, mine, pid_alive)),
        last_scan=_run_view(runs.get("scan")),
        team=_section(lambda: _team(rows, settings, mine, daemons)),
        flagged=_section(lambda: flagged(rows)),
        model=_section(lambda: Model(settings.llm.local_only, described(kv_value(rows, KV_ENDPOINTS)))),
        agents=_section(lambda: _agents(settings, os.environ if env is None else env)),
    )


def _agents(settings: Settings, env: Mapping[str, str]) -> list[AgentView]:
    """Every agent, with each ``[publish]`` target key's value and its configured transcripts root."""
    keys = dict.fromkeys(k for agent in roster.agents() for k in agent.target_keys())
    publish = {key: settings.publish.on(key) for key in keys}
    roots = {name: Path(settings.sources[name].root) for name in roster.names()}
    return agent_views(publish, env, roots)


def this_machine(rows: Rows, state_dir: Path) -> str:
    """This installation's machine key in the store (``pipeline.store.machines``): its id on the host
    the id was first seen on, the id and this host's on another."""
    return key_of_machine(_machine_rows(rows), known_id(state_dir), host_id(state_dir, create=False))


def _machine_rows(rows: Rows) -> list[dict[str, Any]]:
    """``machines``' rows; none in a store no memd of this version opened yet (the table comes with
    its migration, which `memd status` never runs)."""
    try:
        return rows.all(MACHINES_SQL)
    except Exception:  # sqlite3's or the PostgreSQL driver's "no such table"
        return []


def _team(rows: Rows, settings: Settings, mine: str, daemons: object) -> Team | None:
    """Two hosts sharing this machine id, and memory that does not travel between the machines of a
    shared store without a ``[sync] remote``; None when there is nothing to say."""
    found = _machine_rows(rows)
    me = next((r for r in found if r["key"] == mine), None)
    notes = []
    if me is not None:
        others = [r for r in found if r["machine_id"] == me["machine_id"] and r["key"] != mine]
        if others:
            hosts = ", ".join(f"{r['hostname']} (last seen {iso(r['seen_at'])})" for r in others)
            notes.append(
                f"two hosts share machine id {str(me['machine_id'])[:12]}: this one ({me['hostname']}) and "
                f"{hosts}; memd runs them as two machines (this one as {mine[:12]}...{mine[-6:]}), so neither "
                "takes over the other's daemon, transcripts or extractions. If one is a copy you no longer use "
                "(a cloned VM, a restored backup, a copied home), stop memd there"
            )
    verdict = kv_value(rows, PERSON_VERDICT_KEY + mine)  # a person is their keys (pipeline.team.people)
    if isinstance(verdict, dict) and isinstance(verdict.get("note"), str):
        notes.append(verdict["note"])
    several = len({r["key"] for r in found}) > 1 or (isinstance(daemons, list) and len(daemons) > 1)
    if several and not settings.sync.remote and store_url.backend(settings.paths.state_db) == "postgresql":
        notes.append(NO_REMOTE)
    return Team(machine=mine, notes=notes) if notes else None


def _section(read: Callable[[], T]) -> T | Unreadable:
    try:
        return read()
    except (sqlite3.Error, OSError, ValueError, KeyError, TypeError) as exc:
        return Unreadable(str(exc) or type(exc).__name__)
    except Exception as exc:  # a PostgreSQL driver error: still only this section
        return Unreadable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _daemon(daemons: list[DaemonView] | Unreadable) -> DaemonView | NoDaemon | Unreadable:
    """This machine's daemon (the report's health and exit status are its own)."""
    if isinstance(daemons, Unreadable):
        return daemons
    for view in daemons:
        if view.this_machine:
            return replace(view, this_machine=None)
    return NoDaemon(Health.NEVER_STARTED)


def _machines(rows: Rows, now: datetime, machine: str, pid_alive: Callable[[int], bool]) -> list[DaemonView]:
    """Every machine's daemon sharing this store (the newest heartbeat of each), this one first.
    Only this machine's pids can be asked about; another machine's daemon is judged by its
    heartbeat alone (``pipeline.status.liveness.health``)."""
    views = [_heartbeat_view(hb, now, machine, pid_alive) for hb in newest_heartbeats(rows)]
    return sorted(views, key=lambda v: not v.this_machine)


def _heartbeat_view(
    hb: Heartbeat, now: datetime, machine: str, pid_alive: Callable[[int], bool]
) -> DaemonView:
    beat_at, started_at, stopped_at, status = hb.beat_at, hb.started_at, hb.stopped_at, hb.status
    age_s = (now - beat_at).total_seconds() if beat_at else None
    local = (hb.machine or machine) == machine
    state, overrun = health(
        status,
        stopped=stopped_at is not None,
        pid_alive=pid_alive(hb.pid) if local and stopped_at is None else None,
        age_s=age_s,
        now=now,
    )
    running = state in (Health.RUNNING, Health.STUCK)
    return DaemonView(
        machine=hb.machine,
        this_machine=local,
        pid=hb.pid,
        host=hb.host,
        version=hb.version,
        started_at=iso(started_at),
        heartbeat_at=iso(beat_at),
        heartbeat_age_s=round(age_s, 1) if age_s is not None else None,
        step=status.get("step"),
        last_cycle=status.get("last_cycle"),
        running=running,
        state=state,
        stopped_at=iso(stopped_at),
        stuck_step=overrun,
        uptime_s=round((now - started_at).total_seconds(), 1) if running and started_at else None,
    )


def _last_once(rows: Rows, machine: str, pid_alive: Callable[[int], bool]) -> OnceView | None:
    """This machine's last ``memd run --once``: when it started and finished, its summary; still
    running, or gone without finishing."""
    record = kv_value(rows, machine_key(LAST_ONCE_KEY, machine))
    if not isinstance(record, dict):
        return None
    unfinished = record.get("finished_at") is None
    alive = unfinished and isinstance(record.get("pid"), int)
    return OnceView(
        pid=record.get("pid"),
        host=record.get("host"),
        started_at=record.get("started_at"),
        finished_at=record.get("finished_at"),
        summary=record.get("summary"),
        running=bool(alive and pid_alive(int(record["pid"]))),
    )


def _transcripts(rows: Rows, now: datetime, machine: str) -> Transcripts:
    by_source = state_counts(rows, machine)
    by_state: dict[str, int] = {}
    for states in by_source.values():
        for state, n in states.items():
            by_state[state] = by_state.get(state, 0) + n
    nxt = next_idle(rows, machine)
    soon = None
    if nxt is not None:
        at = nxt.eligible_at
        soon = NextIdle(
            source=nxt.source,
            session_id=nxt.session_id,
            project=nxt.project,
            at=iso(at),
            in_s=round((at - now).total_seconds(), 1) if at else None,
        )
    mine = {"machine": machine}
    failed = rows.all(TRANSCRIPT_FAILURES_SQL, {"limit": LIST_LIMIT, **mine})
    return Transcripts(
        total=sum(by_state.values()),
        by_state=dict(sorted(by_state.items())),
        by_source={k: dict(sorted(v.items())) for k, v in sorted(by_source.items())},
        next_idle=soon,
        failures=[
            TranscriptFailure(f["source"], f["session_id"], f["path"], f["state"], f["reason"])
            for f in failed
        ],
    )


def _runs(rows: Rows, machine: str) -> dict[str, dict[str, Any]]:
    """This machine's ``run.<step>`` (the last run that did something) and ``run.<step>.skipped``
    (the last check that found nothing to do), by ``<step>`` and ``<step>.skipped``."""
    found = rows.all(RUNS_SQL, runs_params(machine))
    return {run_name(r["key"], machine): v for r in found if isinstance(v := json_value(r["value"]), dict)}


def _run_view(run: dict[str, Any] | None) -> RunView | None:
    if not run:
        return None
    return RunView(**_run_fields(run))


def _run_fields(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "at": run.get("finished_at"),
        "outcome": run.get("outcome"),
        "duration_s": run.get("duration_s"),
        "error": run.get("error"),
        "report": run.get("report"),
    }


def _last_check(runs: dict[str, dict[str, Any]], step: str) -> LastCheck | None:
    """The last time ``step`` found nothing to do, when that is more recent than its last run."""
    skipped, ran = runs.get(f"{step}{SKIPPED_SUFFIX}"), runs.get(step)
    if not skipped:
        return None
    if ran and str(ran.get("finished_at", "")) >= str(skipped.get("finished_at", "")):
        return None
    report = skipped.get("report")
    reason = report.get("reason") if isinstance(report, dict) else None
    return LastCheck(at=skipped.get("finished_at"), reason=reason)


def _phase_run(rows: Rows, run: dict[str, Any] | None, unit: str) -> PhaseRun | None:
    """A phase's last run, with what its calls cost and for how many ``unit`` (sessions or scopes)."""
    if not run:
        return None
    start, end = parse_time(run.get("started_at")), parse_time(run.get("finished_at"))
    spent = spend(rows, start, end) if start and end else None
    items = spent.items if spent is not None else 0
    return PhaseRun(
        **_run_fields(run),
        calls=spent.calls if spent is not None else None,
        tokens=spent.tokens if spent is not None else None,
        cost_usd=round(spent.cost_usd, 4) if spent is not None else None,
        sessions=items if unit == "sessions" else None,
        scopes=items if unit == "scopes" else None,
    )


def _phase1(rows: Rows, runs: dict[str, dict[str, Any]], machine: str) -> Phase1:
    failed = rows.all(EXTRACT_FAILURES_SQL, {"limit": LIST_LIMIT, "machine": machine})
    jobs = rows.all(FAILED_JOBS_SQL, {"kind": JobKind.EXTRACT.value, "limit": LIST_LIMIT})
    failures = [
        Failure(session_id=f["session_id"], source=f["source"], reason=f["reason"], at=iso(f["updated_at"]))
        for f in failed
    ] + [Failure(job=j["key"], reason=j["last_error"], at=iso(j["updated_at"])) for j in jobs]
    return Phase1(
        last_run=_phase_run(rows, runs.get("extract"), "sessions"),
        failures=failures,
        last_check=_last_check(runs, "extract"),
    )


def _phase2(rows: Rows, runs: dict[str, dict[str, Any]]) -> Phase2:
    recent = rows.all(RECENT_RUNS_SQL, {"limit": LIST_LIMIT * 2})
    failures = [
        Failure(scope=f["scope"], run=f["run"], reason=f["reason"], at=f["at"])
        for r in recent
        if (f := run_failure(r)) is not None
    ][:LIST_LIMIT]
    return Phase2(
        last_run=_phase_run(rows, runs.get("consolidate"), "scopes"),
        recent=[
            RecentRun(
                scope=r["scope"],
                run=r["run_id"],
                outcome=r["outcome"],
                at=iso(r["finished_at"] or r["started_at"]),
                commit=r["commit_sha"],
                **_duplicates(r.get("usage")),
            )
            for r in recent[:LIST_LIMIT]
        ],
        failures=failures,
        last_check=_last_check(runs, "consolidate"),
    )


def _duplicates(usage: Any) -> dict[str, int]:
    """A run's duplicates found and fixed, from its usage record (empty: none found)."""
    usage = json_value(usage)
    if not isinstance(usage, dict) or not isinstance(usage.get("duplicates_found"), int):
        return {}
    return {
        "duplicates_found": usage["duplicates_found"],
        "duplicates_fixed": int(usage.get("duplicates_fixed") or 0),
    }


def _batches(rows: Rows, now: datetime, machine: str) -> Batches:
    """This machine's Message Batches submitted and not yet collected: how many, how old, with
    which sessions."""
    found = [pending_batch_from_row(r) for r in rows.all(OPEN_BATCHES_SQL, {"machine": machine})]

    def age(at: datetime | None) -> float | None:
        return round((now - at).total_seconds(), 1) if at else None

    oldest = min((b.submitted_at for b in found if b.submitted_at), default=None)
    return Batches(
        pending=len(found),
        sessions=sum(len(b.session_ids) for b in found),
        oldest_at=iso(oldest),
        oldest_age_s=age(oldest),
        batches=[
            BatchView(
                batch_id=b.batch_id,
                phase=b.phase,
                state=b.state,
                submitted_at=iso(b.submitted_at),
                age_s=age(b.submitted_at),
                sessions=len(b.session_ids),
                session_ids=list(b.session_ids),
            )
            for b in found
        ],
    )


def _rate_limit(rows: Rows, settings: Settings, now: datetime) -> RateLimit:
    """The gate as phases 1 and 2 see it: the same reader (``pipeline.store.read.gate``)."""
    state = _gate(rows, settings, now)
    share = state.remaining_percent
    return RateLimit(
        remaining_percent=None if share is None else round(share, 1),
        gated=state.gated,
        reason=state.reason,
        reset_at=state.reset_at.isoformat() if state.reset_at else None,
        observed_at=state.observed_at.isoformat() if state.observed_at else None,
    )


def _gate(rows: Rows, settings: Settings, now: datetime) -> GateState:
    return gate(
        rows,
        threshold=settings.memories.min_rate_limit_remaining_percent,
        daily_token_budget=settings.llm.daily_token_budget,
        daily_budget_usd=settings.llm.daily_budget_usd,
        now=now,
    )


def _budget(rows: Rows, settings: Settings, now: datetime) -> Budget:
    day = utc_day_start(now)
    used, month = spend(rows, day), spend(rows, day.replace(day=1))
    limit, dollars = settings.llm.daily_token_budget, settings.llm.daily_budget_usd or None  # 0: no budget
    cost_today = round(used.cost_usd, 4)
    return Budget(
        used_today_tokens=used.tokens,
        cost_today_usd=cost_today,
        daily_token_budget=limit,
        exhausted=(limit is not None and used.tokens >= limit)
        or (dollars is not None and cost_today >= dollars),
        cost_month_usd=round(month.cost_usd, 4),
        daily_budget_usd=dollars,
    )


def _memory(rows: Rows, memory_dir: Path, machine: str) -> Memory:
    scopes = [{**s, "key": shown} for s in rows.all(SCOPES_SQL) if (shown := shown_scope(s["key"], machine))]
    head, branch = git_head(memory_dir)
    return Memory(
        directory=str(memory_dir),
        exists=memory_dir.is_dir(),
        head=head,
        branch=branch,
        scopes=[ScopeView(s["key"], iso(s["last_success_at"]), s["last_commit"]) for s in scopes],
        pending_inbox_runs=pending_review(rows),
        stale=_stale(rows, machine),
    )


def _stale(rows: Rows, machine: str) -> list[StaleTopic] | None:
    """The topics this machine last published marked stale (None: none)."""
    found = stale_topics(rows, machine)
    if not found:
        return None
    folders = scope_folders(rows)
    return [
        StaleTopic(topic, entry["reason"], entry.get("since"), folders.get(scope_of(topic), []))
        for topic, entry in sorted(found.items())
    ]


def _sync(rows: Rows, settings: Settings, machine: str) -> SyncState | None:
    """This machine's last sync as it recorded it, with the configured remote and branch (None: no
    ``[sync] remote``); an empty record when it never synced with this remote."""
    if not settings.sync.remote:
        return None
    remote = shown_url(settings.sync.remote)
    state = read_sync(rows, machine)  # each machine has its own repository
    if state.remote != remote:
        state = SyncState()  # never synced with this remote
    state.remote, state.branch = remote, settings.sync.branch
    return state


def _publish(rows: Rows, run: dict[str, Any] | None, machine: str) -> Publish:
    """Each (target, scope) this machine publishes: last published, outcome and reason, the last
    republish after an outside change."""
    found = rows.all(PUBLICATIONS_SQL, {"machine": machine})
    folders = scope_folders(rows) if found else {}
    targets = [
        TargetView(
            target=r["target"],
            scope=r["scope"],
            path=r["path"],
            published_at=iso(r["published_at"]),
            outcome=r["outcome"],
            reason=r["reason"],
            republished_at=iso(r.get("republished_at")),
            republish_reason=r.get("republish_reason"),
            folders=folders.get(r["scope"], []),
        )
        for r in found
    ]
    return Publish(last_run=_publish_run(run), targets=targets)


def _publish_run(run: dict[str, Any] | None) -> PublishRun | RunView | None:
    """The last publish step, with its targets' outcomes counted and the reason of a run that did nothing
    as a whole (``*``: nothing consolidated yet, say)."""
    if not run:
        return None
    report = run.get("report")
    results = report.get("results") if isinstance(report, dict) else None
    if not isinstance(results, list):
        return RunView(**_run_fields(run))
    counts: dict[str, int] = {}
    for result in results:
        if isinstance(result, dict) and result.get("outcome"):
            counts[str(result["outcome"])] = counts.get(str(result["outcome"]), 0) + 1
    whole = next((r for r in results if isinstance(r, dict) and r.get("target") == "*"), None)
    return PublishRun(
        **_run_fields(run),
        results=dict(sorted(counts.items())),
        whole_run=WholeRun(whole.get("outcome"), whole.get("reason")) if whole else None,
    )


def _leases(rows: Rows, now: datetime) -> list[LeaseView]:
    return [
        LeaseView(
            name=h.name,
            machine=h.machine,
            host=h.host,
            pid=h.pid,
            since=iso(h.acquired_at),
            expires_at=iso(h.expires_at),
            expired=h.expires_at <= now,
        )
        for h in holders(rows)
    ]


def read_status(
    settings: Settings,
    *,
    config_path: Path,
    config_exists: bool,
    now: datetime,
    pid_alive: Callable[[int], bool],
) -> StatusReport:
    """The whole report: where it read (the settings read from ``config_path``, defaults when it does
    not exist), and every section (or why the store could not be read)."""
    from pipeline import __version__
    from pipeline.store.read.rows import StoreUnavailable, open_rows

    def report(
        daemon: DaemonView | NoDaemon | Unreadable, sections: Sections | None, error: str | None
    ) -> StatusReport:
        return StatusReport(
            version=__version__,
            checked_at=now.isoformat(),
            config=str(config_path) + ("" if config_exists else " (not found: defaults)"),
            state_db=store_url.describe(settings.paths.state_db),
            daemon=daemon,
            sections=sections,
            error=error,
        )

    try:
        rows = open_rows(settings.paths.state_db)
    except StoreUnavailable as exc:
        return report(NoDaemon(Health.NO_STORE), None, str(exc))
    try:
        sections = collect(rows, settings, now=now, pid_alive=pid_alive)
    finally:
        rows.close()
    return report(sections.daemon, sections, None)
