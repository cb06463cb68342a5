"""What `memd status` reports, read from the state store without memd's store code.

Rows come from ``daemon.lean.rows`` (read-only ``sqlite3``, or SQLAlchemy for PostgreSQL) running
the store's read model (``pipeline.store.readmodel``: every statement and row mapping), the memory
repository's HEAD from ``daemon.status.git_refs``; the rate-limit gate is ``pipeline.ratelimit_rule``,
the rule the model client applies. Every section is read on its own: a section that fails says so
and the others still show.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from daemon.lean.liveness import LAST_ONCE_KEY, health
from daemon.lean.rows import Rows
from daemon.lean.settings import LeanSettings
from daemon.status.git_refs import git_head
from daemon.status.hits import usage
from pipeline import ratelimit_rule
from pipeline.machine import known_id
from pipeline.store import readmodel as rm
from pipeline.store.readmodel import iso, json_value, parse_time
from pipeline.sync.urls import shown_url
from pipeline.vocabulary import Health, JobKind

LIST_LIMIT = 5


# Reading ------------------------------------------------------------------------------------------


def collect(
    rows: Rows,
    settings: LeanSettings,
    *,
    now: datetime,
    pid_alive: Callable[[int], bool],
    machine: str | None = None,
) -> dict[str, Any]:
    """Every section of the report; a section that cannot be read is ``{"error": ...}``. ``machine``
    (default: the one recorded in the settings' state directory) is this machine: its daemon is the
    report's ``daemon``, every machine's is listed under ``machines``, and the transcripts and
    phase-1 failures are its own."""
    report: dict[str, Any] = {}
    mine = machine or known_id(settings.state_dir)
    runs = _section(lambda: _runs(rows, mine), {})
    daemons = _section(lambda: _machines(rows, now, mine, pid_alive), {"error": "unreadable"})
    sections: dict[str, Callable[[], Any]] = {
        "daemon": lambda: _daemon(daemons),
        "machines": lambda: daemons,
        "transcripts": lambda: _transcripts(rows, now, mine),
        "phase1": lambda: (
            _phase(rows, runs.get("extract"), JobKind.EXTRACT, mine)
            | {"last_check": _last_check(runs, "extract")}
        ),
        "phase2": lambda: (
            _phase2(rows, runs.get("consolidate")) | {"last_check": _last_check(runs, "consolidate")}
        ),
        "batches": lambda: _batches(rows, now, mine),
        "rate_limit": lambda: _rate_limit(rows, settings, now),
        "budget": lambda: _budget(rows, settings, now),
        "memory": lambda: _memory(rows, settings.memory_dir),
        "publish": lambda: _publish(rows, runs.get("publish"), mine),
        "sync": lambda: _sync(rows, settings, mine),
        "usage": lambda: usage(rows, now),
        "leases": lambda: _leases(rows, now),
        "last_once": lambda: _last_once(rows, mine, pid_alive),
    }
    for name, read in sections.items():
        report[name] = _section(read, {"error": "unreadable"})
    report["last_scan"] = _run_view(runs.get("scan"))
    return report


def _section(read: Callable[[], Any], fallback: Any) -> Any:
    try:
        return read()
    except (sqlite3.Error, OSError, ValueError, KeyError, TypeError) as exc:
        return {"error": str(exc)} if isinstance(fallback, dict) and fallback else fallback
    except Exception as exc:  # a PostgreSQL driver error: still only this section
        return {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}


def _daemon(daemons: list[dict[str, Any]] | dict[str, Any]) -> dict[str, Any]:
    """This machine's daemon (the report's health and exit status are its own)."""
    if isinstance(daemons, dict):  # the heartbeats could not be read
        return daemons
    for view in daemons:
        if view.get("this_machine"):
            return {k: v for k, v in view.items() if k != "this_machine"}
    return {"running": False, "state": Health.NEVER_STARTED}


def _machines(
    rows: Rows, now: datetime, machine: str, pid_alive: Callable[[int], bool]
) -> list[dict[str, Any]]:
    """Every machine's daemon sharing this store (the newest heartbeat of each), this one first.
    Only this machine's pids can be asked about; another machine's daemon is judged by its
    heartbeat alone (``daemon.lean.liveness.health``)."""
    newest = rm.latest_per_machine(rows.all(rm.HEARTBEATS_SQL))
    views = [_heartbeat_view(hb, now, machine, pid_alive) for hb in newest]
    return sorted(views, key=lambda v: not v["this_machine"])


def _heartbeat_view(
    hb: dict[str, Any], now: datetime, machine: str, pid_alive: Callable[[int], bool]
) -> dict[str, Any]:
    beat_at = parse_time(hb["beat_at"])
    started_at = parse_time(hb["started_at"])
    stopped_at = parse_time(hb["stopped_at"])
    status = json_value(hb["status"]) or {}
    age_s = (now - beat_at).total_seconds() if beat_at else None
    local = (hb.get("machine") or machine) == machine
    view: dict[str, Any] = {
        "machine": hb.get("machine"),
        "this_machine": local,
        "pid": hb["pid"],
        "host": hb["host"],
        "version": hb["version"],
        "started_at": iso(started_at),
        "heartbeat_at": iso(beat_at),
        "heartbeat_age_s": round(age_s, 1) if age_s is not None else None,
        "step": status.get("step") if isinstance(status, dict) else None,
        "last_cycle": status.get("last_cycle") if isinstance(status, dict) else None,
    }
    state, overrun = health(
        status,
        stopped=stopped_at is not None,
        pid_alive=pid_alive(int(hb["pid"])) if local and stopped_at is None else None,
        age_s=age_s,
        now=now,
    )
    view.update(running=state in (Health.RUNNING, Health.STUCK), state=state)
    if stopped_at is not None:
        view["stopped_at"] = iso(stopped_at)
    if overrun is not None:
        view["stuck_step"] = overrun
    if view["running"] and started_at is not None:
        view["uptime_s"] = round((now - started_at).total_seconds(), 1)
    return view


def _last_once(rows: Rows, machine: str, pid_alive: Callable[[int], bool]) -> dict[str, Any] | None:
    """This machine's last ``memd run --once``: when it started and finished, its summary; still
    running, or gone without finishing."""
    record = _kv(rows, rm.machine_key(LAST_ONCE_KEY, machine))
    if not isinstance(record, dict):
        return None
    view = {k: record.get(k) for k in ("pid", "host", "started_at", "finished_at", "summary")}
    unfinished = record.get("finished_at") is None
    alive = unfinished and isinstance(record.get("pid"), int)
    view["running"] = bool(alive and pid_alive(int(record["pid"])))
    return view


def _transcripts(rows: Rows, now: datetime, machine: str) -> dict[str, Any]:
    by_source: dict[str, dict[str, int]] = {}
    by_state: dict[str, int] = {}
    mine = {"machine": machine}
    for r in rows.all(rm.COUNTS_SQL, mine):
        by_source.setdefault(r["source"], {})[r["state"]] = int(r["n"])
        by_state[r["state"]] = by_state.get(r["state"], 0) + int(r["n"])
    nxt = rows.all(rm.NEXT_IDLE_SQL, mine)
    next_idle = None
    if nxt:
        at = parse_time(nxt[0]["eligible_at"])
        next_idle = {
            "source": nxt[0]["source"],
            "session_id": nxt[0]["session_id"],
            "project": nxt[0]["project"],
            "at": iso(at),
            "in_s": round((at - now).total_seconds(), 1) if at else None,
        }
    failed = rows.all(rm.TRANSCRIPT_FAILURES_SQL, {"limit": LIST_LIMIT, **mine})
    return {
        "total": sum(by_state.values()),
        "by_state": dict(sorted(by_state.items())),
        "by_source": {k: dict(sorted(v.items())) for k, v in sorted(by_source.items())},
        "next_idle": next_idle,
        "failures": failed,
    }


def _runs(rows: Rows, machine: str) -> dict[str, dict[str, Any]]:
    """This machine's ``run.<step>`` (the last run that did something) and ``run.<step>.skipped``
    (the last check that found nothing to do), by ``<step>`` and ``<step>.skipped``."""
    found = rows.all(rm.RUNS_SQL, rm.runs_params(machine))
    return {rm.run_name(r["key"], machine): v for r in found if isinstance(v := json_value(r["value"]), dict)}


def _run_view(run: dict[str, Any] | None) -> dict[str, Any] | None:
    if not run:
        return None
    return {
        "at": run.get("finished_at"),
        "outcome": run.get("outcome"),
        "duration_s": run.get("duration_s"),
        "error": run.get("error"),
        "report": run.get("report"),
    }


def _last_check(runs: dict[str, dict[str, Any]], step: str) -> dict[str, Any] | None:
    """The last time ``step`` found nothing to do, when that is more recent than its last run."""
    skipped, ran = runs.get(f"{step}{rm.SKIPPED_SUFFIX}"), runs.get(step)
    if not skipped:
        return None
    if ran and str(ran.get("finished_at", "")) >= str(skipped.get("finished_at", "")):
        return None
    report = skipped.get("report")
    reason = report.get("reason") if isinstance(report, dict) else None
    return {"at": skipped.get("finished_at"), "outcome": "nothing to do", "reason": reason}


def _usage(rows: Rows, start: Any, end: Any) -> dict[str, Any]:
    found = rows.all(rm.USAGE_SQL, {"start": rows.time(start), "end": rows.time(end)})[0]
    return {
        "calls": int(found["calls"]),
        "items": int(found["items"]),
        "tokens": int(found["tokens"]),
        "cost_usd": round(float(found["cost"]), 4),
    }


def _last_run(rows: Rows, run: dict[str, Any] | None) -> dict[str, Any] | None:
    view = _run_view(run)
    if view is None or run is None:
        return None
    start, end = parse_time(run.get("started_at")), parse_time(run.get("finished_at"))
    if start and end:
        view.update(_usage(rows, start, end))
    return view


def _phase(rows: Rows, run: dict[str, Any] | None, kind: JobKind, machine: str) -> dict[str, Any]:
    last = _last_run(rows, run)
    if last is not None:
        last["sessions"] = last.pop("items", 0)
    failed = rows.all(rm.EXTRACT_FAILURES_SQL, {"limit": LIST_LIMIT, "machine": machine})
    jobs = rows.all(rm.FAILED_JOBS_SQL, {"kind": kind.value, "limit": LIST_LIMIT})
    failures = [
        {
            "session_id": f["session_id"],
            "source": f["source"],
            "reason": f["reason"],
            "at": iso(f["updated_at"]),
        }
        for f in failed
    ] + [{"job": j["key"], "reason": j["last_error"], "at": iso(j["updated_at"])} for j in jobs]
    return {"last_run": last, "failures": failures}


def _phase2(rows: Rows, run: dict[str, Any] | None) -> dict[str, Any]:
    last = _last_run(rows, run)
    if last is not None:
        last["scopes"] = last.pop("items", 0)
    recent = rows.all(rm.RECENT_RUNS_SQL, {"limit": LIST_LIMIT * 2})
    failures = [f for r in recent if (f := rm.run_failure(r)) is not None][:LIST_LIMIT]
    runs = [
        {
            "scope": r["scope"],
            "run": r["run_id"],
            "outcome": r["outcome"],
            "at": iso(r["finished_at"] or r["started_at"]),
            "commit": r["commit_sha"],
        }
        for r in recent[:LIST_LIMIT]
    ]
    return {"last_run": last, "recent": runs, "failures": failures}


def _batches(rows: Rows, now: datetime, machine: str) -> dict[str, Any]:
    """This machine's Message Batches submitted and not yet collected: how many, how old, with
    which sessions."""
    found = [rm.pending_batch_from_row(r) for r in rows.all(rm.OPEN_BATCHES_SQL, {"machine": machine})]

    def age(at: datetime | None) -> float | None:
        return round((now - at).total_seconds(), 1) if at else None

    oldest = min((b.submitted_at for b in found if b.submitted_at), default=None)
    return {
        "pending": len(found),
        "sessions": sum(len(b.session_ids) for b in found),
        "oldest_at": iso(oldest),
        "oldest_age_s": age(oldest),
        "batches": [
            {
                "batch_id": b.batch_id,
                "phase": b.phase,
                "state": b.state,
                "submitted_at": iso(b.submitted_at),
                "age_s": age(b.submitted_at),
                "sessions": len(b.session_ids),
                "session_ids": list(b.session_ids),
            }
            for b in found
        ],
    }


def _kv(rows: Rows, key: str) -> Any:
    found = rows.all(rm.KV_SQL, {"key": key})
    return json_value(found[0]["value"]) if found else None


def _rate_limit(rows: Rows, settings: LeanSettings, now: datetime) -> dict[str, Any]:
    """The gate as phases 1 and 2 see it: the same kv values through the same rule."""
    snapshot = _kv(rows, ratelimit_rule.KV_RATE_LIMIT)
    decision = ratelimit_rule.decide(
        ratelimit_rule.families_from_json(snapshot),
        threshold=settings.min_rate_limit_remaining_percent,
        backoff=ratelimit_rule.backoff_from_json(_kv(rows, ratelimit_rule.KV_BACKOFF)),
        used_today=_budget(rows, settings, now)["used_today_tokens"],
        budget=settings.daily_token_budget,
        now=now,
    )
    share = decision.remaining_percent
    return {
        "remaining_percent": None if share is None else round(share, 1),
        "gated": decision.gated,
        "reason": decision.reason,
        "reset_at": decision.reset_at.isoformat() if decision.reset_at else None,
        "observed_at": snapshot.get("observed_at") if isinstance(snapshot, dict) else None,
    }


def _budget(rows: Rows, settings: LeanSettings, now: datetime) -> dict[str, Any]:
    used = _usage(rows, ratelimit_rule.utc_day_start(now), now + timedelta(days=1))
    limit = settings.daily_token_budget
    return {
        "used_today_tokens": used["tokens"],
        "cost_today_usd": used["cost_usd"],
        "daily_token_budget": limit,
        "exhausted": limit is not None and used["tokens"] >= limit,
    }


def _memory(rows: Rows, memory_dir: Path) -> dict[str, Any]:
    scopes = rows.all(rm.SCOPES_SQL)
    pending = rows.all(rm.PENDING_REVIEW_SQL)
    head, branch = git_head(memory_dir)
    return {
        "directory": str(memory_dir),
        "exists": memory_dir.is_dir(),
        "head": head,
        "branch": branch,
        "scopes": [
            {
                "scope": s["key"],
                "last_success_at": iso(s["last_success_at"]),
                "last_commit": s["last_commit"],
            }
            for s in scopes
        ],
        "pending_inbox_runs": int(pending[0]["n"]),
    }


SYNC_FIELDS = (
    "outcome",
    "reason",
    "at",
    "last_fetch_at",
    "last_push_at",
    "last_merge_at",
    "ahead",
    "behind",
    "last_error",
    "last_error_at",
)


def _sync(rows: Rows, settings: LeanSettings, machine: str) -> dict[str, Any] | None:
    """The remote, the last fetch and push, ahead/behind, the last error (None: no ``[sync] remote``)."""
    if not settings.sync_remote:
        return None
    remote = shown_url(settings.sync_remote)
    state = _kv(rows, rm.machine_key(rm.SYNC_STATE_KEY, machine))  # each machine has its own repository
    if not isinstance(state, dict) or state.get("remote") != remote:
        state = {}  # never synced with this remote
    return {"remote": remote, "branch": settings.sync_branch, **{k: state.get(k) for k in SYNC_FIELDS}}


def _publish(rows: Rows, run: dict[str, Any] | None, machine: str) -> dict[str, Any]:
    """Each (target, scope) this machine publishes: last published, outcome and reason, the last
    republish after an outside change."""
    found = rows.all(rm.PUBLICATIONS_SQL, {"machine": machine})
    targets = [
        {
            "target": r["target"],
            "scope": r["scope"],
            "path": r["path"],
            "published_at": iso(r["published_at"]),
            "outcome": r["outcome"],
            "reason": r["reason"],
            "republished_at": iso(r.get("republished_at")),
            "republish_reason": r.get("republish_reason"),
        }
        for r in found
    ]
    return {"last_run": _publish_run(run), "targets": targets}


def _publish_run(run: dict[str, Any] | None) -> dict[str, Any] | None:
    """The last publish step, with its targets' outcomes counted and the reason of a run that did nothing
    as a whole (``*``: nothing consolidated yet, say)."""
    view = _run_view(run)
    report = view.get("report") if view else None
    results = report.get("results") if isinstance(report, dict) else None
    if view is None or not isinstance(results, list):
        return view
    counts: dict[str, int] = {}
    for result in results:
        if isinstance(result, dict) and result.get("outcome"):
            counts[str(result["outcome"])] = counts.get(str(result["outcome"]), 0) + 1
    whole = next((r for r in results if isinstance(r, dict) and r.get("target") == "*"), None)
    view["results"] = dict(sorted(counts.items()))
    view["whole_run"] = {"outcome": whole.get("outcome"), "reason": whole.get("reason")} if whole else None
    return view


def _leases(rows: Rows, now: datetime) -> list[dict[str, Any]]:
    found = rows.all(rm.LEASES_SQL)
    out = []
    for r in found:
        expires = parse_time(r["expires_at"])
        out.append(
            {
                "name": r["name"],
                "machine": r.get("machine"),
                "host": r["host"],
                "pid": r["pid"],
                "since": iso(r["acquired_at"]),
                "expires_at": iso(expires),
                "expired": bool(expires and expires <= now),
            }
        )
    return out
