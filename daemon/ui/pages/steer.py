"""One memory, steered from its topic page: edit (a form holding its body), forget (after a
confirmation) and pin or unpin, each a POST carrying the page's CSRF token that calls
``daemon.usecases.memories`` (what `memd memories edit|forget|pin|unpin` do): one commit authored by the
person, pushed and published at once."""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from daemon.runtime import memory_repo
from daemon.ui.pages import arg, context, runtime
from daemon.ui.render import page, scope_url, topic_url
from daemon.ui.security import FormRefused, checked_form
from daemon.ui.summary import steered_summary
from daemon.usecases import memories
from daemon.words import steer_lines
from pipeline.errors import MemoryRepoError
from pipeline.memory import frontmatter, read
from pipeline.projects.scopes import topic_id_text


async def _topic(request: Request) -> tuple[str, str, str]:
    """The scope, file and text of the topic the query names (404 when there is none)."""
    name, file = arg(request, "scope"), arg(request, "file")
    try:
        text = await asyncio.to_thread(read.topic_text, memory_repo(context(request).settings()), name, file)
    except MemoryRepoError as exc:
        raise HTTPException(404, str(exc)) from None
    return name, file, text


async def edit_form(request: Request) -> Response:
    name, file, text = await _topic(request)
    try:
        body = frontmatter.parse(text).body
    except frontmatter.FrontmatterError:
        body = text
    return page(
        request,
        "steer_edit.html",
        title=f"edit {topic_id_text(name, file)}",
        scope=name,
        file=file,
        body=body.lstrip("\n"),
        topic_url=topic_url(name, file),
    )


async def forget_confirm(request: Request) -> Response:
    name, file, text = await _topic(request)
    try:
        meta = frontmatter.parse(text).meta
    except frontmatter.FrontmatterError:
        meta = None
    return page(
        request,
        "steer_forget.html",
        title=f"forget {topic_id_text(name, file)}",
        scope=name,
        file=file,
        meta=meta,
        topic_url=topic_url(name, file),
    )


async def _memory(request: Request) -> tuple[dict[str, str], str, str]:
    fields = await checked_form(request, context(request).guard)
    name, file = fields.get("scope", ""), fields.get("file", "")
    if not name or not file:
        raise FormRefused("the form names no memory")
    return fields, name, file


async def edit(request: Request) -> Response:
    ui = context(request)
    fields, name, file = await _memory(request)
    body = fields.get("body", "")
    if not body.strip():
        raise FormRefused("the new text is empty: to remove this memory, forget it")
    async with ui.changing, runtime(ui) as rt:
        done = await memories.edit_memory(rt, topic_id_text(name, file), body)
    return _done(request, done, "edited", "edit", back=topic_url(name, file))


async def forget(request: Request) -> Response:
    ui = context(request)
    _, name, file = await _memory(request)
    async with ui.changing, runtime(ui) as rt:
        done = await memories.forget_memory(rt, topic_id_text(name, file))
    return _done(request, done, "forgotten", "forget", back=scope_url(name))


async def pin(request: Request) -> Response:
    ui = context(request)
    fields, name, file = await _memory(request)
    pinned = fields.get("pinned") == "true"
    async with ui.changing, runtime(ui) as rt:
        done = await memories.pin_memory(rt, topic_id_text(name, file), pinned=pinned)
    done_title, title = ("pinned", "pin") if pinned else ("unpinned", "unpin")
    return _done(request, done, done_title, title, back=topic_url(name, file))


def _done(request: Request, done: memories.SteerDone, done_title: str, title: str, *, back: str) -> Response:
    """The result: titled by what was done (``done_title``) only when every published copy was
    written; else by the action, with the copies that still hold the memory as it was."""
    return page(
        request,
        "result.html",
        status_code=200 if done.ok else 500,
        title=done_title if done.ok else title,
        ok=done.ok,
        lines=steered_summary(done),
        details=steer_lines(done, verbose=True),
        back=back,
    )


routes = [
    Route("/memory/edit", edit_form),
    Route("/memory/edit", edit, methods=["POST"]),
    Route("/memory/forget", forget_confirm),
    Route("/memory/forget", forget, methods=["POST"]),
    Route("/memory/pin", pin, methods=["POST"]),
]
