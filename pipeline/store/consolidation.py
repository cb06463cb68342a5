"""Phase 2's state: each scope's inputs and watermark, its runs, and forgetting.

A scope's *inputs* are its live phase-1 extracts: not superseded by a newer extract of the same
session, not forgotten, and used (or created) within ``max_unused_days``; at most ``limit`` of
them, the most used and then the most recent. The *watermark* is the set of extract ids the last
successful run consumed (or a rejected inbox run proposed): a scope needs a run when its inputs
differ from it. The *landed* set is the extract ids whose text is on the repository's branch (the
last run that landed there); ``memd forget`` rebuilds from those only, so a rejected or pending
run's sessions never land through it.

The store hands them over as ``Extract`` rows; phase 2 makes them its inputs (``pipeline.consolidate.plan``).
The global scope's inputs are not extracts of its own: they are the ``user`` memories of every live
extract of a project (``pipeline.memory.inputs.about_the_user``), so the store keeps only the extracts
the caller's ``feeds_global`` accepts. On a store several machines share
(team mode) ``global/`` is per person: its inputs are the extracts of this machine's person's machines
only (``pipeline.store.machines``), and each machine keeps its own record of it (``scope_key``), since
a person's ``global/`` never travels through the team's ``[sync]`` remote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, select, update

from pipeline.layout import GLOBAL_SCOPE
from pipeline.store.engine import Store
from pipeline.store.purge import FORGOTTEN_TEXT, purging
from pipeline.store.read.keys import PERSONAL_SEPARATOR, personal_key
from pipeline.store.schema import consolidation_runs, scopes, stage1_outputs, transcripts
from pipeline.vocabulary import RunOutcome, run_failed

FeedsGlobal = Callable[[Sequence[Any]], bool]
"""Whether an extract's candidate memories make it an input of the global scope (the caller's rule:
``pipeline.memory.inputs.feeds_global``)."""


@dataclass(frozen=True)
class Extract:
    """One phase-1 extract, as the store holds it (phase 2 makes it an ``InputRecord``)."""

    id: int
    session_id: str
    source: str
    project: str | None
    scope: str
    rollout_slug: str
    rollout_summary: str
    raw_memory: str
    session_started_at: datetime | None
    session_last_activity: datetime | None
    created_at: datetime
    memories: tuple[Any, ...] = ()
    """Its candidate memories, as stored."""


@dataclass(frozen=True)
class ScopeState:
    key: str
    project: str | None
    watermark: frozenset[int]
    landed: frozenset[int]
    """The inputs on the repository's branch (the last landed run's)."""
    last_success_at: datetime | None
    last_commit: str | None
    retry_at: datetime | None
    rebuild: bool = False
    """The scope on the branch must be rebuilt although this machine's inputs did not change: a
    forget withdrew what a session taught and no model could rebuild it then, or a sync merged
    another machine's forget (``pipeline.consolidate.plan``)."""
    stale: bool = False
    """A topic of the scope became stale since its last run (a cited file changed or is gone:
    ``pipeline.publish.stale``): the next run offers it to phase 2, once, after the cooldown."""


@dataclass(frozen=True)
class RunRow:
    run_id: str
    scope: str
    mode: str
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    reason: str | None
    commit: str | None
    branch: str | None
    inputs: dict[str, Any]
    usage: dict[str, Any]

    @property
    def failed(self) -> bool:
        """A failure of phase 2 (``pipeline.vocabulary.RUN_FAILED``), as `memd status` counts one."""
        return run_failed(self.outcome)


def scope_key(store: Store, scope: str) -> str:
    """The key of ``scope``'s record (watermark, last commit) in the store: global's is this machine's
    own on a shared store (``global@<machine>``), every other scope's is its name."""
    if scope == GLOBAL_SCOPE and store.shared:
        return personal_key(GLOBAL_SCOPE, store.machine)
    return scope


def _extract(r: Any) -> Extract:
    return Extract(
        id=r.id,
        session_id=r.session_id,
        source=r.source,
        project=r.project,
        scope=r.scope,
        rollout_slug=r.rollout_slug,
        rollout_summary=r.rollout_summary,
        raw_memory=r.raw_memory,
        session_started_at=r.session_started_at,
        session_last_activity=r.session_last_activity,
        created_at=r.created_at,
        memories=tuple(r.memories or ()),
    )


def _live(now: datetime, max_unused_days: float) -> Any:
    cutoff = now - timedelta(days=max_unused_days)
    return and_(
        stage1_outputs.c.superseded_by.is_(None),
        stage1_outputs.c.forgotten_at.is_(None),
        func.coalesce(stage1_outputs.c.last_used_at, stage1_outputs.c.created_at) >= cutoff,
    )


async def live_extracts(
    store: Store,
    scope: str,
    *,
    now: datetime,
    max_unused_days: float,
    limit: int,
    feeds_global: FeedsGlobal,
) -> list[Extract]:
    """The extracts of the scope's inputs (see the module docstring), ordered by id."""
    order = (
        stage1_outputs.c.use_count.desc(),
        func.coalesce(stage1_outputs.c.last_used_at, stage1_outputs.c.created_at).desc(),
        stage1_outputs.c.id.desc(),
    )
    if scope == GLOBAL_SCOPE:
        live = _live(now, max_unused_days)
        if store.shared:  # team mode: this person's machines' extracts only
            from pipeline.store.machines import person_machines

            theirs = select(transcripts.c.id).where(
                transcripts.c.machine.in_(sorted(await person_machines(store)))
            )
            live = and_(live, stage1_outputs.c.transcript_id.in_(theirs))
        return await _global_extracts(store, live, order, limit, feeds_global)
    stmt = (
        select(stage1_outputs)
        .where(stage1_outputs.c.scope == scope, _live(now, max_unused_days))
        .order_by(*order)
        .limit(limit)
    )
    async with store.read() as conn:
        rows = (await conn.execute(stmt)).all()
    return sorted((_extract(r) for r in rows), key=lambda r: r.id)


async def _global_extracts(
    store: Store, live: Any, order: tuple[Any, ...], limit: int, feeds_global: FeedsGlobal
) -> list[Extract]:
    """Every live extract of a project that feeds global (a session without a user memory never counts)."""
    stmt = select(stage1_outputs).where(stage1_outputs.c.scope != GLOBAL_SCOPE, live).order_by(*order)
    found: list[Extract] = []
    async with store.read() as conn:
        for r in (await conn.execute(stmt)).all():
            if feeds_global(r.memories or []):
                found.append(_extract(r))
                if len(found) >= limit:
                    break
    return sorted(found, key=lambda r: r.id)


async def extracts_by_id(store: Store, ids: Iterable[int]) -> list[Extract]:
    """The extracts ``ids``, ordered by id."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    async with store.read() as conn:
        rows = (await conn.execute(select(stage1_outputs).where(stage1_outputs.c.id.in_(wanted)))).all()
    return sorted((_extract(r) for r in rows), key=lambda r: r.id)


async def candidate_scopes(store: Store) -> list[str]:
    """Every scope that has extracts or a consolidation record, and global once any extract exists."""
    async with store.read() as conn:
        from_outputs = set((await conn.execute(select(stage1_outputs.c.scope).distinct())).scalars().all())
        from_scopes = {
            GLOBAL_SCOPE if key == scope_key(store, GLOBAL_SCOPE) else key
            for key in (await conn.execute(select(scopes.c.key))).scalars().all()
            if PERSONAL_SEPARATOR not in key  # another machine's global record
            or key == scope_key(store, GLOBAL_SCOPE)
        }
    if from_outputs:
        from_outputs.add(GLOBAL_SCOPE)
    return sorted(from_outputs | from_scopes)


async def forgotten_sessions(store: Store, scope: str) -> set[str]:
    """Sessions of ``scope`` that were forgotten (every extract of theirs carries ``forgotten_at``);
    for global, which every session may feed, those of every scope."""
    stmt = select(stage1_outputs.c.session_id)
    if scope != GLOBAL_SCOPE:
        stmt = stmt.where(stage1_outputs.c.scope == scope)
    stmt = stmt.group_by(stage1_outputs.c.session_id).having(
        func.count(stage1_outputs.c.forgotten_at) == func.count()
    )
    async with store.read() as conn:
        return set((await conn.execute(stmt)).scalars().all())


async def scope_fully_forgotten(store: Store, scope: str) -> bool:
    """Whether the scope has extracts and every one of them is forgotten (never for global, which has
    no extracts of its own: ``pipeline.consolidate.plan`` tells a forget there by its removed inputs)."""
    if scope == GLOBAL_SCOPE:
        return False
    stmt = select(func.count(), func.count(stage1_outputs.c.forgotten_at)).where(
        stage1_outputs.c.scope == scope
    )
    async with store.read() as conn:
        total, forgotten = (await conn.execute(stmt)).one()
    return int(total) > 0 and int(total) == int(forgotten)


async def get_scope(store: Store, scope: str) -> ScopeState | None:
    async with store.read() as conn:
        r = (await conn.execute(select(scopes).where(scopes.c.key == scope_key(store, scope)))).first()
    if r is None:
        return None
    raw = r.watermark or {}
    watermark = frozenset(int(i) for i in raw.get("inputs", []))
    return ScopeState(
        key=scope,
        project=r.project,
        watermark=watermark,
        landed=frozenset(int(i) for i in raw["landed"]) if "landed" in raw else watermark,
        last_success_at=r.last_success_at,
        last_commit=r.last_commit,
        retry_at=r.retry_at,
        rebuild=raw.get("rebuild") is True,
        stale=raw.get("stale") is True,
    )


async def _upsert_scope(store: Store, scope: str, values: dict[str, Any], *, now: datetime) -> None:
    stmt = store.insert(scopes).values(key=scope_key(store, scope), updated_at=now, **values)
    stmt = stmt.on_conflict_do_update(index_elements=[scopes.c.key], set_={**values, "updated_at": now})
    async with store.write() as conn:
        await conn.execute(stmt)


async def save_success(
    store: Store,
    scope: str,
    *,
    inputs: Iterable[int],
    commit: str | None,
    project: str | None,
    now: datetime,
    consumed: Iterable[int] | None = None,
    rebuild: bool = False,
) -> None:
    """A run landed ``inputs`` on the branch; ``consumed`` (default: the same) becomes the watermark.
    ``rebuild``: what it landed must be rebuilt by a later run (``ScopeState.rebuild``)."""
    landed = sorted(set(inputs))
    watermark: dict[str, Any] = {
        "inputs": landed if consumed is None else sorted(set(consumed)),
        "landed": landed,
    }
    if rebuild:
        watermark["rebuild"] = True
    values: dict[str, Any] = {
        "watermark": watermark,
        "last_success_at": now,
        "retry_at": None,
        "project": project,
    }
    if commit is not None:
        values["last_commit"] = commit
    await _upsert_scope(store, scope, values, now=now)


async def mark_stale(store: Store, scope: str, *, now: datetime) -> None:
    """A topic of ``scope`` became stale: the scope needs a run (cleared by its next success). A scope
    this machine never consolidated is left alone (its topics came by sync; its own machine runs it)."""
    async with store.write() as conn:
        row = (
            await conn.execute(select(scopes.c.watermark).where(scopes.c.key == scope_key(store, scope)))
        ).first()
        if row is None:
            return
        watermark = {**(row.watermark or {}), "stale": True}
        await conn.execute(
            update(scopes)
            .where(scopes.c.key == scope_key(store, scope))
            .values(watermark=watermark, updated_at=now)
        )


async def save_watermark(store: Store, scope: str, *, inputs: Iterable[int], now: datetime) -> None:
    """Mark inputs as consumed without a new success (a rejected inbox run): what landed stays."""
    state = await get_scope(store, scope)
    landed = sorted(state.landed) if state is not None else []
    watermark = {"inputs": sorted(set(inputs)), "landed": landed}
    await _upsert_scope(store, scope, {"watermark": watermark}, now=now)


async def save_retry_at(store: Store, scope: str, *, retry_at: datetime, now: datetime) -> None:
    await _upsert_scope(store, scope, {"retry_at": retry_at}, now=now)


# ---------------------------------------------------------------- runs


def _run(r: Any) -> RunRow:
    return RunRow(
        run_id=r.run_id,
        scope=r.scope,
        mode=r.mode,
        started_at=r.started_at,
        finished_at=r.finished_at,
        outcome=r.outcome,
        reason=r.reason,
        commit=r.commit,
        branch=r.branch,
        inputs=dict(r.inputs or {}),
        usage=dict(r.usage or {}),
    )


async def start_run(
    store: Store, *, run_id: str, scope: str, mode: str, now: datetime, inputs: dict[str, Any]
) -> None:
    async with store.write() as conn:
        await conn.execute(
            consolidation_runs.insert().values(
                run_id=run_id,
                scope=scope,
                mode=mode,
                started_at=now,
                outcome=RunOutcome.RUNNING,
                inputs=inputs,
            )
        )


async def finish_run(
    store: Store,
    run_id: str,
    *,
    outcome: RunOutcome,
    now: datetime,
    reason: str | None = None,
    commit: str | None = None,
    branch: str | None = None,
    usage: dict[str, Any] | None = None,
    mode: str | None = None,
) -> None:
    values: dict[str, Any] = {"outcome": outcome, "finished_at": now, "reason": reason}
    for key, value in (("commit", commit), ("branch", branch), ("usage", usage), ("mode", mode)):
        if value is not None:
            values[key] = value
    async with store.write() as conn:
        await conn.execute(
            update(consolidation_runs).where(consolidation_runs.c.run_id == run_id).values(**values)
        )


async def running_runs(store: Store, scope: str) -> list[RunRow]:
    """Runs of ``scope`` still marked running (under the scope's lease: their process died)."""
    stmt = select(consolidation_runs).where(
        consolidation_runs.c.scope == scope, consolidation_runs.c.outcome == RunOutcome.RUNNING
    )
    async with store.read() as conn:
        return [_run(r) for r in (await conn.execute(stmt)).all()]


async def mark_abandoned(store: Store, scope: str, *, now: datetime) -> int:
    """Runs of ``scope`` still marked running become ``crashed``: call it holding the scope's lease,
    when no run of the scope can be alive (a process killed mid-run never recorded its end)."""
    stmt = (
        update(consolidation_runs)
        .where(consolidation_runs.c.scope == scope, consolidation_runs.c.outcome == RunOutcome.RUNNING)
        .values(outcome=RunOutcome.CRASHED, finished_at=now, reason="abandoned: the process running it died")
    )
    async with store.write() as conn:
        result = await conn.execute(stmt)
    return int(result.rowcount)


async def get_run(store: Store, run_id: str) -> RunRow | None:
    async with store.read() as conn:
        r = (
            await conn.execute(select(consolidation_runs).where(consolidation_runs.c.run_id == run_id))
        ).first()
    return None if r is None else _run(r)


async def list_runs(
    store: Store, *, scope: str | None = None, outcomes: Iterable[RunOutcome] | None = None, limit: int = 100
) -> list[RunRow]:
    stmt = select(consolidation_runs).order_by(
        consolidation_runs.c.started_at.desc(), consolidation_runs.c.id.desc()
    )
    if scope is not None:
        stmt = stmt.where(consolidation_runs.c.scope == scope)
    if outcomes is not None:
        stmt = stmt.where(consolidation_runs.c.outcome.in_(list(outcomes)))
    async with store.read() as conn:
        rows = (await conn.execute(stmt.limit(limit))).all()
    return [_run(r) for r in rows]


# ---------------------------------------------------------------- forgetting


def _forget_cond(session_id: str | None, scope: str | None) -> Any:
    if (session_id is None) == (scope is None):
        raise ValueError("forget needs exactly one of session_id or scope")
    return (
        stage1_outputs.c.session_id == session_id
        if session_id is not None
        else stage1_outputs.c.scope == scope
    )


async def _counts(conn: Any, cond: Any, feeds_global: FeedsGlobal) -> dict[str, int]:
    rows = (
        await conn.execute(
            select(stage1_outputs.c.scope, stage1_outputs.c.memories).where(
                cond, stage1_outputs.c.forgotten_at.is_(None)
            )
        )
    ).all()
    counts: dict[str, int] = {}
    for row_scope, memories in rows:
        counts[str(row_scope)] = counts.get(str(row_scope), 0) + 1
        if row_scope != GLOBAL_SCOPE and feeds_global(memories or []):
            counts[GLOBAL_SCOPE] = counts.get(GLOBAL_SCOPE, 0) + 1
    return counts


async def to_forget(
    store: Store, *, feeds_global: FeedsGlobal, session_id: str | None = None, scope: str | None = None
) -> dict[str, int]:
    """What ``forget`` would mark now, per affected scope (nothing is changed)."""
    cond = _forget_cond(session_id, scope)
    async with store.read() as conn:
        return await _counts(conn, cond, feeds_global)


async def forget(
    store: Store,
    *,
    now: datetime,
    feeds_global: FeedsGlobal,
    session_id: str | None = None,
    scope: str | None = None,
) -> dict[str, int]:
    """Mark the extracts of a session (in every scope) or of a whole scope forgotten, and remove their
    text (``pipeline.store.purge``). Returns the count per affected scope; global counts the extracts
    that fed it user memories."""
    cond = _forget_cond(session_id, scope)
    async with purging(store) as conn:
        counts = await _counts(conn, cond, feeds_global)
        await conn.execute(
            update(stage1_outputs)
            .where(cond, stage1_outputs.c.forgotten_at.is_(None))
            .values(forgotten_at=now)
        )
        # Every extract matched, those an older memd forgot without removing their text included.
        await conn.execute(update(stage1_outputs).where(cond).values(**FORGOTTEN_TEXT))
    return counts


async def not_withdrawn(store: Store, *, session_id: str | None = None, scope: str | None = None) -> set[str]:
    """The scopes whose memory on the branch still holds forgotten extracts of the session (or of the
    scope): the last run that landed there consumed them, and no run since withdrew them (a forget
    whose rewrite of the scope failed)."""
    cond = _forget_cond(session_id, scope)
    mine = scope_key(store, GLOBAL_SCOPE)
    async with store.read() as conn:
        ids = set(
            (
                await conn.execute(
                    select(stage1_outputs.c.id).where(cond, stage1_outputs.c.forgotten_at.is_not(None))
                )
            )
            .scalars()
            .all()
        )
        rows = (await conn.execute(select(scopes.c.key, scopes.c.watermark))).all() if ids else []
    found: set[str] = set()
    for key, raw in rows:
        if PERSONAL_SEPARATOR in key and key != mine:
            continue  # another machine's global record
        raw = raw or {}
        landed = {int(i) for i in raw.get("landed", raw.get("inputs", []))}
        if landed & ids:
            found.add(GLOBAL_SCOPE if key == mine else str(key))
    return found
