"""`memd publish [--dry-run] [--json] [-v]`: publish memory where the agents read it now, or show what
would be written where.

Prints what changed, failed (or was refused) and would change, then one line of counts; ``-v``
lists every target and scope.

Exit status: 0 when every target was published, unchanged or skipped with a reason; 1 when a
target failed or was refused, or the state store cannot be opened; 2 for a bad config.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.cli.output import verbose_option
from daemon.exits import Exit
from pipeline.vocabulary import PUBLISH_FAILED, PublishOutcome

if TYPE_CHECKING:
    from pipeline.publish.run import PublishReport, TargetResult

WOULD_CHANGE = frozenset(
    {PublishOutcome.WOULD_PUBLISH, PublishOutcome.WOULD_REPUBLISH, PublishOutcome.WOULD_WITHDRAW}
)


@click.command("publish")
@click.option("--dry-run", is_flag=True, help="Write nothing: show what would be written where.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@verbose_option
@pass_ctx
def publish_command(ctx: CliContext, dry_run: bool, as_json: bool, verbose: bool) -> None:
    """Publish every memory scope to the agents' memory files now."""
    settings = ctx.loaded().settings
    ctx.configure_logging()
    import asyncio

    from daemon.runtime import Runtime
    from daemon.usecases.publish import publish_now
    from pipeline.errors import StoreError

    async def go() -> PublishReport:
        async with Runtime.open(settings, dry_run=dry_run) as rt:
            return await publish_now(rt, dry_run=dry_run)

    try:
        report = asyncio.run(go())
    except StoreError as exc:
        fail(str(exc), Exit.FAILED)
    if as_json:
        click.echo(json.dumps(_jsonable(report), indent=2))
    else:
        _print(report, verbose)
    sys.exit(Exit.FAILED if report.failed else Exit.OK)


def _jsonable(report: PublishReport) -> dict[str, object]:
    return {
        "dry_run": report.dry_run,
        "started_at": report.started_at.isoformat(),
        "finished_at": report.finished_at.isoformat(),
        "results": [asdict(r) for r in report.results],
    }


def _print(report: PublishReport, verbose: bool) -> None:
    if not report.results:
        click.echo("nothing to publish: the memory repository has no scopes yet, or every target is off")
        return
    from pipeline.publish.run import WHOLE_RUN

    if all(r.target == WHOLE_RUN for r in report.results):  # the whole run, e.g. nothing consolidated yet
        for r in report.results:
            click.echo(f"{r.outcome}: {r.reason}")
        return
    for line in result_lines(report, verbose):
        click.echo(line)
    click.echo(f"\n{counts_line(report, verbose)}")


def result_lines(report: PublishReport, verbose: bool) -> list[str]:
    """A row per target and scope that changed, failed or would change (every row with ``verbose``):
    the outcome, target and scope, then the path and the reason on lines of their own."""
    lines: list[str] = []
    for r in report.results:
        if not verbose and not _shown(r):
            continue
        folders = report.folders.get(r.scope)
        lines.append(
            f"{r.outcome:<16} {r.target:<14} {r.scope}" + (f" ({', '.join(folders)})" if folders else "")
        )
        lines.append(f"  {r.path}")
        if r.reason:
            lines.append(f"  {r.reason.removeprefix(f'{r.path}: ')}")
        if report.dry_run:
            lines += [f"  would write {path}" for path in r.written]
            lines += [f"  would remove {path}" for path in r.removed]
    return lines


def _shown(r: TargetResult) -> bool:
    """In the summary: what changed, failed or would change; not what is current or skipped."""
    return bool(r.written or r.removed) or r.outcome in PUBLISH_FAILED or r.outcome in WOULD_CHANGE


def counts_line(report: PublishReport, verbose: bool) -> str:
    """``2 targets: changed 1, failed 1 (1 refused), unchanged 3, skipped 2 (-v lists them)``."""
    from daemon.words import MORE  # lazy: daemon.words imports the steering (git, structlog): not for --help

    verb = "would change" if report.dry_run else "changed"
    failed = report.failed
    refused = sum(1 for r in failed if r.outcome == PublishOutcome.REFUSED)
    line = f"{len(report.results)} targets: {verb} {len(report.changed)}, failed {len(failed)}"
    line += f" ({refused} refused)" if refused else ""
    left_out = 0
    for outcome in (PublishOutcome.UNCHANGED, PublishOutcome.SKIPPED):
        n = sum(1 for r in report.results if r.outcome == outcome and not _shown(r))
        if n:
            line += f", {outcome} {n}"
            left_out += n
    return line + (f" ({MORE})" if left_out and not verbose else "")


WHERE_SHOWN = 3
"""How many files a run's one-line publish summary names (the count says how many more)."""


def where_line(report: PublishReport) -> str:
    """Where memory went, for a run's one-line summary: the counts, then the files written (or, when
    nothing changed, the targets that are current), e.g. ``24 targets: changed 2, failed 0,
    unchanged 22 (-v lists them); wrote ~/.claude/CLAUDE.md, ~/work/app/CLAUDE.md``."""
    from daemon.words import MORE  # lazy: as in counts_line

    counts = counts_line(report, verbose=False).replace(f" ({MORE})", "")
    written = sorted({path for r in report.results for path in r.written})
    if written:
        more = f" and {len(written) - WHERE_SHOWN} more" if len(written) > WHERE_SHOWN else ""
        return f"{counts}; wrote {', '.join(written[:WHERE_SHOWN])}{more} (memd publish -v lists them)"
    current = sorted({r.target for r in report.results if r.outcome == PublishOutcome.UNCHANGED})
    return counts + (f"; current in {', '.join(current)}" if current else "")
