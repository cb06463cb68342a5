"""`memd ui` when this installation's page already answers at the address: it says another process
serves it, and never hands out a read-write address when read-only was asked for."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from daemon.config import load_settings
from daemon.exits import Exit
from daemon.ui import server
from pipeline.clock import SystemClock
from pipeline.store import open_store
from tests.configs import write_config

TIMEOUT_S = 20


def _config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


@contextmanager
def page(config: Path, *, read_only: bool) -> Iterator[int]:
    """This installation's real page, served on a free loopback port by a thread; yields the port."""
    settings = load_settings(config).settings
    sock = server.bind("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    loop = asyncio.new_event_loop()
    task: list[asyncio.Task[None]] = []
    ready = threading.Event()

    async def go() -> None:
        store = await open_store(settings.paths.state_db)
        try:
            _, web = server.build(
                lambda: settings,
                store,
                clock=SystemClock(),
                config_path=config,
                config_exists=True,
                env=os.environ,
                host="127.0.0.1",
                port=port,
                read_only=read_only,
            )
            task.append(asyncio.ensure_future(server.serve(web, sock)))
            ready.set()
            try:
                await task[0]
            except asyncio.CancelledError:
                pass
        finally:
            await store.close()

    thread = threading.Thread(target=lambda: loop.run_until_complete(go()), daemon=True)
    thread.start()
    try:
        assert ready.wait(TIMEOUT_S)
        yield port  # the socket listens already: a request waits in its queue until uvicorn runs
    finally:
        loop.call_soon_threadsafe(task[0].cancel)
        thread.join(TIMEOUT_S)
        loop.close()


def test_read_only_never_gets_the_address_of_a_read_write_page(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with page(config, read_only=False) as port:
        told = CliRunner().invoke(cli, ["--config", str(config), "ui", "--read-only", "--port", str(port)])
    assert told.exit_code == Exit.FAILED, told.output
    assert "token=" not in told.output
    assert "the memd daemon serves the page" not in told.output
    assert f"another process serves this installation's page at 127.0.0.1:{port}" in told.output
    assert "read-write" in told.output
    assert "--port" in told.output  # how to have a read-only page: another port


def test_a_read_only_page_held_elsewhere_is_given_for_a_read_only_ask(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with page(config, read_only=True) as port:
        told = CliRunner().invoke(cli, ["--config", str(config), "ui", "--read-only", "--port", str(port)])
    assert told.exit_code == Exit.OK, told.output
    assert "the memd daemon serves the page" not in told.output
    assert (
        f"another process serves this installation's page (read-only): open http://127.0.0.1:{port}/?token="
        in told.output
    )


def test_a_read_write_ask_is_told_the_page_held_elsewhere_is_read_only(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with page(config, read_only=True) as port:
        told = CliRunner().invoke(cli, ["--config", str(config), "ui", "--port", str(port)])
    assert told.exit_code == Exit.OK, told.output
    assert (
        f"another process serves this installation's page (read-only): open http://127.0.0.1:{port}/?token="
        in told.output
    )
