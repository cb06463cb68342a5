"""``memd mcp install/uninstall AGENT``: memd's MCP server in an agent's own configuration file.

The file is the agent's and the user's: memd edits one entry as text (``pipeline.mcp_clients``)
and every other byte stays; a file it cannot parse is refused, never overwritten. It is read with a
cap and never blocks (a FIFO or a device is refused), checked again right before the write (an
agent that rewrote it meanwhile, as Claude Code does with ``~/.claude.json``, is not overwritten),
and written atomically: a user's file may be a symlink only to a regular file the user owns; a
project's file is written only inside the project, never through a symlink.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import PublishError
from pipeline.mcp_clients import (
    ConfigError,
    McpClient,
    client,
    config_file,
    entry_in,
    install_text,
    installed_in,
    uninstall_text,
)
from pipeline.publish.atomic import UnsafeTarget, atomic_write_text, decode
from pipeline.publish.render import TOOLS_NOTE
from pipeline.safefile import UnsafeFile, read_capped

CONFIG_MAX_BYTES = 64_000_000
"""The most memd reads of an agent's configuration file (``~/.claude.json`` keeps every project's
history and grows to megabytes; the others hold a few kilobytes)."""


@dataclass(frozen=True)
class McpChange:
    agent: McpClient
    path: Path
    action: str
    """added, updated, unchanged, removed, absent."""
    before: str
    after: str

    def diff(self) -> str:
        """The change as a unified diff ("" when there is none)."""
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=str(self.path),
            tofile=str(self.path),
        )
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )


def read_config(path: Path, *, follow_link: bool) -> str:
    """The file's text, "" when it is absent; ``PublishError`` when memd must not read it."""
    try:
        return decode(read_capped(path, CONFIG_MAX_BYTES, follow_symlinks=follow_link))
    except FileNotFoundError:
        return ""
    except UnsafeFile as exc:
        raise PublishError(f"{exc}; memd will not read or change it") from None


def is_installed(agent: McpClient, env: Mapping[str, str], project: Path | None = None) -> bool:
    """Whether memd's server is in the agent's user file (``project`` None) or in ``project``'s
    file (a file memd cannot read or parse counts as without it)."""
    path = config_file(agent, env, project)
    try:
        text = read_config(path, follow_link=project is None)
    except (PublishError, OSError):
        return False
    return installed_in(agent, text)


def install(
    agent: McpClient,
    env: Mapping[str, str],
    command: Sequence[str],
    *,
    project: Path | None = None,
    dry_run: bool = False,
) -> McpChange:
    """memd's entry (``command``) in the agent's user file, or in ``project``'s."""
    path = config_file(agent, env, project)
    before = read_config(path, follow_link=project is None)
    try:
        had = entry_in(agent, before)
        after = install_text(agent, before, command)
    except ConfigError as exc:
        raise PublishError(f"{path}: {exc}; memd will not change it") from None
    action = "unchanged" if after == before else ("updated" if had is not None else "added")
    return _finish(McpChange(agent, path, action, before, after), project, dry_run)


def uninstall(
    agent: McpClient, env: Mapping[str, str], *, project: Path | None = None, dry_run: bool = False
) -> McpChange:
    """The agent's file without memd's entry."""
    path = config_file(agent, env, project)
    before = read_config(path, follow_link=project is None)
    try:
        after = uninstall_text(agent, before)
    except ConfigError as exc:
        raise PublishError(f"{path}: {exc}; memd will not change it") from None
    action = "removed" if after != before else "absent"
    return _finish(McpChange(agent, path, action, before, after), project, dry_run)


def _finish(change: McpChange, project: Path | None, dry_run: bool) -> McpChange:
    if dry_run or change.after == change.before:
        return change
    path = change.path
    if read_config(path, follow_link=project is None) != change.before:
        raise PublishError(f"{path} changed while memd was editing it; nothing was written, try again")
    try:
        atomic_write_text(path, change.after, within=project, follow_link=project is None)
    except UnsafeTarget as exc:
        raise PublishError(f"{exc}; left alone") from None
    return change


@dataclass
class McpInstalls:
    """Which agents have memd's MCP server installed, as one publish asks (each file read once):
    the block an agent loads names the tools only where ``memd mcp install`` put them (in the
    user's file, or in the project's for that project's block). Without an environment (a context
    made elsewhere than ``publish_all``) no agent has it."""

    env: Mapping[str, str] | None = None
    _seen: dict[tuple[str, str | None], bool] = field(default_factory=dict, repr=False)

    def installed(self, source: str, project: str | None = None) -> bool:
        """In the user's file, or in ``project``'s."""
        return self._file(source, None) or (project is not None and self._file(source, project))

    def _file(self, source: str, project: str | None) -> bool:
        if self.env is None:
            return False
        key = (source, project)
        if key not in self._seen:
            folder = Path(project) if project else None
            self._seen[key] = is_installed(client(source), self.env, folder)
        return self._seen[key]

    def note(self, *sources: str, project: str | None = None) -> str | None:
        """``render.TOOLS_NOTE`` when any of ``sources`` (the agents that load a block) has memd's server."""
        return TOOLS_NOTE if any(self.installed(s, project) for s in sources) else None
