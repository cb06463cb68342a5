"""`memd forget --session ID | --project KEY`: forget extracts, rewrite the affected scopes and publish.

When it returns, the forgotten sessions' text is gone from the state store, the affected scopes are
rebuilt from what was already on the memory repository's branch (a pending inbox run of theirs is
dropped), and the published copies are updated. A session another machine extracted is forgotten
from the text the memory repository holds (``[sync]``), and its tombstone is pushed so that machine
forgets it too. The git history is rewritten without the session's text (signed, and, once
synced, pushed with a lease and adopted by the other machines, as a memory forget's). The publish
targets it skipped are counted (``-v`` lists them).

It finishes or changes nothing: a scope that cannot be written now (uncommitted changes, a
consolidation of it running) refuses the whole forget before anything is forgotten; a scope no
model can rebuild (no API key, the model fails) still loses, without a model call, what the session
taught (its inputs, the topics citing it, their index lines, the digest), the rest to be rebuilt by
a later consolidation. A forget interrupted before its rewrite is finished by the same command.

Exit status: 0 when every affected scope was rewritten or withdrawn (or had nothing of it to
rewrite) and published; 1 when nothing matched, it refused (nothing changed), a rewrite or a
publish failed (named `NOT finished`), or the store or git failed; 2 for a bad config; 64 for bad
arguments (see `daemon.exits`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.cli.output import verbose_option
from daemon.exits import Exit


@click.command("forget")
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    help="A session id (as in `memd status` and topic sources), this machine's or another's whose text the memory holds.",
)
@click.option(
    "--project",
    metavar="KEY",
    help="A project key (projects/<KEY>), its short name, a project folder (or one inside it; a bare name "
    "is a short name when a scope has it, else a folder here), or `global`.",
)
@verbose_option
@pass_ctx
def forget_command(ctx: CliContext, session_id: str | None, project: str | None, verbose: bool) -> None:
    """Forget what memd learned from one session or one project, and rewrite the memory now."""
    if (session_id is None) == (project is None):
        fail("give exactly one of --session ID or --project KEY", Exit.USAGE)
    settings = ctx.loaded().settings
    ctx.configure_logging()
    from daemon.runtime import Runtime
    from daemon.usecases.changes import Forgotten, forget_now
    from daemon.words import forgotten_lines, no_key_warning
    from pipeline.consolidate.forget import known_scopes, scope_of_project
    from pipeline.errors import MemdError

    async def go() -> Forgotten:
        async with Runtime.open(settings, env=os.environ) as rt:
            scope = None
            if project is not None:  # resolved here: the pipeline has no working directory
                try:
                    known = await known_scopes(rt.store, rt.memory_repo())
                    scope = scope_of_project(project, known=known, cwd=Path.cwd())
                except ValueError as exc:
                    fail(str(exc), Exit.USAGE)
            return await forget_now(
                rt,
                session_id=session_id,
                project=scope,
                on_no_key=lambda reason: click.echo(f"memd: {no_key_warning(reason)}", err=True),
            )

    try:
        done = asyncio.run(go())
    except MemdError as exc:
        fail(str(exc), Exit.FAILED)
    for line in forgotten_lines(done, verbose=verbose):
        click.echo(line)
    if not done.ok:
        raise SystemExit(Exit.FAILED)
