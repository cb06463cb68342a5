"""``publish_all``: every scope of the memory repository to every enabled target.

Planning reads the repository's working tree and the agents' files; applying writes atomically.
Each (target, scope) succeeds or fails alone and is recorded in ``publications``; nothing here
raises into the caller, so a failed publish never blocks the next consolidation.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from pipeline.clock import Clock
from pipeline.hits.rate import INDEX_KEY, WINDOW_DAYS
from pipeline.projects import scope_for
from pipeline.projects.scopes import folders_by_scope
from pipeline.publish.mcp_install import McpInstalls
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import ChangedMeanwhile, Homes, Plan, PublishContext, apply
from pipeline.publish.stale import check_stale, roots_of
from pipeline.publish.targets.base import short_error
from pipeline.publish.targets.registry import plan_everything
from pipeline.settings import Settings
from pipeline.store import Store, kv
from pipeline.store.publications import (
    Publication,
    known_projects,
    load_publications,
    project_activity,
    save_publications,
    scope_projects,
)
from pipeline.store.read.rows import on_store
from pipeline.store.read.uses import topic_sessions
from pipeline.vocabulary import PUBLISH_CURRENT, PUBLISH_FAILED, PublishOutcome

log = structlog.get_logger(__name__)

WOULD = {
    PublishOutcome.PUBLISHED: PublishOutcome.WOULD_PUBLISH,
    PublishOutcome.REPUBLISHED: PublishOutcome.WOULD_REPUBLISH,
    PublishOutcome.WITHDRAWN: PublishOutcome.WOULD_WITHDRAW,
}
"""A dry run's outcome for what the plan would have done."""
OUTSIDE_CHANGE = frozenset({PublishOutcome.REPUBLISHED, PublishOutcome.WOULD_REPUBLISH})
"""Outcomes of a copy someone else changed since memd last wrote it."""


WHOLE_RUN = "*"
"""The target and scope of a result about the whole run (nothing consolidated yet), not one target."""


@dataclass(frozen=True)
class TargetResult:
    target: str
    scope: str
    path: str
    outcome: PublishOutcome
    """published, republished (after someone else's change), unchanged, withdrawn, skipped, refused
    (sentinels broken: left alone), failed; in a dry run would_publish, would_republish, would_withdraw."""
    reason: str | None = None
    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    bytes_written: int = 0


@dataclass(frozen=True)
class PublishReport:
    dry_run: bool
    started_at: datetime
    finished_at: datetime
    results: tuple[TargetResult, ...] = field(default_factory=tuple)
    folders: dict[str, list[str]] = field(default_factory=dict)
    """Each scope's project folders (``pipeline.projects.scopes``), shown beside its key."""

    @property
    def failed(self) -> list[TargetResult]:
        """The targets that failed or were refused (left alone: the agents miss this memory)."""
        return [r for r in self.results if r.outcome in PUBLISH_FAILED]

    @property
    def changed(self) -> list[TargetResult]:
        return [r for r in self.results if r.written or r.removed]

    @property
    def outside_changes(self) -> list[TargetResult]:
        return [r for r in self.results if r.outcome in OUTSIDE_CHANGE]

    @property
    def failure(self) -> str | None:
        """What went wrong although the step ran to its end (``daemon.service.cycle.StepReport``): nothing."""
        return None

    @property
    def spend(self) -> tuple[int, float] | None:
        """A step's model tokens and dollars (``daemon.service.cycle.StepReport``): none spent here."""
        return None

    def summary(self) -> dict[str, Any]:
        """As the step's outcome is recorded (``daemon.service.cycle.StepReport``): its fields."""
        return dict(vars(self))


async def publish_all(
    store: Store, settings: Settings, clock: Clock, *, dry_run: bool = False
) -> PublishReport:
    """Publish every scope to every enabled target (``dry_run``: plan only, write nothing)."""
    started = clock.now()
    if not settings.paths.memory_dir.is_dir():
        outcome, reason = await _no_memory_dir(store, settings.paths.memory_dir)
        return PublishReport(
            dry_run, started, clock.now(), (TargetResult(WHOLE_RUN, WHOLE_RUN, "", outcome, reason),)
        )
    previous: dict[tuple[str, str], Publication] = {}
    projects: dict[str, str] = {}
    activity: dict[str, datetime] = {}
    uses: dict[str, int] = {}
    try:
        previous = {(p.target, p.scope): p for p in await load_publications(store)}
        projects = await scope_projects(store)
        for project, when in (await project_activity(store)).items():
            scope = scope_for(project)
            projects.setdefault(scope, project)
            if scope not in activity or when > activity[scope]:
                activity[scope] = when
        uses = await on_store(store, lambda rows: topic_sessions(rows, started - timedelta(days=WINDOW_DAYS)))
    except Exception as exc:
        log.warning("publish_store_unreadable", error=short_error(exc))
    stale: dict[str, str] = {}
    folders: dict[str, list[str]] = {}
    try:
        folders = folders_by_scope(await known_projects(store))
        roots = roots_of(projects, folders)
        stale = await check_stale(store, settings.paths.memory_dir, roots, now=started, record=not dry_run)
    except Exception as exc:
        log.warning("publish_stale_check_failed", error=short_error(exc))
    ctx = PublishContext(
        memory_dir=settings.paths.memory_dir,
        homes=Homes.from_settings(settings),
        publish=settings.publish,
        today=started.date(),
        projects=projects,
        activity=activity,
        uses=uses,
        stale=stale,
        mcp=McpInstalls(os.environ),
    )
    try:
        plans, scopes = await asyncio.to_thread(plan_everything, ctx, previous)
        results = [await asyncio.to_thread(execute, plan, dry_run) for plan in plans]
    except Exception as exc:
        log.error("publish_failed", error=short_error(exc))
        return PublishReport(
            dry_run,
            started,
            clock.now(),
            (TargetResult(WHOLE_RUN, WHOLE_RUN, "", PublishOutcome.FAILED, short_error(exc)),),
        )
    finished = clock.now()
    for plan, result in zip(plans, results, strict=True):
        _log_result(plan, result)
    if not dry_run:
        try:
            await _record(store, plans, results, previous, scopes, ctx, finished)
        except Exception as exc:
            log.error("publish_record_failed", error=short_error(exc))
    report = PublishReport(dry_run, started, finished, tuple(results), folders)
    log.info(
        "publish_done",
        dry_run=dry_run,
        targets=len(results),
        changed=len(report.changed),
        failed=len(report.failed),
        republished=len(report.outside_changes),
    )
    return report


async def _no_memory_dir(store: Store, memory_dir: Path) -> tuple[PublishOutcome, str]:
    """The outcome of a publish without a memory directory: (outcome, reason).

    Before the first consolidation there is no directory and nothing to publish: skipped. Once memd
    has published from it, a missing directory is unmounted or misconfigured: failed. Either way it
    is never read as "every scope is gone", so nothing is withdrawn.
    """
    try:
        published_before = bool(await load_publications(store))
    except Exception as exc:
        log.warning("publish_store_unreadable", error=short_error(exc))
        published_before = False
    if not published_before:
        log.info("publish_nothing_consolidated", memory_dir=str(memory_dir))
        return PublishOutcome.SKIPPED, f"nothing consolidated yet: {memory_dir} does not exist"
    log.warning("publish_no_memory_dir", memory_dir=str(memory_dir))
    return PublishOutcome.FAILED, (
        f"the memory directory {memory_dir} does not exist, though memd published from it before "
        "(unmounted or moved?); nothing published or withdrawn"
    )


def _result(
    plan: Plan,
    outcome: PublishOutcome,
    reason: str | None,
    *,
    files: tuple[list[str], list[str], int] | None = None,
) -> TargetResult:
    written, removed, size = files or ([], [], 0)
    return TargetResult(
        target=plan.target,
        scope=plan.scope,
        path=str(plan.location),
        outcome=outcome,
        reason=reason,
        written=tuple(written),
        removed=tuple(removed),
        bytes_written=size,
    )


def execute(plan: Plan, dry_run: bool) -> TargetResult:
    """Apply one plan (or say what it would do) and name the outcome."""
    if plan.error:
        return _result(plan, PublishOutcome.FAILED, plan.error)
    if plan.refused and not plan.changes:
        return _result(plan, PublishOutcome.REFUSED, "; ".join([plan.refused, *plan.notes]))
    reasons = [r for r in (plan.refused, plan.skip_reason) if r] + plan.notes
    reason = "; ".join(reasons) or None
    if not plan.changes:
        outcome = (
            PublishOutcome.SKIPPED
            if plan.skip_reason
            else PublishOutcome.WITHDRAWN
            if plan.withdraw
            else PublishOutcome.UNCHANGED
        )
        return _result(plan, outcome, reason)
    done = (
        PublishOutcome.REFUSED  # refused, memd's copy taken back (see ``Plan.refused``)
        if plan.refused
        else PublishOutcome.WITHDRAWN
        if plan.withdraw
        else PublishOutcome.REPUBLISHED
        if plan.outside_change
        else PublishOutcome.PUBLISHED
    )
    if dry_run:
        planned = (
            [str(c.path) for c in plan.changes if c.data is not None],
            [str(c.path) for c in plan.changes if c.data is None],
            sum(len(c.data) for c in plan.changes if c.data is not None),
        )
        return _result(plan, WOULD.get(done, done), reason, files=planned)
    try:
        files = apply(plan)
    except (ChangedMeanwhile, OSError) as exc:
        return _result(plan, PublishOutcome.FAILED, short_error(exc))
    return _result(
        plan, PublishOutcome.SKIPPED if plan.skip_reason and not plan.refused else done, reason, files=files
    )


async def _record(
    store: Store,
    plans: list[Plan],
    results: list[TargetResult],
    previous: dict[tuple[str, str], Publication],
    scopes: dict[str, ScopeMemory],
    ctx: PublishContext,
    now: datetime,
) -> None:
    rows: dict[tuple[str, str], Publication] = {}
    for plan, result in zip(plans, results, strict=True):
        if result.target == WHOLE_RUN:
            continue
        prev = previous.get((plan.target, plan.scope))
        applied = bool(result.written or result.removed)
        sha: str | None = prev.content_sha256 if prev else None
        when: datetime | None = prev.published_at if prev else None
        if result.outcome in PUBLISH_CURRENT or (result.outcome == PublishOutcome.SKIPPED and applied):
            sha = plan.digest
            when = now if applied or when is None else when
        elif result.outcome == PublishOutcome.FAILED:
            sha = None
        republished_at = prev.republished_at if prev else None
        republish_reason = prev.republish_reason if prev else None
        if result.outcome == PublishOutcome.REPUBLISHED:
            republished_at, republish_reason = now, result.reason
        rows[(plan.target, plan.scope)] = Publication(
            target=plan.target,
            scope=plan.scope,
            path=prev.path if plan.error and prev is not None else str(plan.location),
            content_sha256=sha,
            published_at=when,
            outcome=result.outcome,
            reason=result.reason,
            republished_at=republished_at,
            republish_reason=republish_reason,
        )
    await save_publications(store, rows.values())
    await kv.put(store, INDEX_KEY, await _usage_index(store, plans, results, scopes, ctx, now), now=now)


async def _usage_index(
    store: Store,
    plans: Iterable[Plan],
    results: Iterable[TargetResult],
    scopes: dict[str, ScopeMemory],
    ctx: PublishContext,
    now: datetime,
) -> dict[str, Any]:
    """Every path an agent may read memd's memory at -> (scope, file); each topic's sources."""
    old = await kv.get(store, INDEX_KEY, {}) or {}
    files: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    for scope in scopes.values():
        for topic in scope.topics:
            files[str(topic.path)] = [scope.scope, topic.file]
            sources[f"{scope.scope}/{topic.file}"] = list(topic.sources)
    for plan, result in zip(plans, results, strict=True):
        if result.outcome in PUBLISH_CURRENT or result.outcome == PublishOutcome.SKIPPED:
            for path, (scope_key, file) in plan.published.items():
                files[path] = [scope_key, file]
    first = dict(old.get("first_published") or {}) if isinstance(old, dict) else {}
    for scope_key in scopes:
        first.setdefault(scope_key, now.isoformat())
    return {"memory_dir": str(ctx.memory_dir), "files": files, "sources": sources, "first_published": first}


def _log_result(plan: Plan, result: TargetResult) -> None:
    fields = {"target": result.target, "scope": result.scope, "path": result.path, "outcome": result.outcome}
    if result.outcome == PublishOutcome.REFUSED:
        log.warning("publish_refused", **fields, reason=result.reason)
    elif result.outcome == PublishOutcome.FAILED:
        log.warning("publish_target_failed", **fields, reason=result.reason)
    elif plan.outside_change:
        log.warning("publish_outside_change", **fields, reason=result.reason)
    else:
        log.debug("publish_target", **fields, written=len(result.written), removed=len(result.removed))
