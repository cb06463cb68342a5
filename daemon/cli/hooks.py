"""`memd hooks install|uninstall claude-code [--dry-run]`: `memd recall` as a Claude Code SessionStart hook.

For users who prefer a hook to the auto-memory folder. The hook entry is merged into
``~/.claude/settings.json`` (the Claude Code root's parent, from ``[sources.claude_code] root``):
every other key and hook is kept, and installing twice changes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from pipeline import roster

AGENTS = tuple(agent.cli_name for agent in roster.hooked())


@click.group("hooks")
def hooks_group() -> None:
    """Install or remove memd's session-start hooks in agents."""


@hooks_group.command("install")
@click.argument("agent", type=click.Choice(AGENTS))
@click.option("--dry-run", is_flag=True, help="Print the settings file as it would be; write nothing.")
@pass_ctx
def install(ctx: CliContext, agent: str, dry_run: bool) -> None:
    """Add `memd recall` as AGENT's SessionStart hook."""
    from pipeline.errors import PublishError
    from pipeline.publish.hooks import install_claude_hook, recall_command

    path, config = _paths(ctx, agent)
    command = recall_command(sys.executable, config)
    try:
        change = install_claude_hook(path, command, dry_run=dry_run)
    except PublishError as exc:
        fail(str(exc))
    _report(change.action, change.path, change.text, dry_run, command)


@hooks_group.command("uninstall")
@click.argument("agent", type=click.Choice(AGENTS))
@click.option("--dry-run", is_flag=True, help="Print the settings file as it would be; write nothing.")
@pass_ctx
def uninstall(ctx: CliContext, agent: str, dry_run: bool) -> None:
    """Remove memd's SessionStart hook from AGENT's settings."""
    from pipeline.errors import PublishError
    from pipeline.publish.hooks import uninstall_claude_hook

    path, _ = _paths(ctx, agent)
    try:
        change = uninstall_claude_hook(path, dry_run=dry_run)
    except PublishError as exc:
        fail(str(exc))
    _report(change.action, change.path, change.text, dry_run, None)


def _paths(ctx: CliContext, name: str) -> tuple[Path, Path | None]:
    """The agent's settings file, and the config file the hook must name (when one was named here)."""
    import os

    from daemon.config import resolve_config_path
    from pipeline.publish.plan import Homes

    loaded = ctx.loaded()
    _, named = resolve_config_path(ctx.config_path, os.environ)
    config = loaded.path.resolve() if named else None
    agent = next(a for a in roster.hooked() if a.cli_name == name)
    root = Homes.from_settings(loaded.settings).root(agent.name)
    return roster.session_hook(agent).settings_file(root), config


def _report(action: str, path: Path, text: str, dry_run: bool, command: str | None) -> None:
    if dry_run:
        click.echo(f"# {path} would be ({action}):")
        click.echo(text, nl=False)
        return
    messages = {
        "added": f"added the SessionStart hook to {path}: {command}",
        "updated": f"updated memd's SessionStart hook in {path}: {command}",
        "unchanged": f"memd's SessionStart hook is already in {path}",
        "removed": f"removed memd's SessionStart hook from {path}",
        "absent": f"no memd hook in {path}",
    }
    click.echo(messages[action])
