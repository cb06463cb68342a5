"""The page's application: ``create_app(context)`` builds the Starlette app the daemon and `memd ui` serve.

One ``UIContext`` holds what every handler needs (the settings, the open store for the changes,
the clock, the guard of ``daemon.ui.security``); the handlers live one module per page under
``daemon.ui.pages`` and read through ``UIContext.read`` (the status reader, in a worker thread) or
the store, and change memory only through ``daemon.usecases.changes``, one change at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from daemon.ui.context import UIContext
from daemon.ui.pages import inbox, memory, overview, sessions, steer
from daemon.ui.render import STATIC, page
from daemon.ui.security import FormRefused, SecurityMiddleware
from pipeline.errors import MemdError


async def healthz(request: Request) -> Response:
    """Which installation serves this page (a value made from its token, not the token), and
    whether it is read-only."""
    guard = request.app.state.ui.guard
    return JSONResponse({"service": "memd-ui", "id": guard.public_id, "read_only": guard.read_only})


async def _refused(request: Request, exc: Exception) -> Response:
    return page(request, "result.html", status_code=403, title="refused", ok=False, lines=[str(exc)])


async def _memd_error(request: Request, exc: Exception) -> Response:
    return page(request, "result.html", status_code=409, title="failed", ok=False, lines=[str(exc)])


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return page(
        request,
        "result.html",
        status_code=exc.status_code,
        title=str(exc.status_code),
        ok=False,
        lines=[exc.detail],
    )


def create_app(context: UIContext) -> Starlette:
    routes = [
        Route("/healthz", healthz),
        *overview.routes,
        *memory.routes,
        *steer.routes,
        *inbox.routes,
        *sessions.routes,
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if context.store is not None:
            try:
                yield
            finally:
                await context.reader.close()
            return
        from daemon.runtime import Runtime

        async with Runtime.open(context.settings, clock=context.clock, env=context.env) as rt:
            context.store = rt.store
            try:
                yield
            finally:
                await context.reader.close()
                context.store = None

    app = Starlette(
        lifespan=lifespan,
        routes=routes,
        middleware=[Middleware(SecurityMiddleware, guard=context.guard)],
        exception_handlers={
            FormRefused: _refused,
            MemdError: _memd_error,
            HTTPException: _http_error,
        },
    )
    app.state.ui = context
    return app
