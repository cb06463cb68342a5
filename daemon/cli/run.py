"""`memd run`: the foreground daemon the service starts; `--once` for one full cycle; `--dry-run` to look.

Exit status: 0 when the daemon stopped cleanly or the cycle ran (a transcript that failed is a
recorded outcome, not a failed run; so is an API that asked memd to wait); 1 when memd itself could
not work (the state store is unreachable, a step could not run, such as extraction without an API
key, with a key the API refuses, an API that cannot be reached or a model it does not know, or a
consolidation refused by validation); 2 for a bad config; 3 when another memd holds the state store; 64 for bad options
(``daemon.exits``).

Ctrl-C (SIGINT, like SIGTERM) lets the step in flight finish for up to ``[schedule]
shutdown_timeout_s`` and runs no further step; `--once` says so at once, and that a second Ctrl-C
abandons the step. A stop that had to abandon a step ends the process without waiting for the
thread the step may have left stuck (``daemon.service.hardstop``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit

if TYPE_CHECKING:
    from rich.console import Console

    from daemon.service.cycle import CycleResult, StepResult
    from daemon.service.lifecycle import Daemon, Interrupt

WAIT_TIMEOUT_S = 1800.0
"""`--wait`'s default limit: the API ends most batches well within half an hour."""
WAIT_POLL_S = 30.0
"""How often `--wait` asks the API whether the batches ended."""
QUIET_FIELDS = {"started_at", "finished_at", "dry_run", "duration_s"}
"""Report fields the progress line leaves out (the step's own timing is shown beside it)."""
TABLE_COLUMNS = {
    "would_extract": (
        ["session_id", "request_tokens", "estimated_cost_usd", "rendered_tokens", "source", "project"],
        3,
    ),
    "would_consolidate": (["scope", "estimated_tokens", "estimated_cost_usd", "why"], 2),
}
"""The columns a dry run shows for the lists it knows (other lists show their scalar fields), and how
many of them stay a table on a narrow terminal (``format_table``'s ``keep``)."""


@click.command("run")
@click.option(
    "--once",
    is_flag=True,
    help="Run one full cycle (scan, extract, consolidate, sync when [sync] remote is set, publish) and exit.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --once: call no API; list the sessions and scopes it would work on, with tokens and cost.",
)
@click.option(
    "--wait",
    is_flag=True,
    help="With --once: wait for the Message Batches the cycle submitted, then finish the cycle.",
)
@click.option(
    "--wait-timeout",
    type=click.FloatRange(min=0),
    default=WAIT_TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="With --wait: give up after this long (exit 1, saying what is still pending).",
)
@click.option("--wait-poll", type=click.FloatRange(min=0.05), default=WAIT_POLL_S, hidden=True)
@pass_ctx
def run_command(
    ctx: CliContext, once: bool, dry_run: bool, wait: bool, wait_timeout: float, wait_poll: float
) -> None:
    """Run the daemon in the foreground (what the service starts), or one cycle with --once."""
    if dry_run and not once:
        fail("--dry-run works with --once only", Exit.USAGE)
    if wait and (not once or dry_run):
        fail("--wait works with --once only (and not with --dry-run)", Exit.USAGE)
    loaded = ctx.loaded()
    ctx.configure_logging(daemon=not once)

    from daemon.app import build
    from daemon.config import load_settings

    def reload() -> Any:
        return load_settings(ctx.config_path).settings

    import asyncio
    import contextlib

    from daemon.runtime import dry_run_settings

    with (
        dry_run_settings(loaded.settings) if dry_run else contextlib.nullcontext(loaded.settings) as settings
    ):
        daemon = build(settings, reload_settings=reload, config_path=loaded.path, dry_run=dry_run)
        limits = (wait_timeout, wait_poll) if wait else None
        code = asyncio.run(_once(daemon, dry_run, limits) if once else _forever(daemon))
    sys.exit(code)


async def _forever(daemon: Daemon) -> int:
    from pipeline.errors import InstanceBusy, StoreError

    try:
        code = await daemon.run_forever()
    except InstanceBusy as exc:
        fail(str(exc), Exit.BUSY)
    except StoreError as exc:
        fail(str(exc), Exit.FAILED)
    if daemon.abandoned:
        daemon.hard_stop.exit_now(code)
    return code


async def _once(daemon: Daemon, dry_run: bool, limits: tuple[float, float] | None = None) -> int:
    from daemon.service.once import BatchWait, run_once
    from pipeline.errors import InstanceBusy, StoreError

    progress = Progress(dry_run=dry_run)
    wait = None
    if limits is not None:
        wait = BatchWait(timeout_s=limits[0], poll_s=limits[1], on_poll=progress.waiting(limits[0]))
    try:
        result = await run_once(
            daemon,
            dry_run=dry_run,
            on_start=progress.start,
            on_end=progress.end,
            on_interrupt=progress.interrupted,
            wait=wait,
        )
    except InstanceBusy as exc:
        fail(str(exc), Exit.BUSY)
    except StoreError as exc:
        fail(str(exc), Exit.FAILED)
    finally:
        progress.close()
    for hint in result.hints:  # before the summary, which stays the last line
        progress.console.print(hint, markup=False)
    progress.finish(result)
    pending = pending_batches(result, waited_s=None if limits is None or result.not_run else limits[0])
    if pending is not None:
        progress.console.print(pending, markup=False)
    review = waiting_review(result)
    if review is not None:
        progress.console.print(review, markup=False)
    if result.failures:
        for failed in result.failures:
            click.echo(f"memd: {failed.name} failed: {failed.error}", err=True)
        code = Exit.FAILED
    else:
        gave_up = limits is not None and pending is not None and not result.not_run
        code = Exit.FAILED if gave_up else Exit.OK
    if daemon.abandoned:
        daemon.hard_stop.exit_now(code)
    return code


REASON_BELOW = "reason below"
"""What a failed step's line says instead of the reason, which stderr's failure line gives once."""


class Progress:
    """One line per step on stdout; a spinner while a step runs when stdout is a terminal."""

    def __init__(self, *, dry_run: bool) -> None:
        from daemon.cli.output import console

        self.dry_run = dry_run
        self.console: Console = console()
        self._status: Any = None

    def start(self, name: str) -> None:
        if self.console.is_terminal:
            self._status = self.console.status(f"{name}...")
            self._status.start()

    def end(self, result: StepResult) -> None:
        self.close()
        said = summarize(result.report, leave_out=result.error or "")
        line = f"{result.name:<12} {result.outcome:<8} {result.duration_s:6.1f}s  {said}"
        # a failure's reason goes once, to stderr's `memd: STEP failed: ...` line (``_once``)
        if result.failed and result.error:
            line += f"  ({REASON_BELOW})"
        elif result.error:
            line += f"  ({result.error})"
        self.console.print(line.rstrip(), markup=False)
        if self.dry_run:
            _print_tables(self.console, result.report)

    def interrupted(self, interrupt: Interrupt) -> None:
        """Ctrl-C: say at once what the run waits for, and what a second Ctrl-C does."""
        if interrupt.again:
            line = f"abandoning {interrupt.step}" if interrupt.step else "stopping at once"
        elif interrupt.step:
            line = (
                f"interrupted: waiting up to {interrupt.wait_s:g}s for {interrupt.step} to finish; "
                "no further step will run (Ctrl-C again to abandon it)"
            )
        else:
            line = "interrupted: no further step will run (Ctrl-C again to stop at once)"
        self.console.print(line, markup=False)

    def waiting(self, limit_s: float) -> Callable[[int, int, float], None]:
        """`--wait`'s progress: a line each time batches are found still pending."""

        def line(batches: int, sessions: int, waited_s: float) -> None:
            self.console.print(
                f"waiting for {batches} batch{'es' if batches != 1 else ''} with {sessions} "
                f"session{'s' if sessions != 1 else ''}: {_dur(waited_s)} of {_dur(limit_s)} "
                "(Ctrl-C stops waiting)",
                markup=False,
            )

        return line

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def finish(self, result: CycleResult) -> None:
        prefix = "dry run: " if self.dry_run else ""
        self.console.print(f"{prefix}{result.summary()}", markup=False)


def pending_batches(result: CycleResult, *, waited_s: float | None = None) -> str | None:
    """What a cycle left in Message Batches, to be collected later; None when it left nothing.
    ``waited_s``: `--wait` gave up after that long."""
    from daemon.service.once import pending_of

    batches, sessions = pending_of(result)
    if not batches:
        return None
    later = (
        "the results will be collected by a later cycle "
        "(the daemon, or `memd run --once` again once the API has ended them; "
        "`memd run --once --wait` waits for them)"
    )
    if waited_s is not None:
        return f"gave up waiting after {_dur(waited_s)}: {_batches(batches, sessions)}; {later}"
    return f"{_batches(batches, sessions)}: {later}"


def waiting_review(result: CycleResult) -> str | None:
    """How many consolidation runs wait in the inbox and how to review them; None when none does."""
    from daemon.service.cycle import WaitsForReview  # `memd run --help` stays light (daemon.cli)

    runs = 0
    for step in result.results:
        if step.name == "consolidate":
            runs = step.report.waiting_review if isinstance(step.report, WaitsForReview) else 0
    if runs <= 0:
        return None
    return (
        f"{runs} consolidation run{'s wait' if runs != 1 else ' waits'} for review: `memd inbox` lists "
        "them, `memd inbox accept RUN` publishes one"
    )


def _batches(batches: int, sessions: int) -> str:
    return (
        f"{batches} batch{'es' if batches != 1 else ''} pending with {sessions} "
        f"session{'s' if sessions != 1 else ''}"
    )


def _dur(seconds: float) -> str:
    s = int(seconds)
    return f"{s}s" if s < 60 else f"{s // 60}m {s % 60:02d}s"


def summarize(report: object, *, leave_out: str = "") -> str:
    """A report on one line: its scalar fields, list fields as counts, small mappings inline; a text
    field that ``leave_out`` (the step's error, shown on its own) already holds is not repeated."""
    from daemon.service.cycle import Skipped, compact

    if report is None:
        return ""
    if isinstance(report, Skipped):
        return report.reason
    from pipeline.publish.run import PublishReport

    if isinstance(report, PublishReport) and report.results:  # where memory went, not results=24
        from daemon.cli.publish import where_line

        return where_line(report)
    data = compact(report)
    if not isinstance(data, dict):
        return str(data)
    parts: list[str] = []
    for key, value in data.items():
        if key in QUIET_FIELDS or value in (0, False, None, "", [], {}):
            continue
        if leave_out and isinstance(value, str) and value in leave_out:
            continue
        if isinstance(value, list):
            parts.append(f"{key}={len(value)}")
        elif isinstance(value, dict):
            if value and len(value) <= 8 and all(isinstance(v, int | float | str) for v in value.values()):
                inner = ",".join(f"{k}:{_fmt(v)}" for k, v in value.items())
                parts.append(f"{key}={{{inner}}}")
        elif value is not None and value != "":
            parts.append(f"{key}={_fmt(value)}")
    return " ".join(parts)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value < 1 else f"{value:.2f}"
    return str(value)


def _print_tables(console: Console, report: object) -> None:
    """The lists inside a dry-run report (sessions it would extract, scopes it would consolidate):
    padded columns fitted to the terminal (``format_table``), an id or a path never cut."""
    from rich.text import Text

    from daemon.cli.output import table_width
    from daemon.cli.text import format_table
    from daemon.service.cycle import jsonable

    data = jsonable(report)
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        rows = [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
        if not rows:
            continue
        columns, keep = TABLE_COLUMNS.get(key) or (
            [c for c in rows[0] if not isinstance(rows[0][c], dict | list)],
            1,
        )
        header = [column.replace("_", " ") for column in columns]
        cells = [[_fmt(row.get(c, "")) for c in columns] for row in rows]
        head, *body = format_table(header, cells, width=table_width(), keep=keep)
        console.print(Text(key.replace("_", " ")))
        console.print(Text(head, style="bold"))
        console.print(Text("\n".join(body)))
