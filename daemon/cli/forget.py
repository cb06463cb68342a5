"""`memd forget --session ID | --project KEY`: forget extracts, rewrite the affected scopes and publish.

When it returns, the forgotten sessions' text is gone from the state store, the affected scopes are
rebuilt from what was already on the memory repository's branch (a pending inbox run of theirs is
dropped), and the published copies are updated. Only git history keeps the old text.

Exit status: 0 when every affected scope was rewritten (or had nothing of it to rewrite) and
published; 1 when nothing matched, a run or a publish failed, or the store or git failed; 2 for a
bad config or bad arguments.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from pipeline.vocabulary import RunOutcome

if TYPE_CHECKING:
    from pipeline.consolidate.forget import ForgetReport
    from pipeline.llm.protocol import ModelClient
    from pipeline.publish.run import PublishReport

EXIT_FAILED = 1
EXIT_USAGE = 2


@click.command("forget")
@click.option(
    "--session", "session_id", metavar="ID", help="A session id (as in `memd status` and topic sources)."
)
@click.option("--project", metavar="KEY", help="A project key (projects/<KEY>), a project path, or `global`.")
@pass_ctx
def forget_command(ctx: CliContext, session_id: str | None, project: str | None) -> None:
    """Forget what memd learned from one session or one project, and rewrite the memory now."""
    if (session_id is None) == (project is None):
        fail("give exactly one of --session ID or --project KEY", EXIT_USAGE)
    settings = ctx.loaded().settings
    ctx.configure_logging()
    from pipeline.clock import SystemClock
    from pipeline.consolidate.forget import forget, scope_of_project
    from pipeline.errors import MemdError, NoAPIKey
    from pipeline.redaction import Redactor, load_or_create_key
    from pipeline.store import open_store

    if project is not None:
        try:
            scope_of_project(project)
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)

    async def go() -> tuple[ForgetReport, PublishReport | None, str]:
        clock = SystemClock()
        store = await open_store(settings.paths.state_db)
        llm: ModelClient | None = None
        try:
            from pipeline.llm.client import build_client

            try:
                llm = build_client(settings, store=store, clock=clock, env=os.environ)
            except NoAPIKey as exc:
                click.echo(
                    f"memd: {exc}; scopes that still have other sessions cannot be rewritten now", err=True
                )
            redactor = Redactor(load_or_create_key(settings.paths.state_dir))
            report = await forget(
                store, settings, clock, llm, redactor, session_id=session_id, project=project
            )
            published = None
            if report.forgotten:
                from pipeline.publish.run import publish_all

                published = await publish_all(store, settings, clock)
            return report, published, store.dialect
        finally:
            if llm is not None:
                await llm.aclose()
            await store.close()

    try:
        report, published, dialect = asyncio.run(go())
    except MemdError as exc:
        fail(str(exc), EXIT_FAILED)
    _print(report, session_id or project or "", published, dialect)
    failed = [r for r in report.runs if r.outcome in (RunOutcome.FAILED, RunOutcome.SKIPPED)]
    if not report.forgotten or failed or (published is not None and published.failed):
        raise SystemExit(EXIT_FAILED)


def _print(report: ForgetReport, what: str, published: PublishReport | None, dialect: str) -> None:
    from daemon.cli.inbox import publish_lines

    if not report.forgotten:
        click.echo(f"nothing to forget: no extract of {what} is left (unknown, or forgotten already)")
        return
    for scope, count in sorted(report.forgotten.items()):
        click.echo(f"{scope}: {count} extract(s) forgotten")
    where = (
        "and from the database file"
        if dialect == "sqlite"
        else "(PostgreSQL keeps old row versions until VACUUM FULL, and its WAL and backups keep theirs)"
    )
    click.echo(
        "state store: the forgotten extracts' summaries, notes and memories are removed "
        f"{where}; their ids and the fact of forgetting stay"
    )
    for run_id in report.dropped_inbox:
        click.echo(f"dropped pending review {run_id}: its branch is deleted, none of it landed")
    for run in report.runs:
        line = f"{run.scope}: {run.outcome}"
        if run.commit:
            line += f" {run.commit[:12]}"
        if run.reason:
            line += f" ({run.reason.splitlines()[0]})"
        click.echo(line)
        for change in run.changes:
            click.echo(f"  {change}")
        for path in sorted(run.withdrawn):
            how = "rebuilt from the remaining inputs" if path in run.rebuilt else "not rebuilt"
            click.echo(f"  memd withdrew {path} (it cited a forgotten session): {how}")
        for path, why in sorted(run.removed_topics.items()):
            if path in run.withdrawn:
                continue
            click.echo(f"  memd removed {path} ({why})")
    if published is not None:
        for line in publish_lines(published):
            click.echo(line)
    click.echo("the forgotten content remains in the memory repository's git history (git log -p)")
