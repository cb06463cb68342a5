"""``memd consolidate [SCOPE]``: consolidate now what waits for a scope (or for every scope), after
saying what each run will send and the most it may spend.

``plan_now`` plans the scope (or every scope with waiting inputs) without the schedule's waits (the
cooldown after a run, the retry after a failed one); only extracts already made count, so the idle
gate for sessions still applies. For each scope it measures the first request as the run builds it
(``pipeline.consolidate.measure``) beside the most a run may spend (``dry.run_cap``). ``run_now``
then runs them one after another, each under its lease, the rate-limit gate asked before each run
that calls the model. A dry run stops after ``plan_now``: no model call, nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.consolidate.context import Phase2Context, RunResult
from pipeline.consolidate.dry import RunCap, first_request_usd, run_cap
from pipeline.consolidate.measure import Measured, measure_first_request
from pipeline.consolidate.plan import ScopePlan, plan_scope
from pipeline.consolidate.scope_run import consolidate_scope
from pipeline.errors import SUBSCRIPTION_NOTE
from pipeline.layout import GLOBAL_SCOPE
from pipeline.llm.agent import MAX_OUTPUT_TOKENS
from pipeline.llm.pricing import cost_usd
from pipeline.store import consolidation as db
from pipeline.vocabulary import RUN_FAILED, RunOutcome


@dataclass(frozen=True)
class Waiting:
    plan: ScopePlan
    measured: Measured | None
    """The first request, measured (None for a run that calls no model: a scope emptied by a forget)."""
    usd: float = 0.0
    """What the first request costs, its input tokens priced on the consolidation model."""


@dataclass
class NowReport:
    scope: str | None
    """The scope asked for (None: every scope)."""
    cap: RunCap
    dry_run: bool
    waiting: list[Waiting] = field(default_factory=list)
    held: list[tuple[str, str]] = field(default_factory=list)
    """Scopes with work that may not run now, each with why (waiting for review, an invalid name)."""
    refused: str | None = None
    """Why no run was started (no API key)."""
    runs: list[RunResult] = field(default_factory=list)
    typical_usd: float | None = None
    """The median cost of the last runs that called the model here (``TYPICAL_OF`` at most), priced
    on today's consolidation model; None before the first."""
    typical_of: int = 0
    """How many runs ``typical_usd`` is the median of."""

    @property
    def ok(self) -> bool:
        """Nothing failed or was kept from running (a scope with nothing waiting is fine)."""
        not_run = self.refused is not None or bool(self.held and self.scope is not None)
        return not not_run and not any(r.outcome in (*RUN_FAILED, RunOutcome.SKIPPED) for r in self.runs)

    def plan_lines(self) -> list[str]:
        """What will be sent, scope by scope, and the most each run may spend."""
        if not self.waiting and not self.held:
            return [
                f"nothing waits to be consolidated{f' in {self.scope}' if self.scope else ''}: up to date"
            ]
        lines = []
        for w in self.waiting:
            p = w.plan
            what = f"{len(p.inputs)} input(s), {len(p.added)} new, {len(p.removed)} removed"
            if w.measured is None:
                lines.append(f"{p.scope}: {what}; memd empties it itself, no model call")
                continue
            m = w.measured
            lines.append(
                f"{p.scope}: {what}; {m.mode}: the first request is {m.prompt_bytes:,} bytes, about "
                f"{m.prompt_tokens:,} tokens (est. ${w.usd:.4f})"
            )
        lines += [f"{scope}: not now ({why})" for scope, why in self.held]
        calls = sum(1 for w in self.waiting if w.measured is not None)
        if calls:
            c = self.cap
            lines.append(
                f"each run may spend at most {c.tokens:,} tokens over {c.turns} turns on {c.model} "
                f"(consolidation_token_budget, checked after each turn; consolidation_max_turns): at most "
                f"${c.usd:.2f} per run, ${c.usd * calls:.2f} for {calls} run(s)"
            )
            lines.append(self.typical_line(calls))
        if self.refused is not None:
            lines.append(f"not run: {self.refused}")
        elif self.dry_run:
            lines.append("dry run: nothing sent, nothing written")
        return lines

    def typical_line(self, calls: int) -> str:
        """What a run usually costs: measured here, else the figures docs/costs.md gives."""
        if self.typical_usd is None:
            return (
                "a typical run: no run measured here yet; docs/costs.md gives measured figures "
                "(a run usually spends a small part of its ceiling)"
            )
        return (
            f"a typical run here costs about ${self.typical_usd:.2f} (median of the last {self.typical_of} "
            f"run(s)): about ${self.typical_usd * calls:.2f} for {calls} run(s)"
        )

    def run_lines(self) -> list[str]:
        """What each run did, as it was."""
        lines = []
        for r in self.runs:
            line = f"{r.scope}: {r.outcome}"
            if r.commit:
                line += f" {r.commit[:12]}"
            if r.branch:
                line += f" (memd inbox show {r.run_id})"
            if r.reason:
                line += f" ({r.reason.splitlines()[0]})"
            lines.append(line)
            lines += [f"  {change}" for change in r.changes]
            lines += [f"  - {finding}" for finding in r.findings]
            if r.turns:
                u = r.usage
                lines.append(
                    f"  spent {u.total_tokens:,} tokens in {r.turns} turn(s), est. "
                    f"${cost_usd(self.cap.model, u, price=self.cap.price):.4f}"
                )
        return lines


TYPICAL_OF = 20
"""How many of the last runs that called the model the typical cost is the median of."""


async def typical_run_usd(ctx: Phase2Context) -> tuple[float | None, int]:
    """The median cost of the last runs (of any scope) that called the model, priced on the
    consolidation model from the usage each recorded, and how many runs that is."""
    from statistics import median

    from pipeline.llm.pricing import Usage

    fields = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    costs = []
    for run in await db.list_runs(ctx.store, limit=TYPICAL_OF * 5):
        usage = run.usage
        if not usage.get("turns") or run.finished_at is None:
            continue
        counts = {name: int(usage.get(name) or 0) for name in fields}
        costs.append(cost_usd(ctx.settings.llm.consolidation_model, Usage(**counts)))
        if len(costs) == TYPICAL_OF:
            break
    return (round(median(costs), 4), len(costs)) if costs else (None, 0)


async def plan_now(ctx: Phase2Context, scope: str | None, *, dry_run: bool) -> NowReport:
    """The runs ``memd consolidate`` would start now, measured (nothing is written)."""
    report = NowReport(scope, run_cap(ctx.settings, MAX_OUTPUT_TOKENS), dry_run)
    if scope is None:
        scopes = sorted(await db.candidate_scopes(ctx.store), key=lambda s: (s != GLOBAL_SCOPE, s))
    else:
        scopes = [scope]
    report.typical_usd, report.typical_of = await typical_run_usd(ctx)
    now = ctx.clock.now()
    for name in scopes:
        plan = await plan_scope(ctx.store, ctx.settings, name, now=now, force=True)
        if plan.action == "none":
            if plan.skip_reason:
                report.held.append((name, plan.skip_reason))
            continue
        if plan.skip_reason is not None:
            report.held.append((name, plan.skip_reason))
            continue
        if plan.action == "clear":
            report.waiting.append(Waiting(plan, None))
            continue
        measured = await measure_first_request(ctx, plan)
        report.waiting.append(
            Waiting(plan, measured, first_request_usd(ctx.settings, measured.prompt_tokens))
        )
    if not dry_run and ctx.llm is None and any(w.measured is not None for w in report.waiting):
        report.refused = (
            f"no API key ({ctx.settings.llm.api_key_env} is not set): nothing was sent; {SUBSCRIPTION_NOTE}"
        )
    return report


async def run_now(ctx: Phase2Context, report: NowReport) -> NowReport:
    """Run what ``plan_now`` found, one scope after another; the outcomes are in ``report.runs``."""
    from pipeline.llm.ratelimit import gate_state

    if report.dry_run or report.refused is not None:
        return report
    for w in report.waiting:
        if w.measured is not None:
            gate = await gate_state(ctx.store, ctx.settings, ctx.clock.now())
            if gate.gated:
                report.runs.append(RunResult(w.plan.scope, RunOutcome.SKIPPED, reason=gate.reason))
                continue
        report.runs.append(await consolidate_scope(ctx, w.plan.scope, force=True))
    return report
