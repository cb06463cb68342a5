"""`memd doctor`: can each phase run on its model endpoint? Reachable, model, structured output, tools, batches."""

from __future__ import annotations

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@pass_ctx
def doctor_command(ctx: CliContext, as_json: bool) -> None:
    """Probe each phase's model endpoint (a few tiny calls) and say whether it can run.

    Exit status 0 when both phases can run, 1 when one cannot (the verdict names the setting to
    change), 2 for a config error (local_only refusing an endpoint among them)."""
    import asyncio
    import os

    from pipeline.errors import LocalOnlyRefused
    from pipeline.llm import doctor

    settings = ctx.loaded().settings
    ctx.configure_logging()
    try:
        reports = asyncio.run(doctor.diagnose(settings, os.environ))
    except LocalOnlyRefused as exc:
        fail(str(exc), Exit.CONFIG)
    click.echo(doctor.as_json(reports) if as_json else doctor.render(reports).rstrip())
    if not all(r.ok for r in reports):
        raise SystemExit(int(Exit.FAILED))
