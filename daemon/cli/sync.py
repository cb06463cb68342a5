"""`memd sync [--json]`: sync the memory repository with its git remote (``[sync] remote``) now.

It fetches, checks what comes in, merges it, consolidates again the scopes both machines changed
(with an API key; else the daemon does it at its next consolidation), pushes, and publishes when the
merge changed the memory. Exit status: 0 when synced; 1 when the sync stopped (a rewritten remote,
a refused commit) or failed (unreachable), with the reason; 2 for a bad config or no remote.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.cli.output import verbose_option
from daemon.exits import Exit

if TYPE_CHECKING:
    from pipeline.publish.run import PublishReport
    from pipeline.sync.run import SyncReport


@click.command("sync")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@verbose_option
@pass_ctx
def sync_command(ctx: CliContext, as_json: bool, verbose: bool) -> None:
    """Fetch, merge and push the memory repository with its [sync] remote now."""
    settings = ctx.loaded().settings
    if not settings.sync.enabled:
        fail("no [sync] remote is configured: set [sync] remote (a path, ssh or https git URL)", Exit.CONFIG)
    ctx.configure_logging()
    import asyncio

    from daemon.actions import publish_lines
    from daemon.cycle import jsonable
    from daemon.runtime import Runtime
    from pipeline.errors import StoreError
    from pipeline.sync.now import sync_memory

    async def go() -> tuple[SyncReport, PublishReport | None]:
        async with Runtime.open(settings) as rt:
            report = await sync_memory(
                rt.store, settings, rt.memory_repo(), rt.clock, rt.redactor(), model=rt.llm_or_none
            )
            published = None
            if report.changed:
                from pipeline.publish.run import publish_all

                published = await publish_all(rt.store, settings, rt.clock)
            return report, published

    try:
        report, published = asyncio.run(go())
    except StoreError as exc:
        fail(str(exc), Exit.FAILED)
    if as_json:
        out = {"sync": jsonable(report), "published": jsonable(published) if published else None}
        click.echo(json.dumps(out, indent=2))
    else:
        for line in report.lines():
            click.echo(line)
        if published is not None:
            for line in publish_lines(published, verbose=verbose):
                click.echo(line)
    sys.exit(Exit.FAILED if report.failure else Exit.OK)
