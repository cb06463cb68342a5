"""The overview: what `memd status` reports (the same typed report, ``daemon.status.report``), the
backlog with its reasons, and spend per day."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from daemon.lean.rows import Rows, StoreUnavailable
from daemon.status.read import collect
from daemon.status.report import Sections
from daemon.ui import data
from daemon.ui.pages import context
from daemon.ui.render import bar_chart, page
from pipeline.proc import pid_alive


async def overview(request: Request) -> Response:
    ui = context(request)
    now = ui.clock.now()
    settings = ui.status_settings()

    def read(rows: Rows) -> tuple[Sections, list[data.Backlog], list[data.Day]]:
        machine = ui.db.machine
        report = collect(rows, settings, now=now, pid_alive=pid_alive, machine=machine)
        return report, data.backlog(rows, machine), data.daily_usage(rows, now)

    try:
        report, backlog, days = await ui.read(read)
    except StoreUnavailable as exc:
        return page(request, "overview.html", title="overview", error=str(exc), report=None, backlog=[])
    tokens = bar_chart([(d.day, d.tokens) for d in days], label="tokens per day")
    cost = bar_chart([(d.day, d.cost_usd) for d in days], label="cost per day (USD)", fmt="${:,.2f}")
    return page(
        request,
        "overview.html",
        title="overview",
        report=report,
        backlog=backlog,
        tokens_chart=tokens,
        cost_chart=cost,
        total_tokens=sum(d.tokens for d in days),
        total_cost=sum(d.cost_usd for d in days),
        days=len(days),
    )


routes = [Route("/", overview)]
