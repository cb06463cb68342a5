"""Which plans one publish makes: every enabled target for every scope, and withdrawals (of a
scope that is gone, and of everything memd published to a target that has since been turned off:
a stale copy an agent keeps loading is worse than none).

A target's planner that raises becomes a failed plan with the reason, so one target's bug never
stops the others.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.projects import ProjectResolver
from pipeline.publish.blockfile import plan_block_withdraw
from pipeline.publish.folder import plan_withdraw
from pipeline.publish.memfiles import GLOBAL, ScopeMemory, list_scopes, read_scope
from pipeline.publish.plan import Plan, PublishContext
from pipeline.publish.targets import agents_md, claude_code, codex, gemini
from pipeline.store.publications import Publication

CURRENT = frozenset({"published", "republished", "unchanged", "withdrawn"})
"""Outcomes after which what is on disk is what memd last wrote."""
FOLDER_TARGETS = {claude_code.TARGET, gemini.TARGET}
BLOCK_TARGETS = {claude_code.TARGET_GLOBAL, gemini.TARGET_GLOBAL, codex.TARGET_GLOBAL, agents_md.TARGET}


def plan_everything(
    ctx: PublishContext, previous: dict[tuple[str, str], Publication]
) -> tuple[list[Plan], dict[str, ScopeMemory]]:
    """Every plan for this publish, and the scopes it found (empty scopes count as absent)."""
    scopes: dict[str, ScopeMemory] = {}
    for key in list_scopes(ctx.memory_dir):
        scope = read_scope(ctx.memory_dir, key, today=ctx.today)
        if not scope.empty:
            scopes[key] = scope

    def prev_sha(target: str, scope: str) -> str | None:
        row = previous.get((target, scope))
        return row.content_sha256 if row is not None and row.outcome in CURRENT else None

    plans: list[Plan] = []
    pub = ctx.publish
    projects = [s for k, s in scopes.items() if k != GLOBAL]
    for s in projects:
        if pub.claude_code:
            plans.append(
                _guard(
                    claude_code.TARGET,
                    s.scope,
                    claude_code.plan_project,
                    ctx,
                    s,
                    prev_sha(claude_code.TARGET, s.scope),
                )
            )
        if pub.agents_md:
            plans.append(
                _guard(
                    agents_md.TARGET,
                    s.scope,
                    agents_md.plan_project,
                    ctx,
                    s,
                    prev_sha(agents_md.TARGET, s.scope),
                )
            )
    if pub.gemini and projects:
        registry = gemini.read_projects_json(ctx.homes.gemini)
        resolver = ProjectResolver()
        for s in projects:
            sha = prev_sha(gemini.TARGET, s.scope)
            plans.append(_guard(gemini.TARGET, s.scope, gemini.plan_project, ctx, s, sha, registry, resolver))
    if pub.codex:
        codex_prev = {
            scope: prev_sha(target, scope) for (target, scope) in previous if target == codex.TARGET
        }
        try:
            plans += codex.plan_all(ctx, list(scopes.values()), codex_prev)
        except Exception as exc:
            plans.append(failed_plan(codex.TARGET, GLOBAL, exc))
    global_scope = scopes.get(GLOBAL)
    if global_scope is not None:
        for enabled, target, planner in (
            (pub.claude_code_global, claude_code.TARGET_GLOBAL, claude_code.plan_global),
            (pub.gemini_global, gemini.TARGET_GLOBAL, gemini.plan_global),
            (pub.codex_global, codex.TARGET_GLOBAL, codex.plan_global),
        ):
            if enabled:
                plans.append(_guard(target, GLOBAL, planner, ctx, global_scope, prev_sha(target, GLOBAL)))
    turned_on = {name for name, on in pub.model_dump().items() if on is True}
    plans += _withdrawals(ctx, previous, scopes, {(p.target, p.scope) for p in plans}, turned_on)
    return plans, scopes


def _withdrawals(
    ctx: PublishContext,
    previous: dict[tuple[str, str], Publication],
    scopes: dict[str, ScopeMemory],
    planned: set[tuple[str, str]],
    enabled: set[str],
) -> list[Plan]:
    """What memd published before for a scope that is gone (forgotten, emptied) or to a target
    that is off now: take memd's copy back."""
    plans = []
    codex_off = {s: r for (t, s), r in previous.items() if t == codex.TARGET and codex.TARGET not in enabled}
    for (target, scope), row in sorted(previous.items()):
        if (target, scope) in planned or row.outcome == "withdrawn":
            continue
        if scope in scopes and target in enabled:
            continue
        if target == codex.TARGET and codex_off:
            if scope == GLOBAL:
                plans.append(_guard(target, scope, codex.plan_withdraw_all, ctx, codex_off))
            else:
                plans.append(Plan(target=target, scope=scope, location=Path(row.path), withdraw=True))
            continue
        if row.content_sha256 is None or not Path(row.path).is_absolute():
            # memd has nothing known to be there (it skipped, failed or was refused): just say so.
            plans.append(Plan(target=target, scope=scope, location=Path(row.path), withdraw=True))
        elif target in FOLDER_TARGETS:
            plans.append(_guard(target, scope, plan_withdraw, target, scope, Path(row.path)))
        elif target in BLOCK_TARGETS:
            plans.append(_guard(target, scope, plan_block_withdraw, target, scope, Path(row.path)))
        elif target == codex.TARGET:
            plans.append(Plan(target=target, scope=scope, location=Path(row.path), withdraw=True))
    return plans


def _guard(target: str, scope: str, make: Callable[..., Plan], *args: Any) -> Plan:
    """``make(*args)``, or a failed plan saying why: one target's bug never stops the others."""
    try:
        return make(*args)
    except Exception as exc:
        return failed_plan(target, scope, exc)


def failed_plan(target: str, scope: str, exc: BaseException) -> Plan:
    plan = Plan(target=target, scope=scope, location=Path("."))
    plan.error = short_error(exc)
    return plan


def short_error(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
