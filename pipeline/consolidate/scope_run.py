"""One scope's consolidation run, under its lease, in a scratch copy; the real repository changes
only at the very end (a fast-forward, or an ``inbox/<run>`` branch), or not at all.

Outcomes: ``committed`` / ``pending_review`` (inbox) / ``unchanged`` (nothing to commit) /
``cleared`` (every session of the scope forgotten: memd removed the folder, no model call) /
``committed`` with mode ``WITHDRAW`` (a forget no model could rebuild, none given or the model
failed: what the forgotten sessions taught withdrawn, a placeholder digest, the scope marked to be
rebuilt; what a failed agent wrote is dropped first) /
``skipped`` (another run holds the scope, or nothing to do any more) / ``failed`` (the reason is
recorded on the run and the scope waits before it is tried again) / ``crashed`` (an unexpected
error or a cancellation: recorded, then re-raised).

A process killed after its run landed (or parked on ``inbox/<run>``) but before the store recorded
it leaves the run marked running: the next run of the scope finds its commit by the ``Memd-Run``
trailer and records it as it ended, so it is neither paid for again nor called abandoned.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import structlog

from pipeline.consolidate import workspace
from pipeline.consolidate.agent import run_agent
from pipeline.consolidate.context import Phase2Context, RunResult, new_run_id
from pipeline.consolidate.lease import ScopeLease, acquire_scope, lease_name
from pipeline.consolidate.plan import ScopePlan, plan_scope
from pipeline.consolidate.request import commit_message
from pipeline.errors import ConsolidationFailed, LLMError, LLMUnavailable, MemdError
from pipeline.gitrepo.repository import INBOX_PREFIX, MemoryRepo
from pipeline.layout import GLOBAL_SCOPE, PLACEHOLDER_SUMMARY, ROLLOUT_DIR, SUMMARY
from pipeline.memory import forget_records, tombstones
from pipeline.memory.inputs import rests_on_tools
from pipeline.memory.likeness import ForgottenTopic
from pipeline.notes.remember import GLOBAL_HELD
from pipeline.store import consolidation as db
from pipeline.store import forgotten_topics, notes, syncstate
from pipeline.team.arrival import waiting_for
from pipeline.vocabulary import RunOutcome

log = structlog.get_logger(__name__)

FAILURE_RETRY_MAX = timedelta(hours=1)


async def consolidate_scope(
    ctx: Phase2Context,
    scope: str,
    *,
    force: bool = False,
    review: str | None = None,
    landed_only: bool = False,
    rebuild: bool = False,
    also_forget: frozenset[str] = frozenset(),
) -> RunResult:
    """Run one scope if it (still) needs it. ``review`` overrides ``[review] mode``; ``landed_only``
    rebuilds from the inputs on the branch only, and a scope with nothing to change is ``unchanged``
    (``memd forget``); ``rebuild`` runs even when this machine's inputs did not change (the scope on
    the branch must be rebuilt from every input it holds, this machine's and other machines');
    ``also_forget`` names sessions this store has no extract of whose inputs in the scope go too (a
    forget of another machine's session: they are tombstoned in the run's commit)."""
    now = ctx.clock.now()
    run_id = new_run_id(now)
    name = lease_name(scope)
    got = await acquire_scope(ctx, scope, run_id)
    if got is not None:
        reason = f"another run holds the scope ({got.host}, pid {got.pid}, since {got.acquired_at:%H:%M})"
        return RunResult(scope, RunOutcome.SKIPPED, reason=reason)
    lease = ScopeLease(ctx, name, run_id)
    lease.start()
    try:
        # Team mode: build on what another machine landed last (it comes by sync), never beside it.
        waits = await waiting_for(ctx.store, ctx.settings, ctx.repo, scope, now=now)
        if waits is not None:
            return RunResult(scope, RunOutcome.SKIPPED, reason=waits)
        await _recover_landed(ctx, scope)
        abandoned = await db.mark_abandoned(ctx.store, scope, now=now)
        if abandoned:
            log.warning("consolidation_runs_abandoned", scope=scope, runs=abandoned)
        plan = await plan_scope(
            ctx.store, ctx.settings, scope, now=now, force=force, landed_only=landed_only, rebuild=rebuild
        )
        if landed_only and plan.action == "none":
            state = plan.state
            if state is not None and plan.watermark_after != state.watermark:
                await db.save_watermark(ctx.store, scope, inputs=plan.watermark_after, now=now)
            return RunResult(
                scope,
                RunOutcome.UNCHANGED,
                reason="nothing of it was in the memory on the branch: no rewrite needed",
                inputs=len(plan.inputs),
            )
        if not plan.runnable:
            return RunResult(
                scope, RunOutcome.SKIPPED, reason=plan.skip_reason or "up to date", inputs=len(plan.inputs)
            )
        held = None if review else _held_for_review(ctx, plan)
        return await _run(
            ctx,
            plan,
            run_id,
            lease,
            review or ("inbox" if held else ctx.settings.review.mode),
            also_forget,
            held,
        )
    finally:
        await lease.stop()


def _held_for_review(ctx: Phase2Context, plan: ScopePlan) -> str | None:
    """Why the run waits in the inbox whatever ``[review] mode`` says: it brings a note to global
    (``pipeline.notes.remember``), or ``tool_evidence = "inbox"`` and a new input holds a memory
    resting on tool output only or is a note from an agent (None: it does not)."""
    if plan.notes and plan.scope == GLOBAL_SCOPE:
        return f"held for review: {len(plan.notes)} note(s) to global/ came through MCP ({GLOBAL_HELD})"
    if ctx.settings.review.tool_evidence != "inbox":
        return None
    sessions = sorted({r.session_id for r in plan.added if rests_on_tools(r)})
    if plan.notes and not sessions:
        return f"held for review: {len(plan.notes)} note(s) from an agent through MCP (tool evidence)"
    if not sessions:
        return None
    return f"held for review: {len(sessions)} new session(s) hold a memory resting on tool output only ({', '.join(sessions[:5])})"


async def _recover_landed(ctx: Phase2Context, scope: str) -> None:
    """Record the runs of ``scope`` a killed process left running whose commit landed or was parked."""
    for run in await db.running_runs(ctx.store, scope):
        now = ctx.clock.now()
        commit = await ctx.repo.commit_of_run(run.run_id)
        branch = f"{INBOX_PREFIX}{run.run_id}"
        reason = "recorded after a restart: the process that ran it stopped after its commit was made"
        if commit is not None:
            outcome = RunOutcome.CLEARED if run.mode == "clear" else RunOutcome.COMMITTED
            await db.finish_run(ctx.store, run.run_id, outcome=outcome, now=now, reason=reason, commit=commit)
            await db.save_success(
                ctx.store,
                scope,
                inputs=run.inputs.get("ids", []),
                consumed=run.inputs.get("consumed"),
                commit=commit,
                project=run.inputs.get("project"),
                now=now,
            )
        elif (parked := await ctx.repo.branch_head(branch)) is not None:
            outcome = RunOutcome.PENDING_REVIEW
            await db.finish_run(
                ctx.store, run.run_id, outcome=outcome, now=now, reason=reason, commit=parked, branch=branch
            )
        else:
            continue
        log.warning("consolidation_run_recovered", scope=scope, run_id=run.run_id, outcome=outcome)


async def _run(
    ctx: Phase2Context,
    plan: ScopePlan,
    run_id: str,
    lease: ScopeLease,
    review: str,
    also_forget: frozenset[str],
    held: str | None = None,
) -> RunResult:
    result = RunResult(
        plan.scope,
        RunOutcome.RUNNING,
        run_id,
        reason=held,
        inputs=len(plan.inputs),
        added=len(plan.added),
        removed=len(plan.removed),
    )
    inputs = {
        "ids": [r.id for r in plan.inputs],
        "added": sorted({r.session_id for r in plan.added}),
        "removed": sorted({r.session_id for r in plan.removed}),
        "project": plan.project,
    }
    if plan.consumed is not None:
        inputs["consumed"] = sorted(plan.consumed)
    await db.start_run(
        ctx.store, run_id=run_id, scope=plan.scope, mode=plan.action, now=ctx.clock.now(), inputs=inputs
    )
    log.info(
        "consolidation_started", scope=plan.scope, run_id=run_id, inputs=len(plan.inputs), action=plan.action
    )
    try:
        await _attempt(ctx, plan, result, lease, review, also_forget)
    except (MemdError, OSError) as exc:  # ConsolidationFailed, LLMError, LeaseLost, MemoryRepoError...
        result.outcome = RunOutcome.FAILED
        result.reason = getattr(exc, "reason", None) or str(exc)
        result.findings = list(getattr(exc, "findings", []) or result.findings)
        retry = _retry_at(ctx, exc)
        await db.save_retry_at(ctx.store, plan.scope, retry_at=retry, now=ctx.clock.now())
        log.warning("consolidation_failed", scope=plan.scope, run_id=run_id, reason=result.reason[:300])
    except BaseException as exc:
        result.outcome = RunOutcome.CRASHED
        result.reason = f"interrupted: {type(exc).__name__}"
        await _record(ctx, result, plan)
        raise
    await _record(ctx, result, plan)
    return result


def _retry_at(ctx: Phase2Context, exc: BaseException) -> datetime:
    now = ctx.clock.now()
    if isinstance(exc, LLMUnavailable) and exc.not_before is not None:
        return exc.not_before
    cooldown = timedelta(minutes=ctx.settings.schedule.consolidate_cooldown_minutes)
    return now + min(cooldown, FAILURE_RETRY_MAX)


async def _record(ctx: Phase2Context, result: RunResult, plan: ScopePlan) -> None:
    assert result.run_id is not None
    usage = {**result.usage.as_dict(), "turns": result.turns}
    if result.findings:
        usage["findings"] = len(result.findings)
    if result.duplicates_found:
        usage["duplicates_found"] = result.duplicates_found
        usage["duplicates_fixed"] = result.duplicates_fixed
    reason = result.reason
    if result.findings:
        reason = (reason or "") + "\n" + "\n".join(f"- {f}" for f in result.findings)
    try:
        await asyncio.shield(
            db.finish_run(
                ctx.store,
                result.run_id,
                outcome=result.outcome,
                now=ctx.clock.now(),
                reason=reason,
                commit=result.commit,
                branch=result.branch,
                usage=usage,
                mode=result.mode,
            )
        )
    except MemdError as exc:
        log.warning("consolidation_record_failed", run_id=result.run_id, error=str(exc)[:200])
    log.info(
        "consolidation_finished",
        scope=plan.scope,
        run_id=result.run_id,
        outcome=result.outcome,
        commit=result.commit,
        turns=result.turns,
        tokens=result.usage.total_tokens,
    )


async def _attempt(
    ctx: Phase2Context,
    plan: ScopePlan,
    result: RunResult,
    lease: ScopeLease,
    review: str,
    also_forget: frozenset[str] = frozenset(),
) -> None:
    repo = ctx.repo
    await repo.ensure()
    dirty = await repo.dirty_paths(plan.scope)
    if dirty:
        raise ConsolidationFailed(
            f"{plan.scope} has uncommitted changes in {repo.path} ({len(dirty)} path(s), e.g. {dirty[0]}): "
            "commit or discard them, then memd consolidates again"
        )
    base = await repo.head()
    assert base is not None
    paths = [plan.scope, tombstones.TOMBSTONE_DIR, forget_records.FORGOTTEN_DIR]
    async with repo.scratch(ctx.scratch_parent, owner=f"run-{result.run_id}", paths=paths) as clone:
        rebuild_only = plan.rebuild and plan.action == "consolidate" and not plan.inputs
        if rebuild_only and not await asyncio.to_thread(_has_inputs, clone.path / plan.scope):
            result.outcome = RunOutcome.UNCHANGED  # a rebuild of a scope that holds no input
            result.reason = "no input to rebuild it from, here or in the memory repository"
            await db.save_success(
                ctx.store, plan.scope, inputs=[], commit=None, project=plan.project, now=ctx.clock.now()
            )
            return
        ws = await prepare_workspace(ctx, plan, clone, also_forget=also_forget)
        await _bury(clone, ws.forgotten)
        result.withdrawn = list(ws.withdrawn)
        result.pinned_withdrawn = list(ws.pinned_withdrawn)
        left = await asyncio.to_thread(_has_inputs, ws.scope_dir)
        forgetting = plan.action == "clear" or bool(also_forget) or bool(ws.withdrawing)
        emptied = not plan.inputs and not left and (plan.action == "clear" or bool(also_forget))
        placeholder = forgetting and not emptied and ctx.llm is None
        failure: MemdError | None = None
        if emptied or placeholder:
            result.mode = "CLEAR" if plan.action == "clear" or emptied else "WITHDRAW"
        else:
            result.mode = ws.mode
        if emptied:
            await asyncio.to_thread(_rmtree, ws.scope_dir)
            await clone.stage(plan.scope)
        elif placeholder:
            # Inputs are left (this machine's or another's) but no model can rebuild from them now:
            # the forget is applied all the same (the forgotten inputs went, what they taught was
            # withdrawn above, the tombstones are in this commit, so it travels) under the
            # placeholder digest; the scope is marked to be rebuilt by the next run with a model
            # here, or by the next machine that merges it.
            await _withdraw_only(clone, ws)
        elif forgetting:
            # The agent rebuilds what the forgotten sessions taught from what remains; when it
            # cannot (the model fails, or its result is refused), the forget lands all the same,
            # as without a model: the scope as memd prepared it, under the placeholder digest.
            prepared = await clone.snapshot_scope(plan.scope)
            try:
                await run_agent(ctx, plan, ws, result, lease)
            except (LLMError, ConsolidationFailed) as exc:
                await clone.restore_scope(plan.scope, prepared)
                await _withdraw_only(clone, ws)
                placeholder, failure, result.mode = True, exc, "WITHDRAW"
                result.removed_topics, result.rebuilt = {}, []
                result.reason = _not_rebuilt(exc)
                result.findings = list(getattr(exc, "findings", []) or result.findings)
        else:
            # This machine's inputs, and those other machines left in the scope (``[sync]``).
            await run_agent(ctx, plan, ws, result, lease)
        result.changes = await workspace.staged_changes(ws)
        if not result.changes:
            result.outcome = RunOutcome.UNCHANGED
            await _took(ctx, plan, result)
            await db.save_success(
                ctx.store,
                plan.scope,
                inputs=[r.id for r in plan.inputs],
                consumed=plan.consumed,
                commit=None,
                project=plan.project,
                now=ctx.clock.now(),
                rebuild=placeholder,
            )
            return
        message = commit_message(
            plan, result, model=ctx.settings.llm.consolidation_model, sanitized=ws.sanitized
        )
        await workspace.commit(ws, message)
        await lease.renew()  # fence: a run that lost its lease writes nothing
        if review == "inbox":
            result.branch = f"{INBOX_PREFIX}{result.run_id}"
            result.commit = await repo.park(clone, result.branch)
            result.outcome = RunOutcome.PENDING_REVIEW
            await _took(ctx, plan, result)
            return
        result.commit = await repo.land(clone, base=base)
    result.outcome = RunOutcome.CLEARED if result.mode == "CLEAR" else RunOutcome.COMMITTED
    await _took(ctx, plan, result)
    await db.save_success(
        ctx.store,
        plan.scope,
        inputs=[r.id for r in plan.inputs],
        consumed=plan.consumed,
        commit=result.commit,
        project=plan.project,
        now=ctx.clock.now(),
        rebuild=placeholder,
    )
    if failure is not None:  # the rebuild waits as a failed run's retry would
        await db.save_retry_at(ctx.store, plan.scope, retry_at=_retry_at(ctx, failure), now=ctx.clock.now())


async def _took(ctx: Phase2Context, plan: ScopePlan, result: RunResult) -> None:
    """The run's notes and flags are taken: its outcome is theirs (``pipeline.store.notes``)."""
    if (plan.notes or plan.flags) and result.run_id is not None:
        await notes.take(
            ctx.store,
            run_id=result.run_id,
            notes=[n.id for n in plan.notes],
            flags=[f.id for f in plan.flags],
            now=ctx.clock.now(),
        )


def _rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


async def prepare_workspace(
    ctx: Phase2Context, plan: ScopePlan, clone: MemoryRepo, *, also_forget: frozenset[str] = frozenset()
) -> workspace.Workspace:
    """The scope prepared in ``clone`` for its run: the inputs materialized, what a forget withdraws
    withdrawn, the memories the person forgot held back, the diff taken. The run and
    ``pipeline.consolidate.measure`` both prepare it here, so what is measured is what is sent."""
    kept_out = await forgotten_memories(ctx, plan.scope, clone)
    return await workspace.prepare(
        clone,
        plan,
        clean=without_forgotten(ctx.clean(), kept_out),
        forgotten=await db.forgotten_sessions(ctx.store, plan.scope) | also_forget,
        foreign=await foreign_sessions(ctx, plan.scope, clone, also_forget),
        dropped=also_forget,
        forgotten_topics=kept_out,
    )


async def forgotten_memories(ctx: Phase2Context, scope: str, clone: MemoryRepo) -> list[ForgottenTopic]:
    """The memories of ``scope`` a person forgot: this store's records (with their names) and the
    memory repository's (``forgotten/``: forgets made on any machine, before or after this one
    paired)."""
    records = await asyncio.to_thread(forget_records.read, clone.path)
    held = await forgotten_topics.of_scope(ctx.store, scope, ForgottenTopic.from_json)
    return forget_records.with_records(held, forget_records.of_scope(records, scope))


def without_forgotten(clean: Callable[[str], str], kept_out: list[ForgottenTopic]) -> Callable[[str], str]:
    """``clean``, then the lines holding a forgotten text taken out: every input phase 2 reads is
    written through it."""
    if not kept_out:
        return clean
    return lambda text: forget_records.scrub_text(clean(text), kept_out)


async def foreign_sessions(
    ctx: Phase2Context, scope: str, clone: MemoryRepo, also_forget: frozenset[str] = frozenset()
) -> Callable[[str], bool]:
    """Whether a session's input in the scope is another machine's (``[sync]``): one this store never
    had an extract of, not tombstoned (a forget, here or there) and not being forgotten now."""
    mine = await syncstate.known_sessions(ctx.store, None if scope == GLOBAL_SCOPE else scope)
    graves = await asyncio.to_thread(tombstones.read, clone.path)
    return lambda session: (
        session not in mine and session not in also_forget and not tombstones.is_tombstoned(session, graves)
    )


async def _bury(clone: MemoryRepo, forgotten: set[str]) -> None:
    """Tombstones for the scope's forgotten sessions, in the run's commit: the forget travels."""
    if forgotten:
        await asyncio.to_thread(tombstones.write, clone.path, forgotten)
        await clone.stage_paths(tombstones.TOMBSTONE_DIR)


def _has_inputs(scope_dir: Path) -> bool:
    folder = scope_dir / ROLLOUT_DIR
    return folder.is_dir() and any(p.is_file() for p in folder.iterdir())


async def _withdraw_only(clone: MemoryRepo, ws: workspace.Workspace) -> None:
    """The forget without a model: the scope as memd prepared it (the forgotten inputs gone, every
    topic citing them and their index lines withdrawn, the digest removed), the placeholder digest."""
    await asyncio.to_thread(_placeholder_summary, ws.scope_dir)
    await clone.stage(ws.scope)


def _not_rebuilt(exc: MemdError) -> str:
    why = getattr(exc, "reason", None) or str(exc)
    return f"withdrawn without the model, which failed ({why.splitlines()[0]}); the rest waits to be rebuilt"


def _placeholder_summary(scope_dir: Path) -> None:
    summary = scope_dir / SUMMARY
    if not summary.is_file():
        summary.write_bytes(PLACEHOLDER_SUMMARY)
