"""Pi (``@earendil-works/pi-coding-agent`` 1.6, and the sessions 0.73 wrote): sessions under
``~/.pi/agent/sessions``, the global scope in the instruction file Pi loads from ``~/.pi/agent/``,
MCP servers in ``~/.pi/agent/mcp.json``. Standard library only."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey
from pipeline.sources.walk import walk_paths

NAME = "pi"
LABEL = "Pi"
BUILTIN_TOOLS = frozenset({"read", "bash", "edit", "write", "grep", "find", "ls", "codemode", "tool_search"})
"""Pi's own tools (``codemode`` runs a script calling the others, ``tool_search`` finds tools): every
other tool is an extension's."""
CONTEXT_FILES = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")
"""What Pi 1.6 loads from ``~/.pi/agent/`` and from every folder from / down to its working
directory: the first of these that exists in each folder (so ``AGENTS.override.md`` hides
``AGENTS.md``, and an ``AGENTS.md`` memd made would hide the user's ``CLAUDE.md``)."""
SETTINGS_MAX_BYTES = 1 << 20
"""A ``settings.json`` larger than this is not read for ``sessionDir``."""


def agent_dir(env: Env) -> Path:
    """``$PI_CODING_AGENT_DIR``, by default ``~/.pi/agent``."""
    value = env.get("PI_CODING_AGENT_DIR")
    return Path(value).expanduser() if value else home(env) / ".pi" / "agent"


def _setting_session_dir(agent: Path, env: Env) -> Path | None:
    """The ``sessionDir`` of the user's ``settings.json`` when it is an absolute (or ``~``) path; a
    relative one resolves against each run's working directory, which memd cannot know."""
    path = agent / "settings.json"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > SETTINGS_MAX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = json.loads(f.read(SETTINGS_MAX_BYTES + 1))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    value = data.get("sessionDir") if isinstance(data, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    if value == "~" or value.startswith("~/"):
        value = str(home(env)) + value[1:]
    return Path(value) if os.path.isabs(value) else None


def sessions_root(env: Env) -> Path:
    """Where Pi keeps sessions: ``$PI_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting of
    ``<agent dir>/settings.json``, else ``<agent dir>/sessions``."""
    value = env.get("PI_CODING_AGENT_SESSION_DIR")
    if value and os.path.isabs(os.path.expanduser(value)):
        return Path(value).expanduser()
    agent = agent_dir(env)
    return _setting_session_dir(agent, env) or agent / "sessions"


def discover(root: Path) -> Iterator[str]:
    """``<root>/<encoded cwd>/<time>_<session>.jsonl``."""
    return walk_paths(root, lambda name: name.endswith(".jsonl"))


def mcp_entry(command: Sequence[str]) -> dict[str, Any]:
    """memd's server, its tools declared to the model (without ``"exposure": "direct"`` Pi 1.6
    offers them only inside ``codemode`` scripts)."""
    return {**stdio(command), "exposure": "direct"}


AGENT = Agent(
    NAME,
    LABEL,
    sessions_root,
    discover,
    "pipeline.agents.pi.transcripts:PiAdapter",
    env=("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"),
    publish=(
        PublishKey(
            "pi_global",
            False,
            "The global scope in a sentinel block of the instruction file Pi loads from ~/.pi/agent/ "
            "(AGENTS.md unless an AGENTS.override.md or CLAUDE.md is the one it loads there).",
            LoadCut("AGENTS.md"),
        ),
    ),
    targets=("pipeline.agents.pi.publish:Pi",),
    mcp=McpClient(
        "pi",
        NAME,
        LABEL,
        lambda env: agent_dir(env) / "mcp.json",
        lambda project: project / ".pi" / "mcp.json",
        "json",
        ("mcpServers",),
        mcp_entry,
        "Pi reads a project's .pi/mcp.json only once you trust the project.",
    ),
    reads_agents_md=True,
    home=agent_dir,
    read_tools={"read": ("path", "file_path")},
    shell_tools={"bash": ("command",)},
    mcp_prefixes=("mcp_",),
    builtin_tools=BUILTIN_TOOLS,
)
