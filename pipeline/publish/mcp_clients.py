"""Installing memd's MCP server into an agent's own configuration: the edits, as pure functions
(text in, text out).

Each agent says where it keeps its MCP servers (for the user, and for one project), in which
format, and the entry that starts memd, in its folder (``pipeline/agents/<name>/``: its
``McpClient``); every entry is keyed by the server's name ``memd`` (so Claude Code shows the tools
as ``mcp__memd__memory_search``). ``install_text``/``uninstall_text``/``installed_in`` are pure, on
``pipeline.publish.jsonedit`` and ``pipeline.publish.tomledit``, which keep every other byte of the file. Standard
library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline import roster
from pipeline.roster import SERVER, Env, McpClient

__all__ = [
    "SERVER",
    "TOOLS",
    "ConfigError",
    "Env",
    "NoProjectFile",
    "McpClient",
    "client",
    "clients",
    "stdio",
]

TOOLS = ("memory_search", "memory_get")
"""The tools the session-start memory names (the server's read tools)."""


class ConfigError(ValueError):
    """An agent's MCP configuration file memd cannot edit (not its format, not an object)."""


class NoProjectFile(ConfigError):
    """A project's MCP file asked of an agent that has none."""


def stdio(command: Sequence[str]) -> dict[str, Any]:
    """The usual entry of a stdio server: ``{"command", "args"}``."""
    return {"command": command[0], "args": list(command[1:])}


def clients() -> dict[str, McpClient]:
    """Every agent memd's server can be installed into, by its ``memd mcp install`` name, in the
    registry's order."""
    return {agent.mcp.name: agent.mcp for agent in roster.agents() if agent.mcp is not None}


def client(name: str) -> McpClient:
    """The agent called ``name`` (``claude-code``) or by its source name (``claude_code``)."""
    known = clients()
    found = known.get(name) or next((c for c in known.values() if c.source == name), None)
    if found is None:
        raise KeyError(name)
    return found


def config_file(agent: McpClient, env: Env, project: Path | None = None) -> Path:
    """The file ``memd mcp install`` edits: the project's when ``project`` is given, else the user's;
    ``NoProjectFile`` for a project of an agent that reads the user's file only."""
    if project is None:
        return agent.user_file(env)
    if agent.project_file is None:
        raise NoProjectFile(
            f"{agent.label} reads MCP servers from the user's file only ({agent.user_file(env)}), "
            f"never from a project's: install without --project"
        )
    return agent.project_file(project)


def install_text(agent: McpClient, text: str, command: Sequence[str]) -> str:
    """``text`` (the file's content, "" when absent) with memd's entry, every other byte kept."""
    from pipeline.publish import jsonedit, tomledit  # editors: not for the settings' agent records

    entry = agent.entry(command)
    try:
        if agent.format == "toml":
            return tomledit.set_table(text, agent.path, entry)
        return jsonedit.set_entry(text, agent.path, entry, jsonc=agent.format == "jsonc")
    except (jsonedit.JsonEditError, tomledit.TomlEditError) as exc:
        raise ConfigError(str(exc)) from None


def uninstall_text(agent: McpClient, text: str, *, drop_containers: int = 0) -> str:
    """``text`` without memd's entry, and without the ``drop_containers`` innermost containers it
    leaves empty (the ones memd's install made: ``created_containers``; an empty container the user
    had stays); ``text`` when it has none."""
    from pipeline.publish import jsonedit, tomledit  # editors: not for the settings' agent records

    try:
        if agent.format == "toml":  # a table's implicit parent goes with it, an explicit one stays
            return tomledit.remove_table(text, agent.path)
        return jsonedit.remove_entry(
            text, agent.path, jsonc=agent.format == "jsonc", drop_objects=drop_containers
        )
    except (jsonedit.JsonEditError, tomledit.TomlEditError) as exc:
        raise ConfigError(str(exc)) from None


def created_containers(agent: McpClient, text: str) -> int:
    """How many of the containers around memd's entry installing into ``text`` makes (0 for TOML,
    whose ``[mcp_servers.memd]`` makes no header of its parent)."""
    from pipeline.publish import jsonedit  # an editor: not for the settings' agent records

    if agent.format == "toml":
        return 0
    try:
        return jsonedit.absent_objects(text, agent.path, jsonc=agent.format == "jsonc")
    except jsonedit.JsonEditError as exc:
        raise ConfigError(str(exc)) from None


def leftover(agent: McpClient) -> str:
    """What is left of a file memd's install made once its entry is out again (``{}`` and a newline,
    or nothing): such a file holds nothing but what memd put there."""
    made = install_text(agent, "", ["memd"])
    return uninstall_text(agent, made, drop_containers=len(agent.container))


def entry_in(agent: McpClient, text: str) -> Any:
    """memd's entry in ``text`` as the agent reads it, or None."""
    from pipeline.publish import jsonedit, tomledit  # editors: not for the settings' agent records

    if SERVER not in text:  # no parse of a large file (``~/.claude.json``) that cannot hold it
        return None
    try:
        if agent.format == "toml":
            return tomledit.get_table(text, agent.path)
        return jsonedit.get_entry(text, agent.path, jsonc=agent.format == "jsonc")
    except (jsonedit.JsonEditError, tomledit.TomlEditError) as exc:
        raise ConfigError(str(exc)) from None


def installed_in(agent: McpClient, text: str) -> bool:
    """Whether ``text`` holds a memd server the agent starts (an entry OpenCode or Gemini would skip
    as disabled does not count)."""
    try:
        entry = entry_in(agent, text)
    except ConfigError:
        return False
    if not isinstance(entry, dict):
        return False
    return entry.get("enabled", True) is not False and entry.get("disabled", False) is not True


def server_command(program: Sequence[str], config: Path | None = None) -> list[str]:
    """The command line that starts memd's server: ``program`` (memd's own, absolute), then
    ``--config PATH`` when one was named, then ``mcp``. No ``--cwd``: every agent starts it in the
    session's own folder, which is the project it serves."""
    return [*program, *(["--config", str(config)] if config is not None else []), "mcp"]
