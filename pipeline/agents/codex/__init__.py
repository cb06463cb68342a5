"""Codex CLI: rollouts under ``$CODEX_HOME/sessions`` (and ``archived_sessions``), memory in its
``memories/`` folder and the user's ``AGENTS.md``, MCP servers in ``$CODEX_HOME/config.toml``.
Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipeline.agents.codex.injected import strip_codex_memory
from pipeline.defaults import home
from pipeline.publish.mcp_clients import stdio
from pipeline.roster import Agent, Env, LoadCut, McpClient, PublishKey
from pipeline.sources.walk import drop_twins, walk_files

NAME = "codex"
LABEL = "Codex CLI"
AGENTS_MD_MAX_BYTES = 32_768
"""Codex's ``project_doc_max_bytes``: the smallest of the cuts of the agents that load ``AGENTS.md``."""


def codex_home(env: Env) -> Path:
    """``$CODEX_HOME``, by default ``~/.codex``."""
    value = env.get("CODEX_HOME")
    return Path(value) if value else home(env) / ".codex"


def discover(root: Path) -> Iterator[str]:
    """``rollout-*.jsonl`` (or ``.jsonl.zst``, dropped beside its ``.jsonl``) under ``sessions/``
    and ``archived_sessions/``; ``root`` may be ``$CODEX_HOME`` or its ``sessions``."""
    if (root / "sessions").is_dir():
        roots = [root / "sessions", root / "archived_sessions"]
    else:
        roots = [root, root.parent / "archived_sessions"] if root.name == "sessions" else [root]
    paths: list[Path] = []
    for base in roots:
        paths.extend(
            walk_files(base, lambda n: n.startswith("rollout-") and n.endswith((".jsonl", ".jsonl.zst")))
        )
    return (str(p) for p in drop_twins(paths, ".jsonl.zst", ".jsonl"))


AGENT = Agent(
    NAME,
    LABEL,
    lambda env: codex_home(env) / "sessions",
    discover,
    "pipeline.agents.codex.transcripts:CodexAdapter",
    home=codex_home,
    off_hint=(
        "Codex sessions were found here, but memd publishes nothing Codex loads (its targets are off by "
        "default). To switch Codex on: set [publish] codex_global = true (the global scope in a block of "
        "$CODEX_HOME/AGENTS.md, which Codex always loads), or [publish] codex = true for its memory folder "
        "(Codex reads it only with [features] memories = true in $CODEX_HOME/config.toml); "
        "`memd mcp install codex` lets it ask memd. `memd status` lists what each agent gets."
    ),
    env=("CODEX_HOME",),
    short="Codex",
    publish=(
        PublishKey(
            "codex",
            False,
            "Codex's memory folder ($CODEX_HOME/memories), for Codex with [features] memories = true.",
            LoadCut("memory_summary.md", max_tokens=2_500),
        ),
        PublishKey(
            "codex_global",
            False,
            "The global scope in a sentinel block of $CODEX_HOME/AGENTS.md.",
            LoadCut("AGENTS.md", max_bytes=AGENTS_MD_MAX_BYTES),
        ),
        PublishKey("codex_summary_token_cap", 2_500, "Cap of the summary memd writes for Codex (tokens)."),
    ),
    targets=("pipeline.agents.codex.publish:Codex",),
    mcp=McpClient(
        "codex",
        NAME,
        LABEL,
        lambda env: codex_home(env) / "config.toml",
        lambda project: project / ".codex" / "config.toml",
        "toml",
        ("mcp_servers",),
        stdio,
        "Codex reads a project's .codex/config.toml only once you trust the project.",
    ),
    reads_agents_md=True,
    injected=strip_codex_memory,
    read_tools={},
    shell_tools={
        "shell": ("command", "cmd"),
        "exec_command": ("cmd", "command"),
        "local_shell": ("command",),
        "shell_command": ("command",),
        "container.exec": ("command", "cmd"),
    },
    mcp_prefixes=("",),
)
