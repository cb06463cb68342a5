"""`memd mcp [--cwd DIR]`: a stdio MCP server agents ask mid-session (``daemon.mcp``).

The group runs the server when no subcommand is given; ``install``/``uninstall`` are subcommands
of their own modules. Standard output is the MCP stream, so nothing else is ever printed there;
problems go to stderr. It reads the memory repository's working tree and the state store (never
creating or migrating either) and records only the uses of what it returns.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit


@click.group("mcp", invoke_without_command=True)
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
    """Serve memd's memory over MCP on stdin/stdout (memory_search, memory_get)."""
    if click_ctx.invoked_subcommand is not None:
        return
    from daemon.lean.settings import ConfigError, read_settings
    from daemon.mcp.deps import Deps
    from daemon.mcp.server import serve
    from pipeline.clock import SystemClock

    ctx.configure_logging()
    try:
        settings = read_settings(ctx.config_path)
    except ConfigError as exc:
        fail(f"config error: {exc}", Exit.CONFIG)
    deps = Deps.make(
        memory_dir=settings.memory_dir,
        state_dir=settings.state_dir,
        state_db=settings.state_db,
        cwd=Path(os.path.abspath(cwd if cwd is not None else os.getcwd())),
        clock=SystemClock(),
        config_path=ctx.config_path,
    )
    serve(deps)


def _add_install_commands() -> None:
    """`memd mcp install/uninstall AGENT` (``daemon.cli.mcp_install``: click only at import)."""
    from daemon.cli.mcp_install import install_command, uninstall_command

    mcp_group.add_command(install_command)
    mcp_group.add_command(uninstall_command)


_add_install_commands()
