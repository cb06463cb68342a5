"""The agents memd's MCP server can be installed into, as plain facts: where each keeps its MCP
servers (for the user, and for one project), in which format, and the entry that starts memd.

Each agent has its own file and shape, all keyed by the server's name ``memd`` (so Claude Code
shows the tools as ``mcp__memd__memory_search``):

- Claude Code: ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json`` when set) ``mcpServers``,
  or the project's ``.mcp.json``; ``{"type": "stdio", "command", "args", "env"}``;
- Codex: ``$CODEX_HOME/config.toml`` (or a trusted project's ``.codex/config.toml``), the table
  ``[mcp_servers.memd]`` with ``command`` and ``args``;
- Gemini CLI: ``~/.gemini/settings.json`` or the project's ``.gemini/settings.json``,
  ``mcpServers`` (comments allowed);
- Qwen Code: ``$QWEN_HOME/settings.json`` (default ``~/.qwen``) or the project's
  ``.qwen/settings.json``, ``mcpServers`` (comments allowed);
- GitHub Copilot CLI: ``$COPILOT_HOME/mcp-config.json`` or the project's ``.github/mcp.json``,
  ``mcpServers`` with ``{"type": "local", ..., "tools": ["*"]}``;
- OpenCode: ``$XDG_CONFIG_HOME/opencode/opencode.json`` (``opencode.jsonc`` when only that one
  exists) or the project's ``opencode.json``, the ``mcp`` block with
  ``{"type": "local", "command": [...], "enabled": true}`` (JSONC).

``install_text``/``uninstall_text``/``installed_in`` are pure (text in, text out), on
``pipeline.jsonedit`` and ``pipeline.tomledit``, which keep every other byte of the file. Standard
library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pipeline import jsonedit, tomledit
from pipeline.agents import codex_home, copilot_home
from pipeline.defaults import config_home, home
from pipeline.vocabulary import SourceName

Env = Mapping[str, str]
Format = Literal["json", "jsonc", "toml"]
SERVER = "memd"
"""The name memd's server is registered under in every agent."""
TOOLS = ("memory_search", "memory_get")
"""The tools the session-start memory names (the server's read tools)."""


class ConfigError(ValueError):
    """An agent's MCP configuration file memd cannot edit (not its format, not an object)."""


class McpClient(NamedTuple):
    """One agent memd's MCP server can be installed into."""

    name: str
    """What ``memd mcp install`` takes: ``claude-code``, ``codex``..."""
    source: SourceName
    label: str
    user_file: Callable[[Env], Path]
    project_file: Callable[[Path], Path]
    format: Format
    container: tuple[str, ...]
    """The keys of the object (JSON) or table (TOML) that holds the servers."""
    entry: Callable[[Sequence[str]], dict[str, Any]]
    """The server's entry, from its command line (an absolute program and its arguments)."""
    project_note: str = ""
    """What the user must do before the agent reads a project's file, when anything."""

    @property
    def path(self) -> tuple[str, ...]:
        return (*self.container, SERVER)


def claude_json(env: Env) -> Path:
    """Claude Code's user configuration: ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    value = env.get("CLAUDE_CONFIG_DIR")
    return Path(value) / ".claude.json" if value else home(env) / ".claude.json"


def qwen_settings_home(env: Env) -> Path:
    """Where Qwen Code keeps its settings: ``$QWEN_HOME``, else ``~/.qwen`` (``$QWEN_RUNTIME_DIR``
    moves its projects only)."""
    value = env.get("QWEN_HOME")
    return Path(value).expanduser() if value else home(env) / ".qwen"


def _opencode_file(folder: Path) -> Path:
    """``opencode.json``, unless only ``opencode.jsonc`` is there."""
    json_file, jsonc_file = folder / "opencode.json", folder / "opencode.jsonc"
    return jsonc_file if jsonc_file.exists() and not json_file.exists() else json_file


def _stdio(command: Sequence[str]) -> dict[str, Any]:
    return {"command": command[0], "args": list(command[1:])}


CLIENTS: dict[str, McpClient] = {
    c.name: c
    for c in (
        McpClient(
            "claude-code",
            SourceName.CLAUDE_CODE,
            "Claude Code",
            claude_json,
            lambda project: project / ".mcp.json",
            "json",
            ("mcpServers",),
            lambda cmd: {"type": "stdio", **_stdio(cmd), "env": {}},
            "Claude Code asks you to approve a server of a project's .mcp.json the first time it starts there.",
        ),
        McpClient(
            "codex",
            SourceName.CODEX,
            "Codex CLI",
            lambda env: codex_home(env) / "config.toml",
            lambda project: project / ".codex" / "config.toml",
            "toml",
            ("mcp_servers",),
            _stdio,
            "Codex reads a project's .codex/config.toml only once you trust the project.",
        ),
        McpClient(
            "gemini-cli",
            SourceName.GEMINI_CLI,
            "Gemini CLI",
            lambda env: home(env) / ".gemini" / "settings.json",
            lambda project: project / ".gemini" / "settings.json",
            "jsonc",
            ("mcpServers",),
            _stdio,
        ),
        McpClient(
            "opencode",
            SourceName.OPENCODE,
            "OpenCode",
            lambda env: _opencode_file(config_home(env) / "opencode"),
            _opencode_file,
            "jsonc",
            ("mcp",),
            lambda cmd: {"type": "local", "command": list(cmd), "enabled": True},
        ),
        McpClient(
            "copilot-cli",
            SourceName.COPILOT_CLI,
            "GitHub Copilot CLI",
            lambda env: copilot_home(env) / "mcp-config.json",
            lambda project: project / ".github" / "mcp.json",
            "json",
            ("mcpServers",),
            lambda cmd: {"type": "local", **_stdio(cmd), "tools": ["*"]},
            "Copilot CLI loads a project's MCP servers only once you trust the folder.",
        ),
        McpClient(
            "qwen-code",
            SourceName.QWEN_CODE,
            "Qwen Code",
            lambda env: qwen_settings_home(env) / "settings.json",
            lambda project: project / ".qwen" / "settings.json",
            "jsonc",
            ("mcpServers",),
            _stdio,
        ),
    )
}


def client(name: str) -> McpClient:
    """The agent called ``name`` (``claude-code``) or by its source name (``claude_code``)."""
    found = CLIENTS.get(name) or next((c for c in CLIENTS.values() if c.source == name), None)
    if found is None:
        raise KeyError(name)
    return found


def config_file(agent: McpClient, env: Env, project: Path | None = None) -> Path:
    """The file ``memd mcp install`` edits: the project's when ``project`` is given, else the user's."""
    return agent.project_file(project) if project is not None else agent.user_file(env)


def install_text(agent: McpClient, text: str, command: Sequence[str]) -> str:
    """``text`` (the file's content, "" when absent) with memd's entry, every other byte kept."""
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
