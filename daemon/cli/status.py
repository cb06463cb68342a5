"""`memd status`: what the daemon is doing, at a glance (``--json`` for scripts).

Fast by construction: the settings through the one loader (``daemon.config``, a standard-library
table), the report (``pipeline.status``) read through the read API (``pipeline.store.read``: the
SQLite store read-only with ``sqlite3``), and no LLM, scheduler or SQLAlchemy code unless the store
is PostgreSQL. This module renders that report: as JSON (``--json``) or for the terminal.

Exit status: 0 when the daemon is running and its heartbeat is fresh; 1 when it is not running
(never started, stopped, crashed) or the store cannot be read; 2 for a bad config (the file or
variable and the key are named); 4 when it is
stuck (its process is there but its heartbeat is stale, or a step has run past its deadline,
``[schedule] step_deadline_minutes``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from daemon.cli.context import CliContext, pass_ctx
from daemon.cli.status_tables import flagged_table, publish_table, usage_table, with_folders
from daemon.cli.text import shown, when
from daemon.exits import Exit
from pipeline.status.report import (
    AgentView,
    Batches,
    Budget,
    DaemonView,
    Memory,
    Model,
    OnceView,
    Phase1,
    Phase2,
    Publish,
    PublishRun,
    RateLimit,
    Sections,
    StatusReport,
    Transcripts,
    Unreadable,
)
from pipeline.sync.state import SyncState
from pipeline.vocabulary import Health, SyncOutcome

if TYPE_CHECKING:
    from rich.console import Console


def _model_rows(model: Model | Unreadable | None) -> list[tuple[str, str]]:
    """``local only`` when set, and what memd learned about each model endpoint."""
    if not isinstance(model, Model):
        return []
    rows = (
        [("model", "local only: any endpoint that is not loopback or private is refused")]
        if model.local_only
        else []
    )
    return rows + [("endpoint", f"{name}: {facts}") for name, facts in sorted(model.endpoints.items())]


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_ctx
def status_command(ctx: CliContext, as_json: bool) -> None:
    """Show whether the daemon runs, what it did last, and what it is waiting for."""
    from pipeline.clock import SystemClock
    from pipeline.proc import pid_alive
    from pipeline.status.read import read_status

    loaded = ctx.loaded()  # a bad file or value exits 2 naming it and the key
    report = read_status(
        loaded.settings,
        config_path=loaded.path,
        config_exists=loaded.file_exists,
        now=SystemClock().now(),
        pid_alive=pid_alive,
    )
    if as_json:
        click.echo(json.dumps(report.json(), indent=2, default=str))
    else:
        render(report)
    state = report.state
    raise SystemExit(
        Exit.OK if state == Health.RUNNING else Exit.STUCK if state == Health.STUCK else Exit.FAILED
    )


def spend_line(budget: Budget) -> str:
    """``$0.42 today of a $5.00 daily budget (1,234 tokens), $3.10 this month (UTC)``."""
    dollars = (
        f" of a ${budget.daily_budget_usd:.2f} daily budget"
        if budget.daily_budget_usd
        else " (no daily budget)"
    )
    tokens = f"{budget.used_today_tokens:,}"
    tokens += f" of {budget.daily_token_budget:,}" if budget.daily_token_budget else ""
    line = f"${budget.cost_today_usd:.2f} today{dollars} ({tokens} tokens), ${budget.cost_month_usd:.2f} this month (UTC)"
    return line + (": reached, no new model call until 00:00 UTC" if budget.exhausted else "")


# The human view ----------------------------------------------------------------------------------


def render(report: StatusReport) -> None:
    from rich.table import Table
    from rich.text import Text

    from daemon.cli.output import console as stdout_console

    console = stdout_console()  # never hard-wrapped when stdout is not a terminal
    console.print(_daemon_line(report), markup=False)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    # Text, not str: a path, a reason or a hint such as "[llm] api_key_env" is not rich markup.
    grid.add_row("config", Text(report.config))
    grid.add_row("state store", Text(report.state_db))
    sections = report.sections
    if sections is None:
        grid.add_row("error", Text(report.error or ""))
        console.print(grid)
        return
    for label, value in _rows(sections):
        grid.add_row(label, Text(value))
    console.print(grid)
    _transcripts_table(console, sections.transcripts)
    publish_table(console, sections.publish)
    usage_table(console, sections.usage)
    flagged_table(console, sections.flagged)


def _daemon_line(report: StatusReport) -> str:
    d = report.daemon
    head = f"memd {report.version}: daemon"
    if isinstance(d, Unreadable):
        return f"{head} not running (unknown: {d.error})"
    if isinstance(d, DaemonView):
        where = f"pid {d.pid} on {d.host}"
        if d.state in (Health.RUNNING, Health.STUCK):
            line = (
                f"{head} {d.state} ({where}, up {_dur(d.uptime_s)}, heartbeat {_dur(d.heartbeat_age_s)} ago)"
            )
            if d.stuck_step is not None:
                line += f", {d.stuck_step.step} has run for {_dur(d.stuck_step.running_s)}"
                line += f" (deadline {_dur(d.stuck_step.deadline_s)})"
            elif d.step:
                line += f", now: {d.step}"
            return line
        if d.state in (Health.STOPPED, Health.CRASHED):
            return f"{head} {d.state} at {when(d.stopped_at)} (was {where})"
        if d.state == Health.DEAD:
            return f"{head} down ({where} is gone; last heartbeat {when(d.heartbeat_at)})"
    once = report.sections.last_once if report.sections is not None else None
    if d.state == Health.NEVER_STARTED and isinstance(once, OnceView):
        at = when(once.finished_at or once.started_at)
        return f"{head} not running (never run as a service; `memd run --once` at {at})"
    return f"{head} not running ({d.state})"


def _rows(report: Sections) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(report.last_once, OnceView):
        out.append(("last run --once", _once_line(report.last_once)))
    scan = report.last_scan
    if scan:
        out.append(("last scan", f"{when(scan.at)} {shown(scan.outcome)}{_err(scan.error)}"))
    out.append(("phase 1", _phase_line(report.phase1, "sessions")))
    out += _failure_rows(report.phase1)
    if batches := _batches_line(report.batches):
        out.append(("batches", batches))
    out.append(("phase 2", _phase_line(report.phase2, "scopes")))
    out += _failure_rows(report.phase2)
    out += [("duplicates", line) for line in [_duplicates_line(report.phase2)] if line]
    rl = report.rate_limit
    if isinstance(rl, RateLimit):
        share = "unknown" if rl.remaining_percent is None else f"{rl.remaining_percent:g}% remaining"
        gate = f"gated until {when(rl.reset_at)}: {rl.reason}" if rl.gated else "not gated"
        out.append(("rate limit", f"{share}, {gate}"))
    budget = report.budget
    if isinstance(budget, Budget):
        out.append(("spend", spend_line(budget)))
    out += _model_rows(report.model)
    mem = report.memory
    if isinstance(mem, Memory):
        head = (mem.head or "")[:12] or "no commits"
        line = f"{mem.directory}  HEAD {head}"
        line += f" ({mem.branch})" if mem.branch else ""
        line += f", {len(mem.scopes)} scopes, {mem.pending_inbox_runs} pending inbox runs"
        out.append(("memory", line))
        out += _stale_rows(mem)
    out.append(("publish", _publish_line(report.publish)))
    out += _agent_rows(report.agents)
    if isinstance(report.machines, list) and len(report.machines) > 1:  # team mode: every machine's daemon
        for view in report.machines:
            out.append(("machine", _machine_line(view)))
    team = report.team
    if isinstance(team, Unreadable):
        out.append(("team", f"unreadable: {team.error}"))
    elif team is not None:
        out += [("team", note) for note in team.notes]
    if report.sync is not None:
        out += _sync_rows(report.sync)
    for lease in report.leases if isinstance(report.leases, list) else []:
        expired = " (expired)" if lease.expired else ""
        out.append(
            ("lease", f"{lease.name}: {lease.host} pid {lease.pid} since {when(lease.since)}{expired}")
        )
    return out


def _agent_rows(agents: list[AgentView] | Unreadable | None) -> list[tuple[str, str]]:
    """Every agent memd knows, each of its publish targets on, off (and the key) or not installed."""
    from daemon.cli.status_tables import agent_line

    if isinstance(agents, Unreadable):
        return [("agents", f"unreadable: {agents.error}")]
    return [("agent", agent_line(view)) for view in agents or []]


STALE_SHOWN = 5


def _stale_rows(mem: Memory) -> list[tuple[str, str]]:
    """The topics published marked stale: the first few, then how many more."""
    stale = mem.stale or []
    rows = [
        (
            "stale",
            f"{with_folders(t.topic, t.folders)}: {t.reason} (since {when(t.since)}; the next run fixes or drops it)",
        )
        for t in stale[:STALE_SHOWN]
    ]
    if len(stale) > STALE_SHOWN:
        rows.append(("", f"and {len(stale) - STALE_SHOWN} more stale topics (`memd status --json`)"))
    return rows


def _duplicates_line(section: Phase2 | Unreadable) -> str:
    """The duplicate topics the recent runs' checks found and how many their repair turns fixed."""
    if isinstance(section, Unreadable):
        return ""
    runs = [r for r in section.recent if r.duplicates_found]
    if not runs:
        return ""
    found = sum(r.duplicates_found or 0 for r in runs)
    fixed = sum(r.duplicates_fixed or 0 for r in runs)
    last = runs[0]
    return (
        f"{found} found, {fixed} fixed in the last {len(section.recent)} runs "
        f"(last: {shown(last.scope)} {shown(last.run)}, {last.duplicates_found} found, "
        f"{last.duplicates_fixed or 0} fixed, {shown(last.outcome)})"
    )


def _failure_rows(section: Phase1 | Phase2 | Unreadable) -> list[tuple[str, str]]:
    if isinstance(section, Unreadable):
        return []
    return [
        ("", f"failed: {shown(f.session_id or f.scope or f.job)}: {shown(f.reason)}")
        for f in section.failures[:3]
    ]


def _machine_line(view: DaemonView) -> str:
    """One machine's daemon sharing the store: its label and id, its state, its last heartbeat."""
    machine, _, host = (view.machine or "").partition("-")  # a second host of one id: "<id>-<host>"
    who = f"{shown(view.host)} ({shown(machine[:8] + (f'-{host[:6]}' if host else ''))})"
    this = ", this machine" if view.this_machine else ""
    beat = f"heartbeat {when(view.heartbeat_at)}"
    if view.heartbeat_age_s is not None and view.running:
        beat = f"heartbeat {_dur(view.heartbeat_age_s)} ago"
    return f"{who}{this}: {shown(view.state)}, pid {shown(view.pid)}, {beat}"


def _sync_rows(sync: SyncState | Unreadable) -> list[tuple[str, str]]:
    """``sync``: the remote and branch, how the last sync went, the last fetch and push, ahead/behind;
    then the last error."""
    if isinstance(sync, Unreadable):
        return [("sync", f"unreadable: {sync.error}")]
    failed = sync.outcome in (SyncOutcome.STOPPED, SyncOutcome.FAILED)
    line = f"{sync.remote} ({sync.branch}): "
    if not sync.outcome:
        line += "never synced"
    else:
        line += f"{shown(sync.outcome)} at {when(sync.at)}"
        if failed and sync.reason:
            line += f": {sync.reason}"
        line += f"; last fetch {when(sync.last_fetch_at)}, last push {when(sync.last_push_at)}"
        if sync.ahead is not None:
            line += f"; ahead {sync.ahead}, behind {sync.behind}"
    rows = [("sync", line)]
    if sync.trust and failed and sync.reason and sync.reason in sync.trust:
        rows.append(("", "not trusted by the remote yet (what to run where: above)"))  # said once
    elif sync.trust:
        rows.append(("", sync.trust))
    if sync.refused and sync.refused != sync.reason:
        rows.append(("", f"last refused at {when(sync.refused_at)}: {sync.refused}"))
    if sync.last_error and not failed:
        rows.append(("", f"last error at {when(sync.last_error_at)}: {sync.last_error}"))
    return rows


def _once_line(once: OnceView) -> str:
    if once.finished_at:
        return f"{when(once.finished_at)} {once.summary or ''}".rstrip()
    if once.running:
        return f"running since {when(once.started_at)} (pid {once.pid})"
    return f"started {when(once.started_at)}, did not finish (pid {once.pid} on {once.host})"


def _phase_line(section: Phase1 | Phase2 | Unreadable, unit: str) -> str:
    if isinstance(section, Unreadable):
        return f"unreadable: {section.error}"
    last, check = section.last_run, section.last_check
    line = "never ran"
    if last:
        line = f"{when(last.at)} {shown(last.outcome)}"
        if last.tokens is not None:
            items = (last.sessions if unit == "sessions" else last.scopes) or 0
            line += f": {items} {unit}, {last.tokens:,} tokens, ${last.cost_usd or 0:.2f}"
        line += _err(last.error)
        line += _pending(last.report)
    if check:
        line += f"; checked {when(check.at)}: {check.reason or 'nothing to do'}"
    return line


def _pending(report: Any) -> str:
    """Batches the last run left open (phase 1): how many, with how many sessions."""
    batches = report.get("batches_pending") if isinstance(report, dict) else None
    if not isinstance(batches, int) or batches <= 0:
        return ""
    sessions = report.get("sessions_pending") or 0
    plural = "es" if batches != 1 else ""
    return f"; {batches} batch{plural} pending with {sessions} sessions (a later cycle collects them)"


SESSIONS_SHOWN = 3


def _batches_line(section: Batches | Unreadable) -> str:
    """Message Batches still to be collected, read from the store: how many, the oldest's age, the
    first few sessions; empty when none is pending."""
    if isinstance(section, Unreadable):
        return f"unreadable: {section.error}"
    if not section.pending:
        return ""
    ids = [sid for b in section.batches for sid in b.session_ids]
    names = ", ".join(ids[:SESSIONS_SHOWN])
    more = len(ids) - SESSIONS_SHOWN
    names += f" and {more} more" if more > 0 else ""
    return (
        f"{section.pending} pending with {section.sessions} sessions, oldest submitted "
        f"{_dur(section.oldest_age_s)} ago at {when(section.oldest_at)}: {names} "
        "(a later cycle collects them; `memd run --once --wait` waits for them)"
    )


def _publish_line(section: Publish | Unreadable) -> str:
    """The last publish step: what it did to its targets, or why it did nothing as a whole."""
    if isinstance(section, Unreadable):
        return f"unreadable: {section.error}"
    last = section.last_run
    if not last:
        return "never ran"
    line = f"{when(last.at)} "
    published = last if isinstance(last, PublishRun) else None
    if published is not None and published.whole_run:
        return line + f"{shown(published.whole_run.outcome)}: {shown(published.whole_run.reason)}"
    line += shown(last.outcome)
    if published is not None and published.results:
        line += ": " + ", ".join(f"{n} {outcome}" for outcome, n in published.results.items())
    return line + _err(last.error)


def _transcripts_table(console: Console, section: Transcripts | Unreadable) -> None:
    from rich.table import Table
    from rich.text import Text

    if isinstance(section, Unreadable):
        console.print(f"transcripts: {section.error}", markup=False)
        return
    if not section.by_source:
        console.print("transcripts: none recorded yet", markup=False)
        return
    states = sorted(section.by_state)
    table = Table(title=f"transcripts ({section.total})", title_justify="left", show_edge=False)
    table.add_column("source")
    for state in states:
        table.add_column(state, justify="right")
    for source, counts in section.by_source.items():
        table.add_row(Text(source), *(str(counts.get(s, 0)) for s in states))
    console.print(table)
    nxt = section.next_idle
    if nxt:
        console.print(
            f"next to become idle: {nxt.source} {shown(nxt.session_id)} ({nxt.project or 'no project'}) "
            f"in {_dur(nxt.in_s)}, at {when(nxt.at)}",
            markup=False,
        )


def _err(error: str | None) -> str:
    return f" ({error})" if error else ""


def _dur(seconds: Any) -> str:
    if seconds is None:
        return shown(None)
    s = int(abs(float(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"
