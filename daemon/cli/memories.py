"""`memd memories log [SCOPE]` and `memd memories show [SCOPE [FILE]]`: read the memory without git.

Exit status: 0; 1 when the scope or file does not exist or git fails; 2 for a bad config.
"""

from __future__ import annotations

import asyncio

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit


@click.group("memories")
def memories_group() -> None:
    """Read the memory repository: its scopes, their memory, their history."""


@memories_group.command("log")
@click.argument("scope", required=False)
@click.option(
    "-n", "limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="How many commits."
)
@pass_ctx
def log_command(ctx: CliContext, scope: str | None, limit: int) -> None:
    """The consolidations (commits) of the repository, or of one scope."""
    settings = ctx.loaded().settings
    from daemon.runtime import memory_repo
    from pipeline.errors import MemoryRepoError
    from pipeline.memory.read import history

    try:
        commits = asyncio.run(history(memory_repo(settings), scope, limit=limit))
    except MemoryRepoError as exc:
        fail(str(exc), Exit.FAILED)
    if not commits:
        click.echo(f"no history yet in {settings.paths.memory_dir}")
        return
    for c in commits:
        click.echo(f"{c.at[:16].replace('T', ' ')}  {c.sha[:10]}  {c.subject}")


@memories_group.command("show")
@click.argument("scope", required=False)
@click.argument("file", required=False)
@pass_ctx
def show_command(ctx: CliContext, scope: str | None, file: str | None) -> None:
    """The scopes; with SCOPE its summary, index and topics; with FILE one topic file."""
    settings = ctx.loaded().settings
    from daemon.runtime import memory_repo
    from pipeline.errors import MemoryRepoError
    from pipeline.memory import read

    repo = memory_repo(settings)
    try:
        if scope is None:
            found = read.scopes(repo)
            if not found:
                click.echo(f"no memory yet in {repo.path}")
            for s in found:
                v = read.view(repo, s)
                click.echo(f"{s:<44} {len(v.topics):>3} topic(s)  {v.inputs:>3} session(s)")
            return
        if file is not None:
            click.echo(read.topic_text(repo, scope, file).rstrip("\n"))
            return
        v = read.view(repo, scope)
    except MemoryRepoError as exc:
        fail(str(exc), Exit.FAILED)
    click.echo(f"# {v.scope}\n\n## memory_summary.md\n\n{v.summary.strip() or '(empty)'}\n")
    click.echo(f"## MEMORY.md\n\n{v.index.strip() or '(empty)'}\n")
    click.echo("## Topics\n")
    for t in v.topics:
        click.echo(
            f"{t.path:<32} {t.type:<10} updated {t.updated or '?':<10} {t.sources} source(s)  {t.name}"
        )
    if not v.topics:
        click.echo("(none)")
