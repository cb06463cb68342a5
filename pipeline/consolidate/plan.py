"""Which scopes need a consolidation run, and why (or why not yet).

A scope needs a run when its live inputs differ from its watermark (what the last run consumed or
a rejected inbox run proposed), or when a topic of it became stale (a cited file changed: the run
offers it to phase 2 to fix or drop). What the run adds and removes is counted against what *landed* on
the repository's branch, so a session a rejected run proposed is named as new when it lands later.
``memd forget`` plans with ``landed_only``: the run rebuilds from the inputs already on the branch,
never from a rejected or pending run's sessions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from pipeline.layout import GLOBAL_SCOPE, is_scope
from pipeline.memory.current import stated_values
from pipeline.memory.inputs import (
    InputRecord,
    about_the_user,
    as_global,
    feeds_global,
    strongest_evidence,
    told,
)
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store import consolidation as db
from pipeline.store import notes as notes_db
from pipeline.store.read.flags import Flag
from pipeline.vocabulary import RunOutcome

Action = Literal["consolidate", "clear", "none"]


@dataclass(frozen=True)
class ScopePlan:
    scope: str
    action: Action
    inputs: list[InputRecord] = field(default_factory=list)
    added: list[InputRecord] = field(default_factory=list)
    removed: list[InputRecord] = field(default_factory=list)
    state: db.ScopeState | None = None
    skip_reason: str | None = None
    """Set when the scope has work but may not run now (cooldown, retry, review, bad name)."""
    consumed: frozenset[int] | None = None
    """The watermark a successful run leaves (None: its inputs); a forget's keeps what was rejected."""
    rebuild: bool = False
    """Run although this machine's inputs did not change: the scope on the branch must be rebuilt
    (a sync merged another machine's forget, or a forget of a session only the repository holds)."""
    notes: list[notes_db.Note] = field(default_factory=list)
    """Notes agents handed memd (``memd mcp``) that no run took yet: inputs beside the extracts."""
    flags: list[Flag] = field(default_factory=list)
    """Topics agents called wrong or stale that no run was given yet: to fix or drop."""

    @property
    def watermark_after(self) -> frozenset[int]:
        return self.consumed if self.consumed is not None else frozenset(r.id for r in self.inputs)

    @property
    def project(self) -> str | None:
        for record in self.inputs:
            if record.project:
                return record.project
        if self.state and self.state.project:
            return self.state.project
        return next((n.project for n in self.notes if n.project), None)

    @property
    def runnable(self) -> bool:
        return self.action != "none" and self.skip_reason is None


def input_of(extract: db.Extract) -> InputRecord:
    """A stored extract as phase 2 consumes it."""
    return InputRecord(
        id=extract.id,
        session_id=extract.session_id,
        source=extract.source,
        project=extract.project,
        scope=extract.scope,
        rollout_slug=extract.rollout_slug,
        rollout_summary=extract.rollout_summary,
        raw_memory=extract.raw_memory,
        session_started_at=extract.session_started_at,
        session_last_activity=extract.session_last_activity,
        created_at=extract.created_at,
        evidence=strongest_evidence(extract.memories),
        values=stated_values(extract.memories),
        told=told(extract.memories),
    )


async def live_inputs(
    store: Store, scope: str, *, now: datetime, max_unused_days: float, limit: int
) -> list[InputRecord]:
    """The scope's inputs (``pipeline.store.consolidation``), ordered by id: for global, the user
    memories of every live extract of a project (``about_the_user``)."""
    extracts = await db.live_extracts(
        store, scope, now=now, max_unused_days=max_unused_days, limit=limit, feeds_global=feeds_global
    )
    if scope != GLOBAL_SCOPE:
        return [input_of(e) for e in extracts]
    return [r for e in extracts if (r := about_the_user(input_of(e), e.memories)) is not None]


async def inputs_by_id(store: Store, ids: Iterable[int], *, scope: str) -> list[InputRecord]:
    """The extracts ``ids`` as inputs (for global: named by their session only)."""
    records = [input_of(e) for e in await db.extracts_by_id(store, ids)]
    return [as_global(r) for r in records] if scope == GLOBAL_SCOPE else records


async def plan_scope(
    store: Store,
    settings: Settings,
    scope: str,
    *,
    now: datetime,
    force: bool = False,
    landed_only: bool = False,
    rebuild: bool = False,
) -> ScopePlan:
    """The plan for one scope. ``force`` ignores the cooldown and a pending retry; ``landed_only``
    keeps only the inputs already on the branch (both for ``memd forget``); ``rebuild`` plans a run
    even when this machine's inputs are what the scope last consumed (``ScopePlan.rebuild``)."""
    if not is_scope(scope):
        return ScopePlan(scope, "none", skip_reason=f"not a valid scope name: {scope!r}")
    memories = settings.memories
    inputs = await live_inputs(
        store, scope, now=now, max_unused_days=memories.max_unused_days, limit=memories.max_inputs_per_scope
    )
    state = await db.get_scope(store, scope)
    rebuild = rebuild or (state is not None and state.rebuild)
    watermark = state.watermark if state else frozenset()
    landed = state.landed if state else frozenset()
    consumed: frozenset[int] | None = None
    if landed_only:
        consumed = watermark & {r.id for r in inputs}
        inputs = [r for r in inputs if r.id in landed]
        watermark = landed
    live = {r.id for r in inputs}
    # A forget rebuilds from what landed only; a note or a flag waits for the next ordinary run.
    notes = [] if landed_only else await notes_db.open_notes(store, scope)
    flags = [] if landed_only else await notes_db.open_flags(store, scope)
    stale = state is not None and state.stale and not landed_only
    if live == watermark and not rebuild and not notes and not flags and not stale:
        return ScopePlan(scope, "none", inputs, state=state, consumed=consumed)
    added = [r for r in inputs if r.id not in landed]
    removed = await inputs_by_id(store, landed - live, scope=scope)
    action: Action = "consolidate"
    if not inputs and await _forget_emptied(store, scope, removed):
        action = "clear"
    plan = ScopePlan(
        scope,
        action,
        inputs,
        added,
        removed,
        state,
        consumed=consumed,
        rebuild=rebuild,
        notes=notes,
        flags=flags,
    )
    reason = None if force else await _hold_reason(store, settings, plan, now)
    if reason is None:
        reason = await _pending_review(store, scope)
    return plan if reason is None else replace(plan, skip_reason=reason)


async def _forget_emptied(store: Store, scope: str, removed: list[InputRecord]) -> bool:
    """No input is left and a forget did it: every extract forgotten, or one removed since the last run."""
    if await db.scope_fully_forgotten(store, scope):
        return True
    return bool({r.session_id for r in removed} & await db.forgotten_sessions(store, scope))


async def _hold_reason(store: Store, settings: Settings, plan: ScopePlan, now: datetime) -> str | None:
    state = plan.state
    if state is None:
        return None
    if state.retry_at is not None and state.retry_at > now:
        return f"retrying after a failed run at {state.retry_at.isoformat(timespec='minutes')}"
    cooldown = timedelta(minutes=settings.schedule.consolidate_cooldown_minutes)
    if state.rebuild:
        return None  # a withdrawn digest waits for no cooldown
    if state.last_success_at is not None and state.last_success_at + cooldown > now:
        until = state.last_success_at + cooldown
        return f"cooling down until {until.isoformat(timespec='minutes')}"
    return None


async def _pending_review(store: Store, scope: str) -> str | None:
    pending = await db.list_runs(store, scope=scope, outcomes=[RunOutcome.PENDING_REVIEW], limit=1)
    if pending:
        return f"waiting for review: memd inbox show {pending[0].run_id}"
    return None


async def plan_all(store: Store, settings: Settings, *, now: datetime) -> list[ScopePlan]:
    """A plan for every scope memd knows, global first."""
    scopes = sorted(set(await db.candidate_scopes(store)) | await notes_db.scopes_with_open(store))
    scopes.sort(key=lambda s: (s != GLOBAL_SCOPE, s))
    return [await plan_scope(store, settings, s, now=now) for s in scopes]
