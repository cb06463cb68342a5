"""`memd publish [--dry-run] [--json]`: publish memory where the agents read it now, or show what
would be written where.

Exit status: 0 when every target was published, unchanged or skipped with a reason; 1 when a
target failed or the state store cannot be opened; 2 for a bad config.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit

if TYPE_CHECKING:
    from pipeline.publish.run import PublishReport


@click.command("publish")
@click.option("--dry-run", is_flag=True, help="Write nothing: show what would be written where.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_ctx
def publish_command(ctx: CliContext, dry_run: bool, as_json: bool) -> None:
    """Publish every memory scope to the agents' memory files now."""
    settings = ctx.loaded().settings
    ctx.configure_logging()
    import asyncio

    from pipeline.clock import SystemClock
    from pipeline.errors import StoreError
    from pipeline.machine import machine_id
    from pipeline.publish.run import publish_all
    from pipeline.store import open_store

    async def go() -> PublishReport:
        store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
        try:
            if not dry_run:
                from pipeline.consolidate.rekey import rekey

                await rekey(store, settings, SystemClock())  # scopes under the keys publishing looks up
            return await publish_all(store, settings, SystemClock(), dry_run=dry_run)
        finally:
            await store.close()

    try:
        report = asyncio.run(go())
    except StoreError as exc:
        fail(str(exc), Exit.FAILED)
    if as_json:
        click.echo(json.dumps(_jsonable(report), indent=2))
    else:
        _print(report)
    sys.exit(Exit.FAILED if report.failed else Exit.OK)


def _jsonable(report: PublishReport) -> dict[str, object]:
    return {
        "dry_run": report.dry_run,
        "started_at": report.started_at.isoformat(),
        "finished_at": report.finished_at.isoformat(),
        "results": [asdict(r) for r in report.results],
    }


def _print(report: PublishReport) -> None:
    if not report.results:
        click.echo("nothing to publish: the memory repository has no scopes yet, or every target is off")
        return
    if all(r.target == "*" for r in report.results):  # the whole run, e.g. nothing consolidated yet
        for r in report.results:
            click.echo(f"{r.outcome}: {r.reason}")
        return
    for r in report.results:
        click.echo(f"{r.outcome:<16} {r.target:<18} {r.scope:<40} {r.path}")
        if r.reason:
            click.echo(f"{'':<17}{r.reason}")
        if report.dry_run:
            for path in r.written:
                click.echo(f"{'':<17}would write {path}")
            for path in r.removed:
                click.echo(f"{'':<17}would remove {path}")
    changed = len(report.changed)
    verb = "would change" if report.dry_run else "changed"
    click.echo(f"\n{len(report.results)} targets: {verb} {changed}, failed {len(report.failed)}")
