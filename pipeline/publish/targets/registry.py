"""The publish targets, and what one publish makes of them by iterating them: every enabled
target's plans for every scope, withdrawals (of a scope that is gone, and of everything memd
published under a name that has since been turned off: a stale copy an agent keeps loading is
worse than none), and the folders the targets that are on write in (the service unit's sandbox).
A target's planner that raises becomes a failed plan with the reason, so one target's bug never
stops the others.

An agent's targets live in its folder (``pipeline/agents/<name>/publish.py``), named by its
``Agent.targets`` with the cut of each file in its ``[publish]`` keys (``limits``), which every
plan is checked against before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from pipeline import roster
from pipeline.layout import GLOBAL_SCOPE
from pipeline.publish.memfiles import ScopeMemory, list_scopes, read_scope
from pipeline.publish.plan import Homes, Plan, PublishContext
from pipeline.publish.targets.agents_md import AgentsMd
from pipeline.publish.targets.base import PublishTarget, failed_plan, guard, known_copy, nothing_to_withdraw
from pipeline.publish.targets.limits import enforce
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication
from pipeline.vocabulary import PUBLISH_CURRENT, PublishOutcome

_MADE: dict[str, PublishTarget] = {}


def targets() -> tuple[PublishTarget, ...]:
    """Every target, in the order a publish plans them: each agent's (its folder's, in the
    registry's order), then the project's own ``AGENTS.md``."""
    found: list[PublishTarget] = []
    for agent in roster.agents():
        for path in agent.targets:
            if path not in _MADE:
                made = roster.load(path)()
                assert isinstance(made, PublishTarget), path
                _MADE[path] = made
            found.append(_MADE[path])
    return (*found, _AGENTS_MD)


_AGENTS_MD = AgentsMd()


def plan_everything(
    ctx: PublishContext, previous: Mapping[tuple[str, str], Publication]
) -> tuple[list[Plan], dict[str, ScopeMemory]]:
    """Every plan for this publish, and the scopes it found (empty scopes count as absent).
    ``previous`` is the publications recorded so far, by (target name, scope)."""
    scopes: dict[str, ScopeMemory] = {}
    for key in list_scopes(ctx.memory_dir):
        scope = marked(read_scope(ctx.memory_dir, key, today=ctx.today), ctx)
        if not scope.empty:
            scopes[key] = scope

    def previous_of(name: str) -> dict[str, str | None]:
        """Scope -> the digest memd last wrote under ``name``, when it is known to be on disk."""
        return {
            scope: row.content_sha256 if row.outcome in PUBLISH_CURRENT else None
            for (target, scope), row in previous.items()
            if target == name
        }

    every = targets()
    on = [(target, target.enabled(ctx.publish)) for target in every]
    plans: list[Plan] = []
    for target, names in on:
        if (name := target.project_name) in names:
            try:
                plans += target.plan_projects(ctx, list(scopes.values()), previous_of(name))
            except Exception as exc:
                plans.append(failed_plan(name, GLOBAL_SCOPE, exc))
    global_scope = scopes.get(GLOBAL_SCOPE)
    if global_scope is not None:
        for target, names in on:
            if (name := target.global_name) in names:
                sha = previous_of(name).get(GLOBAL_SCOPE)
                plans.append(guard(name, GLOBAL_SCOPE, target.plan_global, ctx, global_scope, sha))
    enabled = {name for _, names in on for name in names}
    planned = {(p.target, p.scope) for p in plans}
    plans += _withdrawals(ctx, every, previous, scopes, planned, enabled)
    enforce(plans)  # before anything is published: every file within its agent's cut
    return plans, scopes


def marked(scope: ScopeMemory, ctx: PublishContext) -> ScopeMemory:
    """``scope`` with each topic's recent uses and, when a cited file changed, why it is stale."""
    topics = tuple(
        replace(
            t, uses=ctx.uses.get(f"{scope.scope}/{t.file}", 0), stale=ctx.stale.get(f"{scope.scope}/{t.file}")
        )
        for t in scope.topics
    )
    return replace(scope, topics=topics)


def _withdrawals(
    ctx: PublishContext,
    targets: Sequence[PublishTarget],
    previous: Mapping[tuple[str, str], Publication],
    scopes: Mapping[str, ScopeMemory],
    planned: set[tuple[str, str]],
    enabled: set[str],
) -> list[Plan]:
    """What memd published before for a scope that is gone (forgotten, emptied) or under a name
    that is off now: take memd's copy back."""
    owner = {name: target for target in targets for name in target.names}
    by_name: dict[str, dict[str, Publication]] = {}
    for (name, scope), row in previous.items():
        by_name.setdefault(name, {})[scope] = row
    plans = []
    for (name, scope), row in sorted(previous.items()):
        if (name, scope) in planned or row.outcome == PublishOutcome.WITHDRAWN:
            continue
        if scope in scopes and name in enabled:
            continue
        target = owner.get(name)
        if target is not None:
            plans.append(guard(name, scope, target.plan_withdrawal, ctx, row, by_name[name]))
        elif known_copy(row) is None:
            # A name no target has now: there is nobody to take a copy back, but nothing is known
            # to be there either, so the row can say withdrawn.
            plans.append(nothing_to_withdraw(row))
    return plans


def written_folders(homes: Homes, publish: PublishSettings, projects: Sequence[str] = ()) -> list[Path]:
    """Every folder the names that are on may write in, each once, in the order of ``targets()``;
    ``projects`` are the project folders memd knows."""
    folders: list[Path] = []
    for target in targets():
        if names := target.enabled(publish):
            folders += [f for f in target.folders(homes, names, projects) if f not in folders]
    return folders
