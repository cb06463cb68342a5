"""One module per page of `memd ui`, each with its ``routes``; ``arg``, ``context``, ``runtime``,
``folders`` and ``live_scopes`` serve them all."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.exceptions import HTTPException
from starlette.requests import Request

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from daemon.ui.context import UIContext

MAX_ARG_CHARS = 500


def context(request: Request) -> UIContext:
    ui: UIContext = request.app.state.ui
    return ui


@contextlib.asynccontextmanager
async def runtime(ui: UIContext) -> AsyncIterator[Runtime]:
    """The parts one change needs, around the page's open store (the model client it made is
    closed after the change)."""
    from daemon.runtime import Runtime

    rt = Runtime(ui.db, ui.settings, clock=ui.clock, env=ui.env)
    try:
        yield rt
    finally:
        await rt.aclose()


def arg(request: Request, name: str, *, default: str | None = None) -> str:
    """A query parameter (400 when a required one is missing or absurdly long)."""
    value = request.query_params.get(name, default)
    if value is None or value == "":
        if default is not None:
            return default
        raise HTTPException(400, f"missing ?{name}=")
    if len(value) > MAX_ARG_CHARS:
        raise HTTPException(400, f"?{name}= is too long")
    return value


async def folders(ui: UIContext) -> dict[str, list[str]]:
    """Each scope's project folders (none when the store cannot be read: the page still shows)."""
    from daemon.ui import data
    from pipeline.store.read.rows import StoreUnavailable

    try:
        return await ui.read(data.folders)
    except StoreUnavailable:
        return {}


async def live_scopes(ui: UIContext) -> set[str]:
    """The scopes the memory repository holds now (a forgotten or cleared one is not among them)."""
    from daemon.runtime import memory_repo
    from pipeline.memory import read

    return set(await asyncio.to_thread(read.scopes, memory_repo(ui.settings())))
