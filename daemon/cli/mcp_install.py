"""`memd mcp install/uninstall AGENT [--project DIR] [--dry-run]`: memd's MCP server in an agent's
own configuration (each agent whose folder gives an ``McpClient``: ``pipeline.mcp_clients.clients()``).

The entry starts this memd by its absolute path (the ``memd`` script beside this Python, else
``python -P -m daemon``), with ``--config`` when one was named, and without ``--cwd``: the agent
starts it in the session's folder. Every other byte of the agent's file stays.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from pipeline.mcp_clients import clients

AGENTS = tuple(clients())
_PROJECT_HELP = "Write the project's own file in DIR (e.g. .mcp.json) instead of the user's."
_DRY_HELP = "Print the change to the file; write nothing."

F = TypeVar("F", bound=Callable[..., Any])


def where(command: F) -> F:
    """AGENT, ``--project DIR`` and ``--dry-run``: what install and uninstall both take."""
    options = (
        click.argument("agent", type=click.Choice(AGENTS)),
        click.option(
            "--project",
            type=click.Path(path_type=Path, file_okay=False, exists=True),
            default=None,
            help=_PROJECT_HELP,
        ),
        click.option("--dry-run", is_flag=True, help=_DRY_HELP),
    )
    for option in reversed(options):
        command = option(command)
    return command


@click.command("install")
@where
@pass_ctx
def install_command(ctx: CliContext, agent: str, project: Path | None, dry_run: bool) -> None:
    """Put memd's MCP server into AGENT's own configuration."""
    import os

    from pipeline.errors import PublishError
    from pipeline.mcp_clients import client, server_command
    from pipeline.publish.mcp_install import install

    command = server_command(memd_program(), _named_config(ctx))
    try:
        change = install(
            client(agent),
            os.environ,
            command,
            project=_absolute(project),
            dry_run=dry_run,
            records=_records(ctx),
        )
    except PublishError as exc:
        fail(str(exc))
    if dry_run:
        _print_dry(change.diff(), change.path)
        return
    label = change.agent.label
    messages = {
        "added": f"added memd's MCP server to {label} in {change.path}: {' '.join(command)}",
        "updated": f"updated memd's MCP server for {label} in {change.path}: {' '.join(command)}",
        "unchanged": f"memd's MCP server is already in {change.path}",
    }
    click.echo(messages[change.action])
    if project is not None and change.agent.project_note:
        click.echo(change.agent.project_note)


@click.command("uninstall")
@where
@pass_ctx
def uninstall_command(ctx: CliContext, agent: str, project: Path | None, dry_run: bool) -> None:
    """Take memd's MCP server (only it) out of AGENT's configuration."""
    import os

    from pipeline.errors import PublishError
    from pipeline.mcp_clients import client
    from pipeline.publish.mcp_install import uninstall

    try:
        change = uninstall(
            client(agent), os.environ, project=_absolute(project), dry_run=dry_run, records=_records(ctx)
        )
    except PublishError as exc:
        fail(str(exc))
    if dry_run:
        _print_dry(change.diff(), change.path)
        return
    if change.action == "removed" and change.deleted:
        click.echo(f"removed memd's MCP server from {change.path}, and the file, which memd had created")
    elif change.action == "removed":
        click.echo(f"removed memd's MCP server from {change.path}")
    else:
        click.echo(f"no memd MCP server in {change.path}")


def memd_program() -> list[str]:
    """This memd, by absolute path: the ``memd`` script installed beside this Python (its own
    interpreter and packages), else this Python with ``-P`` (so the session's folder, where the
    agent starts the server, is not put on the import path: a project holding a ``daemon`` or
    ``pipeline`` package cannot stand in for memd's)."""
    python = Path(sys.executable)
    if not python.is_absolute():  # pragma: no cover - an embedded interpreter
        python = Path.cwd() / python
    script = python.parent / "memd"
    if script.is_file():
        return [str(script)]
    return [str(python), "-P", "-m", "daemon"]


def _records(ctx: CliContext) -> Path:
    """Where install records what it changed, for uninstall (``pipeline.publish.mcp_install``)."""
    from pipeline.publish.mcp_install import RECORDS_FILE

    return Path(ctx.loaded().settings.paths.state_dir) / RECORDS_FILE


def _named_config(ctx: CliContext) -> Path | None:
    import os

    from daemon.config import resolve_config_path

    path, named = resolve_config_path(ctx.config_path, os.environ)
    return path.resolve() if named else None


def _absolute(project: Path | None) -> Path | None:
    return project.resolve() if project is not None else None


def _print_dry(diff: str, path: Path) -> None:
    if diff:
        click.echo(diff, nl=False)
    else:
        click.echo(f"# {path} would not change")
