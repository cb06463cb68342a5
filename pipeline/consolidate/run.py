"""Phase 2's entry point: consolidate every scope that has new or removed inputs.

``run_phase2(store, settings, repo, clock, llm, redactor)`` plans every scope, then runs the runnable
ones one after another (each a long conversation; one at a time keeps spend predictable), each
under its own lease. The rate-limit gate is asked before each run. With ``dry_run`` nothing is
called or written: the report lists the scopes a run would consolidate, their inputs and an
estimate of the first request's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import structlog

from pipeline.clock import Clock
from pipeline.consolidate.context import Phase2Context, RunResult
from pipeline.consolidate.plan import ScopePlan, plan_all
from pipeline.consolidate.scope_run import consolidate_scope
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.gitrepo.repository import MemoryRepo, scratch_parent, sweep_scratch
from pipeline.layout import estimate_tokens
from pipeline.llm.pricing import Usage, cost_usd
from pipeline.llm.protocol import ModelClient
from pipeline.memory.inputs import render_raw_memories, render_summary
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store.read.rows import on_store
from pipeline.store.read.runs import pending_review
from pipeline.vocabulary import RUN_FAILED, RunOutcome

log = structlog.get_logger(__name__)

SCRATCH_USER = "phase2"
"""Phase 2's scratch copies (runs, accepts) are under ``scratch_parent(state_dir, "phase2")``."""
PROMPT_OVERHEAD_TOKENS = 3_000


@dataclass
class ScopeReport:
    scope: str
    outcome: RunOutcome
    """committed, pending_review, unchanged, cleared, failed, skipped, or ``would_run`` in a dry run."""
    inputs: int = 0
    added: int = 0
    removed: int = 0
    reason: str | None = None
    run_id: str | None = None
    commit: str | None = None
    branch: str | None = None
    estimated_tokens: int | None = None
    usage: Usage = field(default_factory=Usage)
    changes: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


@dataclass
class Phase2Report:
    dry_run: bool = False
    scopes: list[ScopeReport] = field(default_factory=list)
    gated: str | None = None
    waiting_review: int = 0
    """The runs (of this step and earlier ones) waiting in the inbox for review once the step ended."""
    tokens: int = 0
    """Every token this step's runs were billed for (``Usage.total_tokens``), for the run's summary."""
    cost_usd: float = 0.0
    """What those tokens cost on the consolidation model (estimated, list prices)."""

    def count(self, outcome: RunOutcome) -> int:
        return sum(1 for s in self.scopes if s.outcome == outcome)

    @property
    def failure(self) -> str | None:
        """Each scope whose run failed, with its reason (the cycle marks the step ``failed``), or None."""
        failed = [s for s in self.scopes if s.outcome in RUN_FAILED]
        if not failed:
            return None
        return "; ".join(f"{s.scope}: {s.reason or s.outcome}" for s in failed)

    @property
    def spend(self) -> tuple[int, float] | None:
        """The model tokens and dollars this step spent, for its log line."""
        return (self.tokens, self.cost_usd)

    def summary(self) -> dict[str, Any]:
        """As the step's outcome is recorded (``daemon.service.cycle.StepReport``): its fields."""
        return dict(vars(self))

    @property
    def usage(self) -> Usage:
        total = Usage()
        for s in self.scopes:
            total = total + s.usage
        return total


def context(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    llm: ModelClient | None,
    redactor: SecretFinder | None,
) -> Phase2Context:
    return Phase2Context(
        store=store,
        settings=settings,
        clock=clock,
        llm=llm,
        finder=redactor,
        repo=repo,
        scratch_parent=scratch_parent(settings.paths.state_dir, SCRATCH_USER),
    )


def estimate_first_request(plan: ScopePlan) -> int:
    """Tokens of the first request, roughly: the prompts and every input as materialized (INIT reads all)."""
    text = render_raw_memories(plan.inputs) + "".join(render_summary(r) for r in plan.inputs)
    return PROMPT_OVERHEAD_TOKENS + estimate_tokens(text)


def from_result(result: RunResult) -> ScopeReport:
    return ScopeReport(
        scope=result.scope,
        outcome=result.outcome,
        inputs=result.inputs,
        added=result.added,
        removed=result.removed,
        reason=result.reason,
        run_id=result.run_id,
        commit=result.commit,
        branch=result.branch,
        usage=result.usage,
        changes=result.changes,
        findings=result.findings,
    )


async def run_phase2(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    llm: ModelClient | None,
    redactor: SecretFinder | None,
    *,
    dry_run: bool = False,
) -> Phase2Report:
    report = Phase2Report(dry_run=dry_run)
    plans = await plan_all(store, settings, now=clock.now())
    ctx = context(store, settings, repo, clock, llm, redactor)
    if not dry_run:
        await _sweep(ctx)
    for plan in plans:
        if plan.action == "none":
            continue
        base = ScopeReport(
            plan.scope, RunOutcome.SKIPPED, len(plan.inputs), len(plan.added), len(plan.removed)
        )
        if not plan.runnable:
            base.reason = plan.skip_reason
            report.scopes.append(base)
            continue
        if dry_run:
            base.outcome = RunOutcome.WOULD_RUN
            base.estimated_tokens = 0 if plan.action == "clear" else estimate_first_request(plan)
            report.scopes.append(base)
            continue
        if plan.action != "clear":
            gate = await _gate(store, settings, clock)
            if gate is not None:
                report.gated = gate
                base.reason = gate
                report.scopes.append(base)
                continue
        report.scopes.append(from_result(await consolidate_scope(ctx, plan.scope)))
    report.waiting_review = await on_store(store, pending_review)
    report.tokens = report.usage.total_tokens
    report.cost_usd = cost_usd(settings.llm.consolidation_model, report.usage)
    log.info(
        "phase2_done",
        dry_run=dry_run,
        committed=report.count(RunOutcome.COMMITTED),
        inbox=report.count(RunOutcome.PENDING_REVIEW),
        failed=report.count(RunOutcome.FAILED),
        skipped=report.count(RunOutcome.SKIPPED),
    )
    return report


async def _sweep(ctx: Phase2Context) -> None:
    """Remove scratch copies left by killed runs (their lease is gone); a live run's copy stays."""
    import asyncio

    from pipeline.store import leases

    live = {f"run-{h.owner}" for h in await leases.holders(ctx.store)}
    removed = await asyncio.to_thread(
        sweep_scratch, ctx.scratch_parent, keep=lambda owner: owner in live or owner == "accept"
    )
    if removed:
        log.info("phase2_scratch_swept", removed=len(removed))


async def _gate(store: Store, settings: Settings, clock: Clock) -> str | None:
    from pipeline.llm.ratelimit import gate_state

    state = await gate_state(store, settings, clock.now())
    return state.reason if state.gated else None
