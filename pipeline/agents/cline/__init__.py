"""Cline (its CLI, 3.x): sessions under ``~/.cline/data/sessions/<id>/``, memory in rule files it
loads at session start (``~/.cline/rules/`` for every project, ``.clinerules/`` in the folder it
runs in), MCP servers in ``~/.cline/data/settings/cline_mcp_settings.json``. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey
from pipeline.sources.walk import walk_paths

NAME = "cline"
LABEL = "Cline"
MESSAGES_SUFFIX = ".messages.json"
SUB_AGENT_PREFIX = "agent_"
RULES_FILE = "memd-memory.md"
"""The rule file memd writes in a folder's ``.clinerules/`` (a project's scope)."""
GLOBAL_FILE = "memd-global-memory.md"
"""The rule file memd writes in ``~/.cline/rules/`` (the global scope): a name of its own, since
Cline keeps one of two rules of one name."""
RULE_MAX_BYTES = 32_768
"""Cline joins rule files whole (no cap of its own): memd keeps its own small."""
BUILTIN_TOOLS = frozenset(
    {
        "read_files",
        "search_codebase",
        "run_commands",
        "fetch_web_content",
        "apply_patch",
        "editor",
        "ask_question",
        "spawn_agent",
        "submit_and_exit",
        "attempt_completion",
        "skills",
        *(
            f"team_{name}"
            for name in [
                "spawn_teammate",
                "shutdown_teammate",
                "status",
                "task",
                "run_task",
                "cancel_run",
                "list_runs",
                "await_runs",
                "send_message",
                "broadcast",
                "read_mailbox",
                "mission_log",
                "cleanup",
                "create_outcome",
                "attach_outcome_fragment",
                "review_outcome_fragment",
                "finalize_outcome",
                "list_outcomes",
            ]
        ),
    }
)
"""Cline's own tools (3.0.65 offers these): every other tool is an extension's."""


def cline_dir(env: Env) -> Path:
    """``$CLINE_DIR``, by default ``~/.cline``: its rules folder is ``rules/`` there."""
    value = env.get("CLINE_DIR")
    return Path(value).expanduser() if value else home(env) / ".cline"


def data_dir(env: Env) -> Path:
    """``$CLINE_DATA_DIR``, by default ``<CLINE_DIR>/data``."""
    value = env.get("CLINE_DATA_DIR")
    return Path(value).expanduser() if value else cline_dir(env) / "data"


def sessions_dir(env: Env) -> Path:
    """``$CLINE_SESSION_DATA_DIR``, by default ``<data dir>/sessions``."""
    value = env.get("CLINE_SESSION_DATA_DIR")
    return Path(value).expanduser() if value else data_dir(env) / "sessions"


def mcp_settings(env: Env) -> Path:
    """``$CLINE_MCP_SETTINGS_PATH``, by default ``<data dir>/settings/cline_mcp_settings.json``."""
    value = env.get("CLINE_MCP_SETTINGS_PATH")
    return Path(value).expanduser() if value else data_dir(env) / "settings" / "cline_mcp_settings.json"


def discover(root: Path) -> Iterator[str]:
    """``<root>/<id>/<id>.messages.json`` and a sub-agent's ``<root>/<id>/agent_*.messages.json``
    (``root`` is ``~/.cline/data/sessions``)."""
    for path in walk_paths(root, lambda name: name.endswith(MESSAGES_SUFFIX), max_depth=1):
        folder, _, name = path.rpartition("/")
        session = folder.rpartition("/")[2]
        if name == session + MESSAGES_SUFFIX or name.startswith(SUB_AGENT_PREFIX):
            yield path


CONNECT_TIMEOUT_S = 60
"""Cline gives a server 3 s to answer its ``initialize`` unless the entry sets ``timeout`` (seconds,
then also each call's limit); memd's server answers once the MCP SDK has loaded, about a second on an
idle machine and more on a loaded one, so its entry gives it Cline's usual minute."""


def entry(command: Sequence[str]) -> dict[str, Any]:
    """memd's server as ``cline mcp add`` writes one: ``{"transport": {"type": "stdio", ...}}``, with a
    ``timeout`` (``CONNECT_TIMEOUT_S``)."""
    return {"transport": {"type": "stdio", **stdio(command)}, "timeout": CONNECT_TIMEOUT_S}


AGENT = Agent(
    NAME,
    LABEL,
    sessions_dir,
    discover,
    "pipeline.agents.cline.transcripts:ClineAdapter",
    env=("CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR"),
    publish=(
        PublishKey(
            "cline",
            False,
            "Each project's memory as a Cline rule file, <folder>/.clinerules/memd-memory.md, in the\n"
            "project's root and in every folder of it where Cline ran (Cline loads rules from the\n"
            "folder it runs in only). Off: it writes into the repository's working tree.",
            LoadCut(RULES_FILE, max_bytes=RULE_MAX_BYTES),
        ),
        PublishKey(
            "cline_global",
            True,
            "The global scope as memd's own Cline rule file, ~/.cline/rules/memd-global-memory.md.",
            LoadCut(GLOBAL_FILE, max_bytes=RULE_MAX_BYTES),
        ),
    ),
    targets=("pipeline.agents.cline.publish:Cline",),
    mcp=McpClient(
        NAME,
        NAME,
        LABEL,
        mcp_settings,
        None,
        "json",
        ("mcpServers",),
        entry,
    ),
    reads_agents_md=True,
    read_tools={"read_files": ("path",)},
    shell_tools={"run_commands": ("command",)},
    mcp_prefixes=("",),
    builtin_tools=BUILTIN_TOOLS,
    project_hint="the manifest <id>.json beside its messages names it",
    home=cline_dir,
)
