"""OpenCode: sessions in its database under ``$XDG_DATA_HOME/opencode``, memory in the user's
``AGENTS.md`` there, MCP servers in ``$XDG_CONFIG_HOME/opencode/opencode.json``. Standard library
only (its database is read by ``database.py``, imported on first use)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipeline.defaults import config_home, xdg
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey, Walked
from pipeline.sources.injected import strip_system_reminders

NAME = "opencode"
LABEL = "OpenCode"
USER_FILE_MAX_BYTES = 32_768


def config_file(folder: Path) -> Path:
    """``opencode.json``, unless only ``opencode.jsonc`` is there."""
    json_file, jsonc_file = folder / "opencode.json", folder / "opencode.jsonc"
    return jsonc_file if jsonc_file.exists() and not json_file.exists() else json_file


def user_config_dir(env: Env) -> Path:
    """``$XDG_CONFIG_HOME/opencode``."""
    return config_home(env) / "opencode"


def discover(root: Path) -> Iterator[str]:
    """``<root>/opencode.db`` (``opencode-<channel>.db``): one ``<database>#<session id>`` per
    session (``database.py``, imported on first use)."""
    from pipeline.agents.opencode import database

    return database.discover(root)


def walk(root: Path) -> list[Walked]:
    """``discover`` with each session's change key: what the scan and its quick check compare."""
    from pipeline.agents.opencode import database

    return database.walk(root)


AGENT = Agent(
    NAME,
    LABEL,
    lambda env: xdg(env, "XDG_DATA_HOME", ".local/share") / "opencode",
    discover,
    "pipeline.agents.opencode.transcripts:OpenCodeAdapter",
    walk=walk,
    publish=(
        PublishKey(
            "opencode_global",
            False,
            "The global scope in a sentinel block of OpenCode's $XDG_CONFIG_HOME/opencode/AGENTS.md (its\n"
            "projects read their own AGENTS.md: agents_md).",
            LoadCut("AGENTS.md", max_bytes=USER_FILE_MAX_BYTES),
        ),
    ),
    targets=("pipeline.agents.opencode.publish:OpenCode",),
    mcp=McpClient(
        "opencode",
        NAME,
        LABEL,
        lambda env: config_file(user_config_dir(env)),
        config_file,
        "jsonc",
        ("mcp",),
        lambda cmd: {"type": "local", "command": list(cmd), "enabled": True},
    ),
    reads_agents_md=True,
    injected=strip_system_reminders,  # a nested AGENTS.md, appended to a read tool's result
    read_tools={"read": ("filePath",)},
    shell_tools={"bash": ("command",)},
)
