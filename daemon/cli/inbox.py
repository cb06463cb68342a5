"""`memd inbox [show|accept|reject RUN]`: review consolidations made with `[review] mode = "inbox"`.

`accept` publishes at once (the agents see the accepted memory without waiting for a cycle);
`reject` changes nothing on the branch, so the published memory stays as it was. `accept` lists
each copy it wrote or failed on and counts the targets it skipped (``-v`` lists those too).

Exit status: 0 on success; 1 when the run is unknown, its branch is gone, git or the store fails,
or publishing the accepted memory failed; 2 for a bad config.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.cli.output import verbose_option
from daemon.exits import Exit

if TYPE_CHECKING:
    from daemon.runtime import Runtime

T = TypeVar("T")


def _with_runtime(ctx: CliContext, work: Callable[[Runtime], Awaitable[T]]) -> T:
    settings = ctx.loaded().settings
    from daemon.runtime import Runtime
    from pipeline.errors import MemdError

    async def go() -> T:
        async with Runtime.open(settings) as rt:
            return await work(rt)

    try:
        return asyncio.run(go())
    except MemdError as exc:
        fail(str(exc), Exit.FAILED)


@click.group("inbox", invoke_without_command=True)
@click.pass_context
def inbox_group(click_ctx: click.Context) -> None:
    """List consolidation runs waiting for review (see `memd inbox show|accept|reject RUN`)."""
    if click_ctx.invoked_subcommand is not None:
        return
    ctx: CliContext = click_ctx.obj
    from pipeline.consolidate import inbox

    entries = _with_runtime(ctx, lambda rt: inbox.pending(rt.store, rt.memory_repo()))
    if not entries:
        click.echo("the inbox is empty: no consolidation waits for review")
        return
    from daemon.cli.output import table_width
    from daemon.cli.text import format_table

    rows = []
    for e in entries:
        run = e.run
        added, removed = len(run.inputs.get("added", [])), len(run.inputs.get("removed", []))
        note = "" if e.branch_exists else " (branch gone: reject it)"
        folder = str(run.inputs.get("project") or ("(every project)" if run.scope == "global" else "?"))
        rows.append(
            (run.run_id, f"{run.started_at:%Y-%m-%d %H:%M}", f"+{added} -{removed}{note}", run.scope, folder)
        )
    columns = ("run", "started", "sessions", "scope", "project")
    for line in format_table(columns, rows, width=table_width(), keep=3):
        click.echo(line)
    click.echo(
        f"\n{len(entries)} pending: `memd inbox show RUN`, then `memd inbox accept RUN` or `reject RUN`"
    )


@inbox_group.command("show")
@click.argument("run_id")
@pass_ctx
def show(ctx: CliContext, run_id: str) -> None:
    """Print a pending run's commit message and diff."""
    from pipeline import invisible
    from pipeline.consolidate import inbox

    entry, patch = _with_runtime(ctx, lambda rt: inbox.show(rt.store, rt.memory_repo(), run_id))
    folder = entry.run.inputs.get("project")
    where = f" ({folder})" if folder else ""
    # Nothing is hidden from the reviewer: an invisible character shows as its code point (<U+E0041>).
    head = f"run {entry.run.run_id}  scope {entry.run.scope}{where}  branch {entry.run.branch}\n"
    click.echo(invisible.show(head))
    click.echo(invisible.show(patch.rstrip("\n")))


@inbox_group.command("accept")
@click.argument("run_id")
@verbose_option
@pass_ctx
def accept(ctx: CliContext, run_id: str, verbose: bool) -> None:
    """Merge a pending run into the memory repository and publish it."""
    from daemon.usecases.changes import accept_run
    from daemon.words import accepted_lines

    ctx.configure_logging()
    done = _with_runtime(ctx, lambda rt: accept_run(rt, run_id))
    for line in accepted_lines(done, verbose=verbose):
        click.echo(line)
    if not done.ok:
        raise SystemExit(Exit.FAILED)


@inbox_group.command("reject")
@click.argument("run_id")
@pass_ctx
def reject(ctx: CliContext, run_id: str) -> None:
    """Drop a pending run (its sessions are proposed again only with new input)."""
    from daemon.usecases.changes import reject_run
    from daemon.words import rejected_line

    run = _with_runtime(ctx, lambda rt: reject_run(rt, run_id))
    click.echo(rejected_line(run))
