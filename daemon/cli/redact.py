"""`memd redact`: stdin -> redacted stdout; ``--report`` says on stderr, per rule (with its family:
credential slot, prose, key material, token shape...), how many
candidates were found and redacted, and where each kept candidate is and why (never a value)."""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections import Counter
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, fail, pass_ctx

if TYPE_CHECKING:
    from pipeline.redaction import RedactionReport


@click.command("redact")
@click.option(
    "--report",
    "report_wanted",
    is_flag=True,
    help="On stderr: per rule, candidates found and redacted; each candidate kept, with its "
    "rule, position and reason (never its value).",
)
@pass_ctx
def redact_command(ctx: CliContext, report_wanted: bool) -> None:
    """Redact secrets from standard input and write the result to standard output.

    Each secret becomes [REDACTED:<rule>:<tag>], where the tag is a keyed hash (the key lives in
    the state directory), so equal secrets get equal tags. Secrets are never logged.
    """
    from daemon.runtime import redactor as make_redactor
    from pipeline.errors import RedactionKeyError

    ctx.configure_logging()  # logs go to stderr: stdout carries only the redacted text
    try:
        redactor = make_redactor(ctx.loaded().settings)
    except RedactionKeyError as exc:
        fail(str(exc))
    raw = sys.stdin.buffer.read()
    text = raw.decode("utf-8", "surrogateescape")
    report = redactor.report(text) if report_wanted else None
    result = report.result if report else redactor.redact(text)
    out = sys.stdout.buffer
    out.write(result.text.encode("utf-8", "surrogateescape"))
    out.flush()
    if report:
        for line in report_lines(text, report):
            click.echo(line, err=True)


def report_lines(text: str, report: RedactionReport) -> list[str]:
    """The ``--report`` table and the kept candidates: rule names, counts, positions, reasons."""
    from pipeline.redaction.families import family  # lazy: the redaction package (its engine, structlog)

    counts = report.result.counts
    rules = sorted(set(report.found) | set(counts), key=lambda r: (-counts.get(r, 0), r))
    kept = Counter(k.rule for k in report.kept)
    width = max((len(rule) for rule in rules), default=4)
    fwidth = max((len(family(rule)) for rule in rules), default=6)
    header = f"{'family':<{fwidth}}  {'rule':<{width}}  {'found':>5}  {'redacted':>8}  {'kept':>4}"
    lines = [header] if rules else []
    for rule in rules:
        lines.append(
            f"{family(rule):<{fwidth}}  {rule:<{width}}  {report.found.get(rule, 0):>5}  "
            f"{counts.get(rule, 0):>8}  {kept[rule]:>4}"
        )
    if report.kept:
        lines.append("kept in clear (position line:column, offset; the value is never shown):")
    newlines = [i for i, c in enumerate(text) if c == "\n"] if report.kept else []
    for k in report.kept:
        line = bisect_left(newlines, k.start)  # newlines before the candidate
        column = k.start - (newlines[line - 1] + 1 if line else 0) + 1
        line += 1
        lines.append(
            f"  {family(k.rule)}/{k.rule} at {line}:{column} (offset {k.start}, {k.end - k.start} chars): {k.reason.text}"
        )
    lines.append(f"{report.result.total} secret(s) redacted, {len(report.kept)} candidate(s) kept")
    return lines
