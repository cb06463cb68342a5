"""Sessions: every session with its state and reason; one session with what memd sent about it (its
extracts: summary, notes and memories), what the redactor replaced in it (counts by rule) and the
topic files citing it; and forgetting a session or a project after a confirmation
(``daemon.usecases.changes.forget_now``, what `memd forget` does)."""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from daemon.runtime import memory_repo
from daemon.ui import data
from daemon.ui.context import UIContext
from daemon.ui.pages import arg, context, folders, live_scopes, runtime
from daemon.ui.render import markdown, page
from daemon.ui.security import FormRefused, checked_form
from daemon.ui.summary import forgotten_summary
from daemon.usecases import changes
from daemon.words import forgotten_lines, no_key_warning
from pipeline.consolidate.forget import scope_of_project
from pipeline.memory import read
from pipeline.store.read.rows import StoreUnavailable
from pipeline.vocabulary import TranscriptState


async def listing(request: Request) -> Response:
    ui = context(request)
    state = request.query_params.get("state") or None
    if state is not None and state not in {s.value for s in TranscriptState}:
        raise HTTPException(400, f"no state {state[:40]!r}")
    try:
        number = int(request.query_params.get("page", "1"))
    except ValueError:
        raise HTTPException(400, "?page= is a number") from None
    try:
        machine = ui.db.machine
        found = await ui.read(
            lambda rows: data.sessions_page(rows, machine=machine, state=state, page=number)
        )
    except StoreUnavailable as exc:
        raise HTTPException(503, str(exc)) from None
    return page(
        request, "sessions.html", title="sessions", found=found, states=[s.value for s in TranscriptState]
    )


async def detail(request: Request) -> Response:
    ui = context(request)
    needle = arg(request, "session")
    try:
        machine = ui.db.machine
        found, folders = await ui.read(
            lambda rows: (data.session_detail(rows, needle, machine), data.folders(rows))
        )
    except StoreUnavailable as exc:
        raise HTTPException(503, str(exc)) from None
    cited = await asyncio.to_thread(read.citing, memory_repo(ui.settings()), found.session_ids)
    return page(
        request,
        "session.html",
        title=f"session {needle}",
        found=found,
        folders=folders,
        live=await live_scopes(ui),
        cited=cited,
        markdown=markdown,
    )


async def confirm(request: Request) -> Response:
    """What forgetting will do, and the button that does it (a POST)."""
    session, project = request.query_params.get("session"), request.query_params.get("project")
    scope = _target(session, project, await _known(context(request)))
    return page(
        request,
        "confirm.html",
        title="forget",
        session=session,
        project=project,
        scope=scope,
        folders=(await folders(context(request))).get(scope or "", []),
    )


async def forget(request: Request) -> Response:
    ui = context(request)
    fields = await checked_form(request, ui.guard)
    session, project = fields.get("session") or None, fields.get("project") or None
    try:
        scope = _target(session, project, await _known(ui))
    except HTTPException as exc:
        raise FormRefused(exc.detail) from None
    async with ui.changing, runtime(ui) as rt:
        done = await changes.forget_now(rt, session_id=session, project=scope)
    return page(
        request,
        "result.html",
        status_code=200 if done.ok else 500,
        title="forgotten" if done.ok else "forget",
        ok=done.ok,
        lines=forgotten_summary(done),
        details=([f"note: {no_key_warning(done.no_key)}"] if done.no_key is not None else [])
        + forgotten_lines(done, verbose=True),
    )


async def _known(ui: UIContext) -> set[str]:
    """The scopes a project may be named by (their short names): those the memory repository holds
    and those sessions were recorded for."""
    return await live_scopes(ui) | set(await folders(ui))


def _target(session: str | None, project: str | None, known: set[str]) -> str | None:
    """The scope a project names (None for a session): a key, its short name, or a folder (absolute:
    the page has no working directory); 400 unless exactly one is given and valid."""
    if (session is None) == (project is None):
        raise HTTPException(400, "give exactly one of ?session= or ?project=")
    if project is None:
        return None
    try:
        return scope_of_project(project, known=known)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


routes = [
    Route("/sessions", listing),
    Route("/sessions/detail", detail),
    Route("/forget", confirm),
    Route("/forget", forget, methods=["POST"]),
]
