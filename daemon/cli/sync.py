"""`memd sync [--json]`: sync the memory repository with its git remote (``[sync] remote``) now;
`memd sync key` and `memd sync trust LINE`: pairing a machine with it.

It fetches, checks what comes in (signed by a trusted machine, then memd's checks), merges it,
consolidates again the scopes both machines changed (with an API key; else the daemon does it at its
next consolidation), pushes, and publishes when the merge changed the memory. Exit status: 0 when
synced; 1 when the sync stopped (a rewritten remote, a refused commit) or failed (unreachable), with
the reason; 5 when this machine is not trusted by the remote yet (the command to run elsewhere is
printed); 2 for a bad config or no remote.

`memd sync key` prints this machine's allowed-signers line; `memd sync trust LINE`, on a machine that
already syncs, adds that line to the memory's allowed signers (a signed commit) and pushes it.
`memd sync revoke LINE|FINGERPRINT` revokes another machine's key for good, `memd sync rotate` gives
this machine a new key (the old one revoked in the same commit): ``pipeline.sync.pairing``.
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
    from collections.abc import Awaitable, Callable

    from daemon.runtime import Runtime
    from pipeline.sync.run import SyncReport


@click.group("sync", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@verbose_option
@pass_ctx
def sync_command(ctx: CliContext, as_json: bool, verbose: bool) -> None:
    """Fetch, merge and push the memory repository with its [sync] remote now."""
    if click.get_current_context().invoked_subcommand is not None:
        return
    settings = ctx.loaded().settings
    if not settings.sync.enabled:
        fail("no [sync] remote is configured: set [sync] remote (a path, ssh or https git URL)", Exit.CONFIG)
    ctx.configure_logging()
    import asyncio

    from daemon.runtime import Runtime
    from daemon.service.cycle import jsonable
    from daemon.usecases.sync import Synced, sync_now
    from daemon.words import synced_lines
    from pipeline.errors import StoreError

    async def go() -> Synced:
        async with Runtime.open(settings) as rt:
            return await sync_now(rt)

    try:
        done = asyncio.run(go())
    except StoreError as exc:
        fail(str(exc), Exit.FAILED)
    if as_json:
        published = done.published
        out = {"sync": jsonable(done.report), "published": jsonable(published) if published else None}
        click.echo(json.dumps(out, indent=2))
    else:
        for line in synced_lines(done, verbose=verbose):
            click.echo(line)
    sys.exit(_exit(done.report))


def _exit(report: SyncReport) -> Exit:
    if report.untrusted:
        return Exit.UNTRUSTED
    return Exit.FAILED if report.failure else Exit.OK


@sync_command.command("key")
@pass_ctx
def key_command(ctx: CliContext) -> None:
    """Print this machine's public key as one allowed-signers line (for `memd sync trust`)."""
    settings = ctx.loaded().settings
    import asyncio

    from daemon.runtime import memory_repo
    from pipeline.errors import MemdError
    from pipeline.sync.pairing import key_line

    try:
        line = asyncio.run(key_line(memory_repo(settings)))
    except (MemdError, OSError) as exc:
        fail(str(exc), Exit.FAILED)
    click.echo(line)


@sync_command.command("trust")
@click.argument("line")
@pass_ctx
def trust_command(ctx: CliContext, line: str) -> None:
    """Trust the machine whose `memd sync key` line is LINE: add it to the memory's allowed signers
    (a signed commit) and push it. Run it on a machine that already syncs with the remote."""
    settings = ctx.loaded().settings
    if not settings.sync.enabled:
        fail("no [sync] remote is configured: set [sync] remote (a path, ssh or https git URL)", Exit.CONFIG)
    ctx.configure_logging()
    import asyncio

    from daemon.runtime import Runtime
    from pipeline.errors import BadSignerLine, MemdError, NotTrusted
    from pipeline.sync.pairing import trust_line

    async def go() -> SyncReport:
        async with Runtime.open(settings) as rt:
            return await trust_line(
                rt.store, settings, rt.memory_repo(), rt.clock, rt.redactor(), line, model=rt.llm_or_none
            )

    try:
        report = asyncio.run(go())
    except BadSignerLine as exc:
        fail(f"not added: {exc}", Exit.USAGE)
    except NotTrusted as exc:
        fail(f"not added: {exc}", Exit.UNTRUSTED)
    except (MemdError, OSError) as exc:
        fail(f"not added: {exc}", Exit.FAILED)
    click.echo(f"trusted {line.split()[0]}: it syncs with this memory from its next `memd sync`")
    for out in report.lines():
        click.echo(out)
    sys.exit(_exit(report))


def _trust_change(ctx: CliContext, what: str, act: Callable[[Runtime], Awaitable[list[str]]]) -> None:
    """Run a change of trust (``act`` prints what it did); the exit status says how it went."""
    settings = ctx.loaded().settings
    ctx.configure_logging()
    import asyncio

    from daemon.runtime import Runtime
    from pipeline.errors import BadSignerLine, MemdError, NotTrusted

    async def go() -> list[str]:
        async with Runtime.open(settings) as rt:
            return await act(rt)

    try:
        lines = asyncio.run(go())
    except BadSignerLine as exc:
        fail(f"not {what}: {exc}", Exit.USAGE)
    except NotTrusted as exc:
        fail(f"not {what}: {exc}", Exit.UNTRUSTED)
    except (MemdError, OSError) as exc:
        fail(f"not {what}: {exc}", Exit.FAILED)
    for line in lines:
        click.echo(line)


@sync_command.command("revoke")
@click.argument("machine")
@pass_ctx
def revoke_command(ctx: CliContext, machine: str) -> None:
    """Revoke a machine's key for good: MACHINE is its `memd sync key` line, its key's SHA256:
    fingerprint or its name (as `memd status` lists them). Run it on another trusted machine; the
    revocation travels with the memory, and no commit signed by that key after it is accepted."""
    from pipeline.sync.pairing import revoke

    async def act(rt: Runtime) -> list[str]:
        settings = rt.settings()
        gone, report = await revoke(
            rt.store, settings, rt.memory_repo(), rt.clock, rt.redactor(), machine, model=rt.llm_or_none
        )
        out = [f"revoked {gone.principal} ({gone.fingerprint}): no commit it signs from now on is accepted"]
        return out + (report.lines() if report is not None else [])

    _trust_change(ctx, "revoked", act)


@sync_command.command("rotate")
@pass_ctx
def rotate_command(ctx: CliContext) -> None:
    """Give this machine a new signing key: one signed commit trusts the new key and revokes the old
    one, then it is pushed. Run it when the old key may have leaked (a copied home, a backup)."""
    from pipeline.sync.pairing import rotate

    async def act(rt: Runtime) -> list[str]:
        settings = rt.settings()
        old, new, report = await rotate(
            rt.store, settings, rt.memory_repo(), rt.clock, rt.redactor(), model=rt.llm_or_none
        )
        out = [f"rotated the key of {old.principal}: {old.fingerprint} revoked, {new.fingerprint} signs now"]
        return out + (report.lines() if report is not None else [])

    _trust_change(ctx, "rotated", act)
