"""`memd team add-machine LINE`: bind another machine of yours to your ``[team] person`` (team mode).

A person is their keys (``pipeline.team.people``): another machine that starts with your name counts
as yours only once a machine of yours vouched for its key. Run `memd sync key` on the new machine,
then `memd team add-machine LINE` here with the line it printed; the new machine's extracts build your
``global/`` memory from the next start of each daemon.
"""

from __future__ import annotations

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit


@click.group("team")
def team_group() -> None:
    """Team mode: the machines of your [team] person."""


@team_group.command("add-machine")
@click.argument("line")
@pass_ctx
def add_machine_command(ctx: CliContext, line: str) -> None:
    """Bind the machine whose `memd sync key` line is LINE to your [team] person, signed with this
    machine's key."""
    settings = ctx.loaded().settings
    if not settings.team.person:
        fail("no [team] person is set: a machine of a person is bound to that person", Exit.CONFIG)
    ctx.configure_logging()
    import asyncio

    from daemon.runtime import Runtime
    from pipeline.errors import MemdError
    from pipeline.gitrepo.signing import Signer
    from pipeline.team.people import NotAKeyLine, vouch

    person = settings.team.person

    async def go() -> str:
        async with Runtime.open(settings) as rt:
            if not rt.store.shared:
                raise NotAKeyLine("team mode needs a PostgreSQL [paths] state_db shared by the team")
            return await vouch(rt.store, Signer(settings.paths.state_dir), person, line, now=rt.clock.now())

    try:
        key = asyncio.run(go())
    except NotAKeyLine as exc:
        fail(f"not added: {exc}", Exit.USAGE)
    except (MemdError, OSError) as exc:
        fail(f"not added: {exc}", Exit.FAILED)
    click.echo(
        f"bound {key.split()[0]} key ...{key[-12:]} to {person!r}: it counts as yours from its next start"
    )
