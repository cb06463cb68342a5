"""`memd consolidate [SCOPE|PATH] [--dry-run]`: consolidate now what waits for a scope, after saying
what each run will send and the most it may spend.

Without SCOPE, every scope with waiting inputs. The schedule's waits (the cooldown after a run, the
retry after a failed one) do not hold it; only extracts already made count (a session still in its
idle time is not extracted by this command). It prints, per scope, the first request it measured
(the prompts as the run builds them: bytes and estimated tokens) and the most a run may spend under
``[memories] consolidation_token_budget`` and ``consolidation_max_turns``, then runs, pushes
(``[sync]``) and publishes what landed. ``--dry-run`` prints the same and sends and writes nothing.

Exit status: 0 when every run landed, waits in the inbox, or there was nothing to do; 1 when a run
failed or was skipped (the reason is printed), the scope asked for waits for review, there is no
API key, or a publish failed; 2 for a bad config; 64 for bad arguments (see `daemon.exits`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.cli.output import verbose_option
from daemon.exits import Exit


@click.command("consolidate")
@click.argument("scope", required=False, metavar="[SCOPE|PATH]")
@click.option("--dry-run", is_flag=True, help="Say what it would send and spend; send and write nothing.")
@verbose_option
@pass_ctx
def consolidate_command(ctx: CliContext, scope: str | None, dry_run: bool, verbose: bool) -> None:
    """Consolidate now what waits for a scope (every scope without one), saying first what it costs."""
    settings = ctx.loaded().settings
    ctx.configure_logging()
    from daemon.runtime import Runtime
    from daemon.usecases.changes import ConsolidatedNow, consolidate_planned, plan_consolidation
    from daemon.words import consolidated_lines
    from pipeline.consolidate.now import NowReport
    from pipeline.errors import MemdError
    from pipeline.projects.scopes import ScopeNotFound, scope_argument
    from pipeline.store.consolidation import candidate_scopes

    async def go() -> tuple[NowReport, ConsolidatedNow | None]:
        async with Runtime.open(settings, env=os.environ, dry_run=dry_run) as rt:
            wanted = None
            if scope is not None:
                try:
                    wanted = scope_argument(scope, known=await candidate_scopes(rt.store), cwd=Path.cwd())
                except ScopeNotFound as exc:
                    fail(str(exc), Exit.USAGE)
            planned = await plan_consolidation(rt, wanted, dry_run=dry_run)
            for line in planned.plan_lines():
                click.echo(line)
            if dry_run or not planned.waiting or planned.refused is not None:
                return planned, None
            return planned, await consolidate_planned(rt, planned)

    try:
        planned, done = asyncio.run(go())
    except MemdError as exc:
        fail(str(exc), Exit.FAILED)
    if done is not None:
        for line in consolidated_lines(done, verbose=verbose):
            click.echo(line)
    if not (done.ok if done is not None else planned.ok):
        raise SystemExit(Exit.FAILED)
