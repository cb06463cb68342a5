"""GitHub Copilot CLI: sessions under ``$COPILOT_HOME/session-state``, memory in the user's
``copilot-instructions.md``, MCP servers in ``$COPILOT_HOME/mcp-config.json``. Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey
from pipeline.sources.injected import strip_copilot_context
from pipeline.sources.walk import walk_paths

NAME = "copilot_cli"
LABEL = "GitHub Copilot CLI"
USER_FILE_MAX_BYTES = 32_768


def copilot_home(env: Env) -> Path:
    """``$COPILOT_HOME``, by default ``~/.copilot``."""
    value = env.get("COPILOT_HOME")
    return Path(value) if value else home(env) / ".copilot"


def discover(root: Path) -> Iterator[str]:
    """``<root>/<session id>/events.jsonl`` (``root`` is ``$COPILOT_HOME/session-state``)."""
    return walk_paths(
        root,
        lambda name: name == "events.jsonl",
        prune=lambda name, _depth: name.startswith("."),
        max_depth=1,
    )


AGENT = Agent(
    NAME,
    LABEL,
    lambda env: copilot_home(env) / "session-state",
    discover,
    "pipeline.agents.copilot_cli.transcripts:CopilotCliAdapter",
    home=copilot_home,
    env=("COPILOT_HOME",),
    short="Copilot CLI",
    publish=(
        PublishKey(
            "copilot_global",
            False,
            "The global scope in a sentinel block of GitHub Copilot CLI's ~/.copilot/copilot-instructions.md.",
            LoadCut("copilot-instructions.md", max_bytes=USER_FILE_MAX_BYTES),
        ),
    ),
    targets=("pipeline.agents.copilot_cli.publish:CopilotCli",),
    mcp=McpClient(
        "copilot-cli",
        NAME,
        LABEL,
        lambda env: copilot_home(env) / "mcp-config.json",
        lambda project: project / ".github" / "mcp.json",
        "json",
        ("mcpServers",),
        lambda cmd: {"type": "local", **stdio(cmd), "tools": ["*"]},
        "Copilot CLI loads a project's MCP servers only once you trust the folder.",
    ),
    reads_agents_md=True,
    injected=strip_copilot_context,
    read_tools={"view": ("path",)},
    shell_tools={"bash": ("command",)},
)
