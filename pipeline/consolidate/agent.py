"""The agent half of a run: the consolidation model with the confined memory tool, one repair turn."""

from __future__ import annotations

import structlog

from pipeline.consolidate import workspace
from pipeline.consolidate.context import Phase2Context, RunResult
from pipeline.consolidate.lease import ScopeLease
from pipeline.consolidate.plan import ScopePlan
from pipeline.consolidate.request import Prompts
from pipeline.errors import ConsolidationFailed
from pipeline.layout import is_input_path
from pipeline.store.cites import stale_in_scope

log = structlog.get_logger(__name__)

REPAIR_TURNS = 12
PHASE = "phase2"
"""Phase 2's name in the ``llm_calls`` ledger."""


async def run_agent(
    ctx: Phase2Context, plan: ScopePlan, ws: workspace.Workspace, result: RunResult, lease: ScopeLease
) -> None:
    if ctx.llm is None:
        raise ConsolidationFailed("no model client: set the API key to consolidate")
    settings = ctx.settings
    prompts = Prompts.load()
    caps = ctx.caps
    system, user = await first_prompts(ctx, plan, ws, prompts)
    agent = ctx.llm.memory_agent(
        ws.scope_dir,
        model=settings.llm.consolidation_model,
        system=system,
        max_bytes_for=caps.max_bytes_for,
        read_only=is_input_path,
        max_turns=settings.memories.consolidation_max_turns,
        token_budget=settings.memories.consolidation_token_budget,
        phase=PHASE,
        job_key=plan.scope,
        prompt_hash=prompts.hash,
        on_turn=lease.check,
    )
    forgotten = ws.forgotten
    today = ctx.clock.now().date()
    try:
        repair_turns = max(1, min(REPAIR_TURNS, agent.max_turns // 4))
        outcome = await agent.run(user, turns=max(1, agent.max_turns - repair_turns))
        _check_outcome(outcome.stopped, "its work", outcome.final_text)
        checked = await workspace.check(
            ws, plan, caps=caps, finder=ctx.finder, today=today, forgotten=forgotten
        )
        result.duplicates_found = checked.duplicates
        if checked.findings or checked.guarded:
            result.findings = checked.findings + checked.guarded
            log.info("consolidation_repair_turn", scope=plan.scope, findings=len(result.findings))
            outcome = await agent.run(prompts.repair_text(result.findings), turns=repair_turns)
            _check_outcome(outcome.stopped, "the repair turn", outcome.final_text)
            checked = await workspace.check(
                ws, plan, caps=caps, finder=ctx.finder, today=today, forgotten=forgotten
            )
            result.duplicates_fixed = max(0, result.duplicates_found - checked.duplicates)
            if checked.findings:
                raise ConsolidationFailed(
                    "the result still failed validation after the repair turn", findings=checked.findings
                )
            result.findings = []
            result.guarded = checked.guarded  # enforced again: it does not land, the rest does
        gone = {rel: "forgotten" for rel in ws.withdrawn if not (ws.scope_dir / rel).is_file()}
        result.removed_topics = {**gone, **checked.provenance.removed}
        result.rebuilt = [rel for rel in ws.withdrawn if rel not in gone]
    finally:
        result.usage = agent.usage
        result.turns = agent.turns


async def first_prompts(
    ctx: Phase2Context, plan: ScopePlan, ws: workspace.Workspace, prompts: Prompts | None = None
) -> tuple[str, str]:
    """The system and user prompts of a run's first request: what ``run_agent`` sends and
    ``pipeline.consolidate.measure`` measures (the topics published marked stale included)."""
    prompts = prompts or Prompts.load()
    stale = await stale_in_scope(ctx.store, plan.scope)
    today = ctx.clock.now().date()
    return prompts.system_text(ctx.caps), prompts.user_text(plan, ws, today=today, stale=stale)


def _check_outcome(stopped: str, what: str, said: str = "") -> None:
    if stopped == "turn_limit":
        raise ConsolidationFailed(f"the agent hit the turn limit before finishing {what}")
    if stopped == "token_budget":
        raise ConsolidationFailed(f"the agent spent the run's token budget before finishing {what}")
    if stopped in ("malformed", "loop"):
        raise ConsolidationFailed(f"the agent was stopped during {what}: {said}")
