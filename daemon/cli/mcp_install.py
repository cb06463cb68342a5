"""`memd mcp install/uninstall AGENT [--project DIR] [--dry-run]`: memd's MCP server in an agent's
own configuration (each agent whose folder gives an ``McpClient``: ``pipeline.publish.mcp_clients.clients()``).

The entry starts this memd by its absolute path (the ``memd`` script beside this Python, else
``python -P -m daemon``; for an editable install in memd's own checkout, the ``memd`` a tool install
put on ``$PATH`` outside it, so deleting the clone breaks no agent), with ``--config`` when one was named, and without ``--cwd``: the agent
starts it in the session's folder. Every other byte of the agent's file stays.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from pipeline.publish.mcp_clients import clients

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
    from pipeline.errors import PublishError
    from pipeline.publish.mcp_clients import client, server_command
    from pipeline.publish.mcp_install import install

    program = memd_program()
    command = server_command(program, _named_config(ctx))
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
    note = checkout_note(program)
    if dry_run:
        _print_dry(change.diff(), change.path)
        if note is not None:
            click.echo(note, err=True)
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
    if note is not None:
        click.echo(note, err=True)


@click.command("uninstall")
@where
@pass_ctx
def uninstall_command(ctx: CliContext, agent: str, project: Path | None, dry_run: bool) -> None:
    """Take memd's MCP server (only it) out of AGENT's configuration."""
    import os

    from pipeline.errors import PublishError
    from pipeline.publish.mcp_clients import client
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


SOURCE = Path(__file__).resolve().parents[2]
"""The folder that holds memd's packages: a checkout for an editable install, else site-packages."""


def memd_program(python: Path | None = None, source: Path = SOURCE, path: str | None = None) -> list[str]:
    """This memd, by absolute path: the ``memd`` script installed beside this Python (its own
    interpreter and packages), else this Python with ``-P`` (so the session's folder, where the
    agent starts the server, is not put on the import path: a project holding a ``daemon`` or
    ``pipeline`` package cannot stand in for memd's).

    A script inside memd's own checkout (an editable install in the clone's ``.venv``) dies with
    the clone: the first ``memd`` on ``path`` (default ``$PATH``) outside the checkout (a ``pipx`` or
    ``uv tool`` install, whose command stays where it is across upgrades) is written instead, as
    found (not resolved); without one the checkout's script stays, and ``checkout_note`` says so."""
    python = Path(sys.executable) if python is None else python
    if not python.is_absolute():  # pragma: no cover - an embedded interpreter
        python = Path.cwd() / python
    script = python.parent / "memd"
    if not script.is_file():
        return [str(python), "-P", "-m", "daemon"]
    if not _inside(script, source):
        return [str(script)]
    for folder in (os.environ.get("PATH", "") if path is None else path).split(os.pathsep):
        found = Path(folder) / "memd"
        usable = folder and found.is_absolute() and found.is_file() and os.access(found, os.X_OK)
        if usable and not _inside(found, source):
            return [str(found)]
    return [str(script)]


def checkout_note(program: list[str], source: Path = SOURCE) -> str | None:
    """What to say when the command written lives inside memd's checkout, else ``None``."""
    if not _inside(Path(program[0]), source):
        return None
    return (
        f"note: this command is inside memd's checkout {source}: deleting or moving the clone breaks "
        "the agent's entry; install memd as a tool (pipx install or uv tool install) and run this again"
    )


def _inside(file: Path, folder: Path) -> bool:
    return Path(os.path.realpath(file)).is_relative_to(folder) or file.absolute().is_relative_to(folder)


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
