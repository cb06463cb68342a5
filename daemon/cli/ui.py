"""`memd ui [--host HOST] [--port PORT] [--read-only]`: the local web page to see and steer memory.

When another process (the daemon with ``[ui] enabled``, or another `memd ui`) already serves this
installation's page at the address, it prints that address with the installation's token and exits;
never when ``--read-only`` was asked and that page is read-write (it says so and exits 1).
Otherwise it serves the page itself, in the foreground, until Ctrl-C (or SIGTERM), printing the address once it listens. Every request needs the token
(it is in the printed address, then kept in a cookie); see ``daemon.ui.security``.

Exit status: 0 (another process serves it, or stopped by Ctrl-C); 1 when the port cannot be had
(or holds a read-write page when read-only was asked) or the store cannot be opened; 2 for a bad
config.
"""

from __future__ import annotations

import asyncio
import os
import signal

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit


@click.command("ui")
@click.option("--host", default=None, help="The address to listen on (default: [ui] host, 127.0.0.1).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="The port (default: [ui] port; 0: any free one).",
)
@click.option("--read-only", is_flag=True, default=None, help="Show memory, change nothing.")
@click.option("--no-open-check", is_flag=True, help="Serve here even if the daemon serves the page already.")
@pass_ctx
def ui_command(
    ctx: CliContext, host: str | None, port: int | None, read_only: bool | None, no_open_check: bool
) -> None:
    """Open memory in a browser: print the page's address (serving it here when no daemon does)."""
    loaded = ctx.loaded()
    settings = loaded.settings
    ui = settings.ui
    host = host or ui.host
    port = ui.port if port is None else port
    read_only = bool(read_only) or ui.read_only
    from daemon.ui import server
    from daemon.ui.security import LOOPBACK, Guard, load_or_create_token
    from pipeline.errors import MemdError

    try:
        token = load_or_create_token(settings.paths.state_dir)
    except MemdError as exc:
        fail(str(exc), Exit.FAILED)
    guard = Guard(token=token, host=host, port=port, read_only=read_only)
    served = None if no_open_check else server.probe(host, port, guard.public_id)
    if served is not None:
        where = f"another process serves this installation's page at {host}:{port}"
        if read_only and not served.read_only:  # its address with the token would let this user change memory
            fail(f"{where}, read-write; for a read-only page, serve one on another --port", Exit.FAILED)
        mode = " (read-only)" if served.read_only else ""
        click.echo(
            f"another process serves this installation's page{mode}: open {guard.address(with_token=True)}"
        )
        return
    ctx.configure_logging()
    if host not in LOOPBACK:
        click.echo(
            f"memd: the page listens on {host}: anyone who can reach it and has the token can change memory",
            err=True,
        )
    try:
        sock = server.bind(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc} (set [ui] port, or --port)", Exit.FAILED)

    async def go() -> None:
        from daemon.runtime import Runtime

        async with Runtime.open(settings, env=os.environ) as rt:
            context, web = server.build(
                rt.settings,
                rt.store,
                clock=rt.clock,
                config_path=loaded.path,
                config_exists=loaded.file_exists,
                env=os.environ,
                host=host,
                port=sock.getsockname()[1],
                read_only=read_only,
            )
            serving = asyncio.ensure_future(server.serve(web, sock))
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, serving.cancel)
            # The socket listens already: a browser that connects before uvicorn runs waits in its queue.
            mode = " (read-only)" if read_only else ""
            click.echo(f"memd ui{mode}: open {context.guard.address(with_token=True)}", nl=True)
            click.echo("Ctrl-C stops it.")
            try:
                await serving
            except asyncio.CancelledError:
                pass

    try:
        asyncio.run(go())
    except MemdError as exc:
        fail(str(exc), Exit.FAILED)
