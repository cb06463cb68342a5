"""Claude Code: transcripts under ``~/.claude/projects``, memory in each project's ``MEMORY.md``
folder and the user's ``CLAUDE.md``, MCP servers in ``~/.claude.json`` or a project's ``.mcp.json``.
Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey
from pipeline.sources.injected import strip_system_reminders
from pipeline.sources.walk import walk_paths

NAME = "claude_code"
LABEL = "Claude Code"
PRUNED_DIRS = frozenset({"tool-results", "memory", "remote-agents", "mcp-tasks", "file-history"})


def claude_home(env: Env) -> Path:
    """``~/.claude``."""
    return home(env) / ".claude"


def claude_json(env: Env) -> Path:
    """Claude Code's user configuration: ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    value = env.get("CLAUDE_CONFIG_DIR")
    return Path(value) / ".claude.json" if value else home(env) / ".claude.json"


def discover(root: Path) -> Iterator[str]:
    """``<root>/<encoded cwd>/<session>.jsonl``, sub-agent siblings and ``<session>/subagents/``."""
    return walk_paths(
        root,
        lambda name: name.endswith(".jsonl") and name != "journal.jsonl",
        prune=lambda name, _depth: name in PRUNED_DIRS,
    )


AGENT = Agent(
    NAME,
    LABEL,
    lambda env: claude_home(env) / "projects",
    discover,
    "pipeline.agents.claude_code.transcripts:ClaudeCodeAdapter",
    home=claude_home,
    publish=(
        PublishKey(
            "claude_code",
            True,
            "Claude Code's auto-memory folder of each project (~/.claude/projects/<encoded root>/memory/).",
            LoadCut("MEMORY.md", max_lines=200, max_bytes=25_000),
        ),
        PublishKey(
            "claude_code_global",
            False,
            "The global scope in a sentinel block of ~/.claude/CLAUDE.md.",
            LoadCut("CLAUDE.md", max_chars=40_000),
        ),
    ),
    targets=("pipeline.agents.claude_code.publish:ClaudeCode",),
    mcp=McpClient(
        "claude-code",
        NAME,
        LABEL,
        claude_json,
        lambda project: project / ".mcp.json",
        "json",
        ("mcpServers",),
        lambda cmd: {"type": "stdio", **stdio(cmd), "env": {}},
        "Claude Code asks you to approve a server of a project's .mcp.json the first time it starts there.",
    ),
    hook="pipeline.agents.claude_code.folder:HOOK",
    injected=strip_system_reminders,
    read_tools={"Read": ("file_path",), "NotebookRead": ("notebook_path",)},
    shell_tools={"Bash": ("command",)},
)
