"""The overview, one screen whatever the store holds: what `memd status` reports (the same typed
report, ``pipeline.status.report``) as cards, the last cycles, the backlog by state with its main
reason, spend per day; the publish targets counted per target and the hit rate over the live scopes,
each with its rows behind a link (``/publish``, ``/usage``). Only live scopes (those the memory
repository holds now) are counted or linked: a forgotten or cleared one is neither."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from daemon.ui import data
from daemon.ui.pages import context, folders, live_scopes
from daemon.ui.render import bar_chart, page
from pipeline.proc import pid_alive
from pipeline.status.read import collect
from pipeline.status.report import Sections
from pipeline.store.read.rows import Rows, StoreUnavailable
from pipeline.vocabulary import PUBLISH_FAILED, PublishOutcome


@dataclass(frozen=True)
class TargetCount:
    """One publish target over the live scopes: how many are current, failed, skipped."""

    target: str
    current: int
    failed: int
    skipped: int


def targets(report: Sections, live: set[str]) -> list[TargetCount]:
    """Each target's rows of the live scopes, counted (a withdrawn copy is not published: not counted)."""
    by_target: dict[str, Counter[str]] = {}
    for t in _list(report.publish, "targets"):
        if t.scope not in live or t.outcome == PublishOutcome.WITHDRAWN:
            continue
        kind = (
            "failed"
            if t.outcome in PUBLISH_FAILED
            else "skipped"
            if t.outcome == PublishOutcome.SKIPPED
            else "current"
        )
        by_target.setdefault(t.target, Counter())[kind] += 1
    return [
        TargetCount(name, c["current"], c["failed"], c["skipped"]) for name, c in sorted(by_target.items())
    ]


def hit_rate(report: Sections, live: set[str]) -> tuple[float | None, int]:
    """The share of the live scopes' sessions that read their memory, and how many scopes count."""
    scopes = [s for s in _list(report.usage, "scopes") if s.scope in live]
    sessions = sum(s.sessions for s in scopes)
    reading = sum(s.sessions_reading for s in scopes)
    return (reading / sessions if sessions else None), len(scopes)


def _list(section: Any, name: str) -> list[Any]:
    """A list of a report section, empty when the section could not be read."""
    return list(getattr(section, name, None) or [])


async def _report(request: Request) -> tuple[Sections, list[data.Backlog], list[data.Day]]:
    ui = context(request)
    now = ui.clock.now()
    settings = ui.settings()

    def read(rows: Rows) -> tuple[Sections, list[data.Backlog], list[data.Day]]:
        machine = ui.db.machine
        report = collect(rows, settings, now=now, pid_alive=pid_alive, machine=machine)
        return report, data.backlog(rows, machine), data.daily_usage(rows, now)

    return await ui.read(read)


async def overview(request: Request) -> Response:
    try:
        report, backlog, days = await _report(request)
    except StoreUnavailable as exc:
        return page(request, "overview.html", title="overview", error=str(exc), report=None, backlog=[])
    live = await live_scopes(context(request))
    tokens = bar_chart([(d.day, d.tokens) for d in days], label="tokens per day")
    cost = bar_chart([(d.day, d.cost_usd) for d in days], label="cost per day (USD)", fmt="${:,.2f}")
    rate, rated = hit_rate(report, live)
    phase1, phase2 = report.phase1, report.phase2
    return page(
        request,
        "overview.html",
        title="overview",
        report=report,
        backlog=backlog,
        live=len(live),
        targets=targets(report, live),
        hit_rate=rate,
        rated=rated,
        failures=_list(phase1, "failures") + _list(phase2, "failures"),
        tokens_chart=tokens,
        cost_chart=cost,
        total_tokens=sum(d.tokens for d in days),
        total_cost=sum(d.cost_usd for d in days),
        days=len(days),
    )


async def publish(request: Request) -> Response:
    """Every (target, scope) this machine publishes: the live scopes' rows, the others behind a
    ``<details>`` (not linked: their memory is gone)."""
    try:
        report, _, _ = await _report(request)
    except StoreUnavailable as exc:
        raise HTTPException(503, str(exc)) from None
    live = await live_scopes(context(request))
    rows = _list(report.publish, "targets")
    return page(
        request,
        "publish.html",
        title="publish targets",
        rows=[t for t in rows if t.scope in live],
        gone=[t for t in rows if t.scope not in live],
        last_run=getattr(report.publish, "last_run", None),
        folders=await folders(context(request)),
    )


async def usage(request: Request) -> Response:
    """The hit rate of each live scope (a scope no longer in the memory repository is left out)."""
    try:
        report, _, _ = await _report(request)
    except StoreUnavailable as exc:
        raise HTTPException(503, str(exc)) from None
    live = await live_scopes(context(request))
    return page(
        request,
        "usage.html",
        title="hit rate per scope",
        scopes=[s for s in _list(report.usage, "scopes") if s.scope in live],
        window_days=getattr(report.usage, "window_days", None),
        folders=await folders(context(request)),
    )


routes = [Route("/", overview), Route("/publish", publish), Route("/usage", usage)]
