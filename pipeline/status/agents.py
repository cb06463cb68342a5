"""`memd status`'s and the page's ``agents`` section: every agent memd knows (``pipeline.roster``),
with each of its publish targets ``on``, ``off (set [publish] <key> = true)`` or ``not installed``
(its own folder is absent here), so a default that is off says so and how to turn it on.
Standard library only (the agents' facts are)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pipeline import roster
from pipeline.status.report import AgentView, TargetState

ON = "on"
NOT_INSTALLED = "not installed"


def off(key: str) -> str:
    """What a target that is off says: the one setting that turns it on."""
    return f"off (set [publish] {key} = true)"


def agent_views(
    publish: Mapping[str, bool], env: Mapping[str, str], roots: Mapping[str, Path] | None = None
) -> list[AgentView]:
    """Every agent in the roster's order; ``publish``: each ``[publish]`` target key's value;
    ``roots``: each agent's configured transcripts root (there: installed, its folder moved)."""
    out = []
    roots = roots or {}
    for agent in roster.agents():
        home = agent.home_dir(env)
        root = roots.get(agent.name)
        installed = _is_dir(home) or (root is not None and _is_dir(root))
        targets = [
            TargetState(key, NOT_INSTALLED if not installed else ON if publish.get(key) else off(key))
            for key in agent.target_keys()
        ]
        out.append(AgentView(agent.name, agent.label, str(home), installed, targets))
    return out


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False
