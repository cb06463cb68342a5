"""Gemini CLI: chats under ``~/.gemini/tmp/<project>/chats``, memory in each project's folder there
and the user's ``GEMINI.md``, MCP servers in ``~/.gemini/settings.json``. Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey
from pipeline.sources.injected import strip_gemini_context
from pipeline.sources.walk import drop_twins, walk_files

NAME = "gemini_cli"
LABEL = "Gemini CLI"
USER_FILE_MAX_BYTES = 32_768

READ_TOOLS = {"read_file": ("file_path", "absolute_path", "path"), "read_many_files": ("paths",)}
SHELL_TOOLS = {"run_shell_command": ("command",)}


def gemini_home(env: Env) -> Path:
    """``~/.gemini``."""
    return home(env) / ".gemini"


def discover(root: Path) -> Iterator[str]:
    """``<root>/<project>/chats/session-*.json[l]`` and sub-agent ``.jsonl`` one level down; a
    legacy ``.json`` is dropped beside the ``.jsonl`` it was resumed into."""
    paths: list[Path] = []
    try:
        projects = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        projects = []
    for project in projects:
        chats = project / "chats"
        for path in walk_files(chats, lambda n: n.endswith((".json", ".jsonl")), max_depth=2):
            top = path.parent == chats
            if (top and path.name.startswith("session-")) or (not top and path.name.endswith(".jsonl")):
                paths.append(path)
    return (str(p) for p in drop_twins(paths, ".json", ".jsonl"))


AGENT = Agent(
    NAME,
    LABEL,
    lambda env: gemini_home(env) / "tmp",
    discover,
    "pipeline.agents.gemini_cli.transcripts:GeminiCliAdapter",
    home=gemini_home,
    publish=(
        PublishKey(
            "gemini",
            True,
            "Gemini CLI's private project memory (~/.gemini/tmp/<project>/memory/MEMORY.md).",
            LoadCut("MEMORY.md", max_lines=200, max_bytes=25_000),
        ),
        PublishKey(
            "gemini_global",
            False,
            "The global scope in a sentinel block of ~/.gemini/GEMINI.md.",
            LoadCut("GEMINI.md", max_bytes=USER_FILE_MAX_BYTES),
        ),
    ),
    targets=("pipeline.agents.gemini_cli.publish:Gemini",),
    mcp=McpClient(
        "gemini-cli",
        NAME,
        LABEL,
        lambda env: gemini_home(env) / "settings.json",
        lambda project: project / ".gemini" / "settings.json",
        "jsonc",
        ("mcpServers",),
        stdio,
    ),
    injected=strip_gemini_context,
    read_tools=READ_TOOLS,
    shell_tools=SHELL_TOOLS,
    mcp_prefixes=("mcp_",),
    project_hint="no .project_root and no projects.json entry",
)
