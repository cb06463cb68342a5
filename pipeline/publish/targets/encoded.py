"""Agents that name a project's memory folder after its path (Claude Code, Qwen Code: every
character that is not an ASCII letter or digit made ``-``): two projects whose paths differ only
in such characters share one folder, and each would load the other's memory. The plans of such a
target's project scopes: one per scope, those sharing a folder handed to the target's refusal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pipeline.layout import GLOBAL_SCOPE
from pipeline.publish.folder import plan_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Plan, PublishContext
from pipeline.publish.targets.base import guard

PlanOne = Callable[[PublishContext, ScopeMemory, "str | None"], Plan]
PlanShared = Callable[[PublishContext, ScopeMemory, str, Sequence[str], "str | None", bool], Plan]
"""``(ctx, scope, project, the other projects, previous digest, take_back)``: ``take_back`` is
True for the first scope of a folder, whose plan takes memd's copy out of it."""


def sharing(ctx: PublishContext, encode: Callable[[str], str]) -> dict[str, list[str]]:
    """Folder name -> the projects memd knows (and that exist) mapping to it, for the folders more
    than one maps to."""
    by_folder: dict[str, list[str]] = {}
    for project in sorted(set(ctx.projects.values())):
        if project and Path(project).is_dir():
            by_folder.setdefault(encode(project), []).append(project)
    return {name: projects for name, projects in by_folder.items() if len(projects) > 1}


def plan_projects(
    target: str,
    ctx: PublishContext,
    scopes: Sequence[ScopeMemory],
    previous: Mapping[str, str | None],
    *,
    encode: Callable[[str], str],
    shared: Mapping[str, list[str]],
    plan_one: PlanOne,
    plan_shared: PlanShared,
) -> list[Plan]:
    """One guarded plan per project scope: ``plan_shared`` for a project in ``shared``, else ``plan_one``."""
    taken: set[str] = set()
    plans = []
    for s in scopes:
        if s.scope == GLOBAL_SCOPE:
            continue
        project = ctx.projects.get(s.scope) or ""
        name = encode(project)
        if project and project in shared.get(name, ()):
            others = [p for p in shared[name] if p != project]
            sha = previous.get(s.scope)
            plans.append(guard(target, s.scope, plan_shared, ctx, s, project, others, sha, name not in taken))
            taken.add(name)
        else:
            plans.append(guard(target, s.scope, plan_one, ctx, s, previous.get(s.scope)))
    return plans


def refuse_shared(
    target: str,
    scope: str,
    folder: Path,
    home: Path,
    *,
    previous_sha: str | None,
    take_back: bool,
    reason: str,
) -> Plan:
    """A project whose folder another project shares: refused with ``reason``; with ``take_back``
    the plan also takes memd's copy out of the folder (one plan per folder does)."""
    plan = (
        plan_withdraw(target, scope, folder, previous_sha=previous_sha, within=home)
        if take_back
        else Plan(target=target, scope=scope, location=folder)
    )
    plan.withdraw = False
    if not plan.error and not plan.refused:
        plan.refused = reason
    return plan
