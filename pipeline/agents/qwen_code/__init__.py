"""Qwen Code: chats under ``~/.qwen/projects/<encoded cwd>/chats``, memory in each project's
``memory/`` folder there, MCP servers in ``$QWEN_HOME/settings.json``. Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey
from pipeline.sources.injected import strip_gemini_context
from pipeline.sources.walk import walk_paths

NAME = "qwen_code"
LABEL = "Qwen Code"


def qwen_home(env: Env) -> Path:
    """Where Qwen Code keeps its projects (chats and memory): ``$QWEN_RUNTIME_DIR``, else
    ``$QWEN_HOME``, else ``~/.qwen``."""
    value = env.get("QWEN_RUNTIME_DIR") or env.get("QWEN_HOME")
    return Path(value).expanduser() if value else home(env) / ".qwen"


def settings_home(env: Env) -> Path:
    """Where Qwen Code keeps its settings: ``$QWEN_HOME``, else ``~/.qwen`` (``$QWEN_RUNTIME_DIR``
    moves its projects only)."""
    value = env.get("QWEN_HOME")
    return Path(value).expanduser() if value else home(env) / ".qwen"


def discover(root: Path) -> Iterator[str]:
    """``<root>/<encoded cwd>/chats/<session>.jsonl`` and sub-agents'
    ``<root>/<encoded cwd>/subagents/<parent>/agent-*.jsonl`` (``root`` is ``~/.qwen/projects``)."""
    for path in walk_paths(
        root,
        lambda name: name.endswith(".jsonl"),
        prune=lambda name, depth: depth == 2 and name not in ("chats", "subagents"),
        max_depth=3,
    ):
        parts = path.rsplit("/", 3)
        if len(parts) == 4 and (
            parts[2] == "chats" or (parts[1] == "subagents" and parts[3].startswith("agent-"))
        ):
            yield path


AGENT = Agent(
    NAME,
    LABEL,
    lambda env: qwen_home(env) / "projects",
    discover,
    "pipeline.agents.qwen_code.transcripts:QwenCodeAdapter",
    home=qwen_home,
    env=("QWEN_RUNTIME_DIR", "QWEN_HOME"),
    publish=(
        PublishKey(
            "qwen_code",
            True,
            "Qwen Code's own memory of each project (~/.qwen/projects/<encoded git root>/memory/MEMORY.md).",
            LoadCut("MEMORY.md", max_lines=200, max_chars=25_000),
        ),
    ),
    targets=("pipeline.agents.qwen_code.publish:QwenCode",),
    mcp=McpClient(
        "qwen-code",
        NAME,
        LABEL,
        lambda env: settings_home(env) / "settings.json",
        lambda project: project / ".qwen" / "settings.json",
        "jsonc",
        ("mcpServers",),
        stdio,
    ),
    reads_agents_md=True,
    injected=strip_gemini_context,
    read_tools={"read_file": ("file_path", "absolute_path", "path"), "read_many_files": ("paths",)},
    shell_tools={"run_shell_command": ("command",)},
    mcp_prefixes=(),
)
