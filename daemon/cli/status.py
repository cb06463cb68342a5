"""`memd status`: what the daemon is doing, at a glance (``--json`` for scripts).

Fast by construction: it reads a few settings without pydantic (``daemon.status.config``), the
SQLite store read-only with ``sqlite3`` (``daemon.status.read``), and imports no LLM, scheduler
or SQLAlchemy code unless the store is PostgreSQL.

Exit status: 0 when the daemon is running and its heartbeat is fresh; 1 when it is not running
(never started, stopped, crashed) or the store cannot be read; 2 for a bad config; 4 when it is
stuck (its process is there but its heartbeat is stale, or a step has run past its deadline,
``[schedule] step_deadline_minutes``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from daemon.cli.context import CliContext, pass_ctx
from daemon.exits import Exit
from daemon.status.tables import publish_table, shown, usage_table, when

if TYPE_CHECKING:
    from rich.console import Console

    from daemon.status.config import StatusSettings


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_ctx
def status_command(ctx: CliContext, as_json: bool) -> None:
    """Show whether the daemon runs, what it did last, and what it is waiting for."""
    from daemon.status.read import collect
    from daemon.status.rows import StoreUnavailable, describe, open_rows
    from pipeline import __version__
    from pipeline.clock import SystemClock
    from pipeline.proc import pid_alive

    settings = _settings(ctx)
    now = SystemClock().now()
    report: dict[str, Any] = {
        "version": __version__,
        "checked_at": now.isoformat(),
        "config": str(settings.config_path) + ("" if settings.config_exists else " (not found: defaults)"),
        "state_db": describe(settings.state_db),
    }
    try:
        rows = open_rows(settings.state_db)
    except StoreUnavailable as exc:
        report["error"] = str(exc)
        report["daemon"] = {"running": False, "state": "no state store"}
    else:
        try:
            report.update(collect(rows, settings, now=now, pid_alive=pid_alive))
        finally:
            rows.close()
    state = report["daemon"].get("state")
    report["healthy"] = state == "running"
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        render(report)
    ctx_exit = Exit.OK if state == "running" else Exit.STUCK if state == "stuck" else Exit.FAILED
    raise SystemExit(ctx_exit)


def _settings(ctx: CliContext) -> StatusSettings:
    from daemon.status.config import StatusSettings, load_status_settings

    lean = load_status_settings(ctx.config_path)
    if lean is not None:
        return lean
    loaded = ctx.loaded()  # the full loader: exits 2 and names the key when the file is bad
    return StatusSettings.of(loaded.settings, config_path=loaded.path, config_exists=loaded.file_exists)


# The human view ----------------------------------------------------------------------------------


def render(report: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from daemon.cli.output import console as stdout_console

    console = stdout_console()  # never hard-wrapped when stdout is not a terminal
    console.print(_daemon_line(report), markup=False)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    # Text, not str: a path, a reason or a hint such as "[llm] api_key_env" is not rich markup.
    grid.add_row("config", Text(report["config"]))
    grid.add_row("state store", Text(report["state_db"]))
    if "error" in report:
        grid.add_row("error", Text(report["error"]))
        console.print(grid)
        return
    for label, value in _rows(report):
        grid.add_row(label, Text(value))
    console.print(grid)
    _transcripts_table(console, report.get("transcripts", {}))
    publish_table(console, report.get("publish", {}))
    usage_table(console, report.get("usage", {}))


def _daemon_line(report: dict[str, Any]) -> str:
    d = report.get("daemon", {})
    state = d.get("state", "unknown")
    where = f"pid {d['pid']} on {d['host']}" if d.get("pid") else ""
    if state in ("running", "stuck"):
        line = f"memd {report['version']}: daemon {state} ({where}, up {_dur(d.get('uptime_s'))}, "
        line += f"heartbeat {_dur(d.get('heartbeat_age_s'))} ago)"
        stuck = d.get("stuck_step")
        if stuck:
            line += f", {stuck['step']} has run for {_dur(stuck.get('running_s'))}"
            line += f" (deadline {_dur(stuck.get('deadline_s'))})"
        elif d.get("step"):
            line += f", now: {d['step']}"
        return line
    if state in ("stopped", "crashed"):
        return f"memd {report['version']}: daemon {state} at {when(d.get('stopped_at'))} (was {where})"
    if state == "dead":
        return f"memd {report['version']}: daemon down ({where} is gone; last heartbeat {when(d.get('heartbeat_at'))})"
    once = report.get("last_once")
    if state == "never started" and once and "error" not in once:
        at = when(once.get("finished_at") or once.get("started_at"))
        return f"memd {report['version']}: daemon not running (never run as a service; `memd run --once` at {at})"
    return f"memd {report['version']}: daemon not running ({state})"


def _rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    once = report.get("last_once")
    if once and "error" not in once:
        out.append(("last run --once", _once_line(once)))
    scan = report.get("last_scan")
    if scan:
        out.append(("last scan", f"{when(scan.get('at'))} {shown(scan.get('outcome'))}{_err(scan)}"))
    for key, label, unit in (("phase1", "phase 1", "sessions"), ("phase2", "phase 2", "scopes")):
        section = report.get(key, {})
        out.append((label, _phase_line(section, unit)))
        for failure in (section.get("failures") or [])[:3]:
            what = shown(failure.get("session_id") or failure.get("scope") or failure.get("job"))
            out.append(("", f"failed: {what}: {shown(failure.get('reason'))}"))
        if key == "phase1" and (batches := _batches_line(report.get("batches") or {})):
            out.append(("batches", batches))
    rl = report.get("rate_limit", {})
    if "error" not in rl:
        share = (
            "unknown" if rl.get("remaining_percent") is None else f"{rl['remaining_percent']:g}% remaining"
        )
        gate = (
            f"gated until {when(rl.get('reset_at'))}: {rl.get('reason')}" if rl.get("gated") else "not gated"
        )
        out.append(("rate limit", f"{share}, {gate}"))
    budget = report.get("budget", {})
    if "error" not in budget:
        of = f" of {budget['daily_token_budget']:,}" if budget.get("daily_token_budget") else ""
        out.append(
            (
                "budget today",
                f"{budget.get('used_today_tokens', 0):,}{of} tokens, ${budget.get('cost_today_usd', 0):.2f}",
            )
        )
    mem = report.get("memory", {})
    if "error" not in mem:
        head = (mem.get("head") or "")[:12] or "no commits"
        scopes = len(mem.get("scopes") or [])
        line = f"{mem.get('directory')}  HEAD {head}"
        line += f" ({mem['branch']})" if mem.get("branch") else ""
        line += f", {scopes} scopes, {mem.get('pending_inbox_runs', 0)} pending inbox runs"
        out.append(("memory", line))
    out.append(("publish", _publish_line(report.get("publish") or {})))
    machines = report.get("machines")
    if isinstance(machines, list) and len(machines) > 1:  # team mode: every machine's daemon
        for view in machines:
            out.append(("machine", _machine_line(view)))
    sync = report.get("sync")
    if isinstance(sync, dict):
        out += _sync_rows(sync)
    leases = report.get("leases")
    for lease in leases if isinstance(leases, list) else []:
        expired = " (expired)" if lease.get("expired") else ""
        out.append(
            (
                "lease",
                f"{lease['name']}: {lease['host']} pid {lease['pid']} since {when(lease['since'])}{expired}",
            )
        )
    return out


def _machine_line(view: dict[str, Any]) -> str:
    """One machine's daemon sharing the store: its label and id, its state, its last heartbeat."""
    who = f"{shown(view.get('host'))} ({shown((view.get('machine') or '')[:8])})"
    this = ", this machine" if view.get("this_machine") else ""
    beat = f"heartbeat {when(view.get('heartbeat_at'))}"
    if view.get("heartbeat_age_s") is not None and view.get("running"):
        beat = f"heartbeat {_dur(view['heartbeat_age_s'])} ago"
    return f"{who}{this}: {shown(view.get('state'))}, pid {shown(view.get('pid'))}, {beat}"


def _sync_rows(sync: dict[str, Any]) -> list[tuple[str, str]]:
    """``sync``: the remote and branch, how the last sync went, the last fetch and push, ahead/behind;
    then the last error."""
    if "error" in sync:
        return [("sync", f"unreadable: {sync['error']}")]
    line = f"{sync.get('remote')} ({sync.get('branch')}): "
    if not sync.get("outcome"):
        line += "never synced"
    else:
        line += f"{shown(sync.get('outcome'))} at {when(sync.get('at'))}"
        if sync.get("outcome") in ("stopped", "failed") and sync.get("reason"):
            line += f": {sync['reason']}"
        line += f"; last fetch {when(sync.get('last_fetch_at'))}, last push {when(sync.get('last_push_at'))}"
        if sync.get("ahead") is not None:
            line += f"; ahead {sync['ahead']}, behind {sync.get('behind')}"
    rows = [("sync", line)]
    if sync.get("last_error") and sync.get("outcome") not in ("stopped", "failed"):
        rows.append(("", f"last error at {when(sync.get('last_error_at'))}: {sync['last_error']}"))
    return rows


def _once_line(once: dict[str, Any]) -> str:
    if once.get("finished_at"):
        return f"{when(once['finished_at'])} {once.get('summary') or ''}".rstrip()
    if once.get("running"):
        return f"running since {when(once.get('started_at'))} (pid {once.get('pid')})"
    return f"started {when(once.get('started_at'))}, did not finish (pid {once.get('pid')} on {once.get('host')})"


def _phase_line(section: dict[str, Any], unit: str) -> str:
    if "error" in section:
        return f"unreadable: {section['error']}"
    last, check = section.get("last_run"), section.get("last_check")
    line = "never ran"
    if last:
        line = f"{when(last.get('at'))} {shown(last.get('outcome'))}"
        if "tokens" in last:
            line += f": {last.get(unit, 0)} {unit}, {last['tokens']:,} tokens, ${last.get('cost_usd', 0):.2f}"
        line += _err(last)
        line += _pending(last.get("report"))
    if check:
        line += f"; checked {when(check.get('at'))}: {check.get('reason') or 'nothing to do'}"
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


def _batches_line(section: dict[str, Any]) -> str:
    """Message Batches still to be collected, read from the store: how many, the oldest's age, the
    first few sessions; empty when none is pending."""
    if "error" in section:
        return f"unreadable: {section['error']}"
    if not section.get("pending"):
        return ""
    ids = [sid for b in section.get("batches") or [] for sid in b.get("session_ids") or []]
    names = ", ".join(ids[:SESSIONS_SHOWN])
    more = len(ids) - SESSIONS_SHOWN
    names += f" and {more} more" if more > 0 else ""
    return (
        f"{section['pending']} pending with {section.get('sessions', 0)} sessions, oldest submitted "
        f"{_dur(section.get('oldest_age_s'))} ago at {when(section.get('oldest_at'))}: {names} "
        "(a later cycle collects them; `memd run --once --wait` waits for them)"
    )


def _publish_line(section: dict[str, Any]) -> str:
    """The last publish step: what it did to its targets, or why it did nothing as a whole."""
    if "error" in section:
        return f"unreadable: {section['error']}"
    last = section.get("last_run")
    if not last:
        return "never ran"
    line = f"{when(last.get('at'))} "
    whole = last.get("whole_run")
    if whole:
        return line + f"{shown(whole.get('outcome'))}: {shown(whole.get('reason'))}"
    counts = last.get("results") or {}
    line += shown(last.get("outcome"))
    if counts:
        line += ": " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
    return line + _err(last)


def _transcripts_table(console: Console, section: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    if "error" in section or not section.get("by_source"):
        console.print(
            "transcripts: none recorded yet"
            if "error" not in section
            else f"transcripts: {section['error']}",
            markup=False,
        )
        return
    states = sorted(section["by_state"])
    table = Table(title=f"transcripts ({section['total']})", title_justify="left", show_edge=False)
    table.add_column("source")
    for state in states:
        table.add_column(state, justify="right")
    for source, counts in section["by_source"].items():
        table.add_row(Text(source), *(str(counts.get(s, 0)) for s in states))
    console.print(table)
    nxt = section.get("next_idle")
    if nxt:
        console.print(
            f"next to become idle: {nxt['source']} {shown(nxt['session_id'])} ({nxt.get('project') or 'no project'}) "
            f"in {_dur(nxt.get('in_s'))}, at {when(nxt.get('at'))}",
            markup=False,
        )


def _err(section: dict[str, Any]) -> str:
    return f" ({section['error']})" if section.get("error") else ""


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
