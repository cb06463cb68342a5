"""`memd mcp [--cwd DIR]`: a stdio MCP server agents ask mid-session (``daemon.mcp``).

The group runs the server when no subcommand is given; its subcommands (``install``,
``uninstall``) live in modules of their own, listed in ``SUBCOMMANDS`` and imported only when
run. Standard output is the MCP stream (written only through ``daemon.mcp.stdio``), so nothing
else is ever printed there; problems go to stderr. It reads the memory repository's working tree and the state store (never
creating or migrating either) and records only the uses of what it returns.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from daemon.cli import LazyCommands
from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit

SUBCOMMANDS: dict[str, str] = {
    "install": "daemon.cli.mcp_install:install_command",
    "uninstall": "daemon.cli.mcp_install:uninstall_command",
}
"""Each subcommand of `memd mcp` as ``"module:attribute"`` (a click command), imported on first use."""


class McpGroup(LazyCommands):
    """`memd mcp`: the server without a subcommand; each subcommand imported only when it runs."""

    lazy = SUBCOMMANDS


@click.group("mcp", cls=McpGroup, invoke_without_command=True)
@click.option(
    "--cwd",
    "cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The session's directory, whose project is searched first (default: here, as the agent starts it).",
)
@pass_ctx
@click.pass_context
def mcp_group(click_ctx: click.Context, ctx: CliContext, cwd: Path | None) -> None:
    """Serve memd's memory over MCP on stdin/stdout: memory_search, memory_get, memory_remember,
    memory_feedback."""
    if click_ctx.invoked_subcommand is not None:
        return
    from daemon.lean.settings import ConfigError, read_settings

    try:
        settings = read_settings(ctx.config_path)
    except ConfigError as exc:
        fail(f"config error: {exc}", Exit.CONFIG)
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))

    from daemon.mcp import stdio

    def serve(stdin: stdio.Input, stdout: stdio.Output) -> None:
        from daemon.mcp.deps import Deps
        from daemon.mcp.server import serve
        from pipeline.clock import SystemClock

        ctx.configure_logging()
        deps = Deps.make(
            memory_dir=settings.memory_dir,
            state_dir=settings.state_dir,
            state_db=settings.state_db,
            cwd=here,
            clock=SystemClock(),
            config_path=ctx.config_path,
        )
        serve(deps, stdin, stdout)

    stdio.run(serve)  # ends the process: 0, or 1 (Exit.FAILED) when the server could not serve
