"""The first request of a scope's run, built as the run builds it and measured, nothing sent or written.

The scope is prepared in a scratch copy of the memory repository by the run's own function
(``scope_run.prepare_workspace``: the inputs materialized, what a forget withdraws withdrawn, the
memories the person forgot held back, the workspace diff taken), the system and user prompts are
filled by the run's own ``agent.first_prompts`` (the topics published marked stale included), and
their size is measured: UTF-8 bytes and ``estimate_tokens`` (which errs
high). The scratch copy goes at once; where the repository does not exist yet, the run would be an
INIT, measured as such. The agent reads more through its memory tool as it works:
``pipeline.consolidate.dry.run_cap`` bounds what the whole run may spend.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.consolidate import workspace
from pipeline.consolidate.agent import first_prompts
from pipeline.consolidate.context import Phase2Context, new_run_id
from pipeline.consolidate.plan import ScopePlan
from pipeline.consolidate.scope_run import prepare_workspace
from pipeline.layout import estimate_tokens
from pipeline.memory import forget_records, tombstones


@dataclass(frozen=True)
class Measured:
    scope: str
    mode: str
    """INIT or INCREMENTAL, as the run would be."""
    prompt_bytes: int
    prompt_tokens: int


async def measure_first_request(ctx: Phase2Context, plan: ScopePlan) -> Measured:
    """The size of the first request ``plan``'s run would send (system and user prompts)."""
    repo = ctx.repo
    if not (repo.path / ".git").is_dir() or await repo.head() is None:
        # No repository yet: the run makes it, and the scope's first run is an INIT.
        first = workspace.Workspace(
            repo, plan.scope, repo.path, "INIT", "HEAD", [], {}, set(), workspace.INIT_DIFF
        )
        return await _measured(ctx, plan, first)
    owner = f"measure-{new_run_id(ctx.clock.now())}"
    paths = [plan.scope, tombstones.TOMBSTONE_DIR, forget_records.FORGOTTEN_DIR]
    async with repo.scratch(ctx.scratch_parent, owner=owner, paths=paths) as clone:
        ws = await prepare_workspace(ctx, plan, clone)
        return await _measured(ctx, plan, ws)


async def _measured(ctx: Phase2Context, plan: ScopePlan, ws: workspace.Workspace) -> Measured:
    system, user = await first_prompts(ctx, plan, ws)
    text = system + user
    return Measured(plan.scope, ws.mode, len(text.encode("utf-8")), estimate_tokens(text))
