"""The inbox: runs waiting for review, each with its diff (the topic changes first, the raw phase-1
inputs after), and accept or reject (``daemon.actions``, what `memd inbox accept|reject` do)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from daemon import actions
from daemon.runtime import memory_repo
from daemon.ui.pages import arg, context, folders, live_scopes, runtime
from daemon.ui.render import diff_html, page, split_diff
from daemon.ui.security import FormRefused, checked_form
from daemon.ui.summary import accepted_summary
from pipeline.consolidate import inbox as review
from pipeline.layout import is_input_path


async def listing(request: Request) -> Response:
    ui = context(request)
    entries = await review.pending(ui.db, memory_repo(ui.settings()))
    return page(
        request,
        "inbox.html",
        title="inbox",
        entries=entries,
        mode=ui.settings().review.mode,
        folders=await folders(ui),
        live=await live_scopes(ui),
    )


async def run(request: Request) -> Response:
    ui = context(request)
    entry, patch = await review.show(ui.db, memory_repo(ui.settings()), arg(request, "id"))
    prefix = f"{entry.run.scope}/"
    topics, inputs = split_diff(patch, lambda path: is_input_path(path.removeprefix(prefix)))
    return page(
        request,
        "inbox_run.html",
        title=f"run {entry.run.run_id}",
        entry=entry,
        patch=diff_html(topics) if topics.strip() else None,
        inputs=diff_html(inputs) if inputs.strip() else None,
        inputs_files=inputs.count("diff --git "),
        folders=await folders(ui),
        live=await live_scopes(ui),
    )


async def accept(request: Request) -> Response:
    ui = context(request)
    run_id = await _run_id(request)
    async with ui.changing, runtime(ui) as rt:
        done = await actions.accept_run(rt, run_id)
    return page(
        request,
        "result.html",
        status_code=200 if done.ok else 500,
        title="accepted",
        ok=done.ok,
        lines=accepted_summary(done),
        details=done.lines(verbose=True),
    )


async def reject(request: Request) -> Response:
    ui = context(request)
    run_id = await _run_id(request)
    async with ui.changing, runtime(ui) as rt:
        row = await actions.reject_run(rt, run_id)
    return page(request, "result.html", title="rejected", ok=True, lines=[actions.rejected_line(row)])


async def _run_id(request: Request) -> str:
    run_id = (await checked_form(request, context(request).guard)).get("run", "")
    if not run_id:
        raise FormRefused("the form names no run")
    return run_id


routes = [
    Route("/inbox", listing),
    Route("/inbox/run", run),
    Route("/inbox/accept", accept, methods=["POST"]),
    Route("/inbox/reject", reject, methods=["POST"]),
]
