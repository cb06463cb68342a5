"""Pi: sessions under ``~/.pi/agent/sessions``; memd publishes nothing for it and installs no MCP
server there (Pi has none). Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipeline.defaults import home
from pipeline.roster import Agent
from pipeline.sources.walk import walk_paths

NAME = "pi"
LABEL = "Pi"
BUILTIN_TOOLS = frozenset({"read", "bash", "edit", "write", "grep", "find", "ls"})
"""Pi's own tools: every other tool is an extension's."""


def discover(root: Path) -> Iterator[str]:
    """``<root>/<encoded cwd>/<time>_<session>.jsonl``."""
    return walk_paths(root, lambda name: name.endswith(".jsonl"))


AGENT = Agent(
    NAME,
    LABEL,
    lambda env: home(env) / ".pi" / "agent" / "sessions",
    discover,
    "pipeline.agents.pi.transcripts:PiAdapter",
    home=lambda env: home(env) / ".pi",
    read_tools={"read": ("path", "file_path")},
    shell_tools={"bash": ("command",)},
    mcp_prefixes=("mcp_",),
    builtin_tools=BUILTIN_TOOLS,
)
