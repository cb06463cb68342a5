"""OpenHands (its CLI, 1.16): conversations under ``~/.openhands/conversations/<id>/`` (a state file
and one JSON file per event), memory in a user-level skill memd owns
(``~/.openhands/skills/memd.md``), MCP servers in ``~/.openhands/mcp.json``. Standard library only
(the conversations are read by ``conversation.py``, imported on first use).

A conversation is a folder, not a file: its path is the folder, ``<root>/<32 hex digits>`` (a
sub-agent's ``<root>/<id>/subagents/<sub id>``), and ``walk`` gives each one a change key of its
own (``conversation.walk``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey, Walked

NAME = "openhands"
LABEL = "OpenHands"
SKILL_MAX_BYTES = 32_768
"""memd's own budget for the skill file (OpenHands sends always-on skills whole, uncut)."""

_REPO_CONTEXT_RE = re.compile(r"<REPO_CONTEXT>.*?(?:</REPO_CONTEXT>|\Z)", re.S)
_EXTRA_INFO_RE = re.compile(r"<EXTRA_INFO>.*?(?:</EXTRA_INFO>|\Z)", re.S)


def persistence_dir(env: Env) -> Path:
    """``$OPENHANDS_PERSISTENCE_DIR``, else ``~/.openhands``: its settings, skills and MCP servers."""
    value = env.get("OPENHANDS_PERSISTENCE_DIR")
    return Path(value).expanduser() if value else home(env) / ".openhands"


def conversations_dir(env: Env) -> Path:
    """``$OPENHANDS_CONVERSATIONS_DIR``, else ``<persistence dir>/conversations``."""
    value = env.get("OPENHANDS_CONVERSATIONS_DIR")
    return Path(value).expanduser() if value else persistence_dir(env) / "conversations"


def discover(root: Path) -> Iterator[str]:
    """Every conversation folder under ``root`` (and its sub-agents'), as ``walk`` lists them."""
    from pipeline.agents.openhands import conversation

    return iter([path for path, _key, _why in conversation.walk(root)])


def walk(root: Path) -> list[Walked]:
    """Every conversation under ``root`` with its change key (``conversation.walk``)."""
    from pipeline.agents.openhands import conversation

    return conversation.walk(root)


def strip_context(text: str) -> str:
    """OpenHands' ``<REPO_CONTEXT>`` (AGENTS.md and the always-on skills, memd's included) and
    ``<EXTRA_INFO>`` (a triggered skill's text) blocks, should one reach a message's text."""
    if "<REPO_CONTEXT>" not in text and "<EXTRA_INFO>" not in text:
        return text
    return _EXTRA_INFO_RE.sub("", _REPO_CONTEXT_RE.sub("", text))


AGENT = Agent(
    NAME,
    LABEL,
    conversations_dir,
    discover,
    "pipeline.agents.openhands.transcripts:OpenHandsAdapter",
    env=("OPENHANDS_PERSISTENCE_DIR", "OPENHANDS_CONVERSATIONS_DIR"),
    walk=walk,
    publish=(
        PublishKey(
            "openhands_global",
            True,
            "The global scope in a skill file memd owns, ~/.openhands/skills/memd.md, which OpenHands\n"
            "loads into every conversation (a project's scope reaches it through agents_md).",
            LoadCut("memd.md", max_bytes=SKILL_MAX_BYTES),
        ),
    ),
    targets=("pipeline.agents.openhands.publish:OpenHands",),
    mcp=McpClient(
        NAME,
        NAME,
        LABEL,
        lambda env: persistence_dir(env) / "mcp.json",
        lambda project: project / ".openhands" / "mcp.json",
        "json",
        ("mcpServers",),
        stdio,
        "OpenHands reads MCP servers from ~/.openhands/mcp.json only: a project's file is not loaded.",
    ),
    reads_agents_md=True,
    injected=strip_context,
    read_tools={"file_editor": ("path",)},
    shell_tools={"terminal": ("command",)},
    project_hint="the working_dir of its base_state.json",
    home=persistence_dir,
)
