"""Serving the page with uvicorn: inside the daemon (``serve``, one of its tasks) or alone (`memd ui`).

The socket is bound here, so a taken port is an ``OSError`` the caller words (uvicorn would exit
the process); uvicorn never installs signal handlers of its own (the daemon's and `memd ui`'s
stay in charge). ``probe`` asks an address whether this installation's page answers there, and
whether it is read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
import uvicorn

from daemon.ui.app import create_app
from daemon.ui.context import UIContext
from daemon.ui.security import WILDCARD, Guard, load_or_create_token

if TYPE_CHECKING:
    from pipeline.clock import Clock
    from pipeline.settings import Settings
    from pipeline.store import Store

log = structlog.get_logger(__name__)

GRACEFUL_S = 3.0
PROBE_TIMEOUT_S = 1.5


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handling."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: any free port); ``OSError`` when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, so asyncio sets TCP_NODELAY on each connection (else a keep-alive answer
    # waits ~40 ms on Nagle and delayed ACKs); set here too, for the connections that inherit it.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def build(
    settings: Callable[[], Settings],
    store: Store,
    *,
    clock: Clock,
    config_path: Path,
    config_exists: bool,
    env: Mapping[str, str],
    host: str,
    port: int,
    read_only: bool,
) -> tuple[UIContext, _Server]:
    """The page's context and a server for it (not yet listening)."""
    token = load_or_create_token(settings().paths.state_dir)
    guard = Guard(token=token, host=host, port=port, read_only=read_only)
    context = UIContext(
        settings=settings,
        store=store,
        guard=guard,
        clock=clock,
        config_path=config_path,
        config_exists=config_exists,
        env=env,
    )
    config = uvicorn.Config(
        create_app(context),
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=int(GRACEFUL_S),
        proxy_headers=False,
    )
    return context, _Server(config)


async def serve(server: uvicorn.Server, sock: socket.socket) -> None:
    """Serve on ``sock`` until cancelled; then finish the requests in flight (a few seconds at most)."""
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        server.should_exit = True
        await asyncio.wait({task}, timeout=GRACEFUL_S + 1)
        raise
    finally:
        sock.close()


@dataclass(frozen=True)
class Served:
    """This installation's page, found answering at an address by another process."""

    read_only: bool
    """What the page said; a page that does not say counts as read-write."""


def probe(host: str, port: int, public_id: str) -> Served | None:
    """This installation's page (the one whose token makes ``public_id``) if it answers at host:port."""
    if port == 0:
        return None
    host = "127.0.0.1" if host in WILDCARD else host
    shown = f"[{host}]" if ":" in host else host
    request = urllib.request.Request(f"http://{shown}:{port}/healthz", headers={"Host": f"{shown}:{port}"})
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
            found = json.loads(response.read(4096))
    except (OSError, urllib.error.URLError, ValueError):
        return None
    if not (isinstance(found, dict) and found.get("service") == "memd-ui" and found.get("id") == public_id):
        return None
    return Served(read_only=found.get("read_only") is True)
