"""`memd redact`: stdin -> redacted stdout; ``--report`` prints counts by rule on stderr."""

from __future__ import annotations

import sys

import click

from daemon.cli.context import CliContext, fail, pass_ctx


@click.command("redact")
@click.option("--report", is_flag=True, help="Print how many secrets each rule replaced, on stderr.")
@pass_ctx
def redact_command(ctx: CliContext, report: bool) -> None:
    """Redact secrets from standard input and write the result to standard output.

    Each secret becomes [REDACTED:<rule>:<tag>], where the tag is a keyed hash (the key lives in
    the state directory), so equal secrets get equal tags. Secrets are never logged.
    """
    from pipeline.errors import RedactionKeyError
    from pipeline.redaction import Redactor, load_or_create_key

    ctx.configure_logging()  # logs go to stderr: stdout carries only the redacted text
    state_dir = ctx.loaded().settings.paths.state_dir
    try:
        key = load_or_create_key(state_dir)
    except RedactionKeyError as exc:
        fail(str(exc))
    raw = sys.stdin.buffer.read()
    text = raw.decode("utf-8", "surrogateescape")
    result = Redactor(key).redact(text)
    out = sys.stdout.buffer
    out.write(result.text.encode("utf-8", "surrogateescape"))
    out.flush()
    if report:
        width = max((len(rule) for rule in result.counts), default=0)
        for rule, count in sorted(result.counts.items(), key=lambda item: (-item[1], item[0])):
            click.echo(f"{rule:<{width}}  {count}", err=True)
        click.echo(f"{result.total} secret(s) redacted", err=True)
