"""`memd scan`: find sessions, record them, and show which are ready and why the others are not."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, pass_ctx
from pipeline.vocabulary import TRANSCRIPT_NOTABLE

if TYPE_CHECKING:
    from pipeline.scan.view import ScanReport, SessionRecord
    from pipeline.settings import Settings


TABLE_LIMIT = 50
SESSION_COLUMNS_KEPT = 4
"""The session table's columns that stay a table on a narrow terminal (session id to messages)."""
CANNOT_READ = frozenset({"unreadable", "failed", "incomplete"})
"""The states of a file memd could not (yet) read: the table names its path (it may have no session)."""


@click.command("scan")
@click.option("--all", "show_all", is_flag=True, help="Table every session, not only the notable ones.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per session.")
@pass_ctx
def scan_command(ctx: CliContext, show_all: bool, as_json: bool) -> None:
    """Scan the transcript roots now and record what was found."""
    collect = show_all or as_json
    report = _unchanged(ctx, collect_sessions=collect)
    if report is None:
        loaded = ctx.loaded()
        ctx.configure_logging()
        import asyncio

        report = asyncio.run(_scan(loaded.settings, loaded.inputs_key, collect_sessions=collect))
    if as_json:
        from pipeline.scan.view import sessions_as_json

        click.echo(sessions_as_json(report.sessions))
        return
    from daemon.cli.output import table_width

    _print(report, show_all, width=table_width())


def _unchanged(ctx: CliContext, *, collect_sessions: bool) -> ScanReport | None:
    """The report of a scan that would find nothing new, made without loading the store layer or
    the parsers (``pipeline.scan.probe``); None when a full scan must run."""
    import sqlite3
    import time

    from daemon.config import ConfigError, load_settings
    from pipeline.machine import host_id, known_id
    from pipeline.scan.index import index_path
    from pipeline.scan.probe import probe
    from pipeline.scan.view import ScanReport, read_view
    from pipeline.store.read.keys import this_machine_key
    from pipeline.store.read.rows import SqliteRows, StoreUnavailable
    from pipeline.store_url import sqlite_path

    try:
        loaded = load_settings(ctx.config_path)
    except ConfigError:
        return None  # the full path says why
    paths = loaded.settings.paths
    machine = known_id(paths.state_dir)
    db = sqlite_path(paths.state_db)
    if db is not None and db.exists():  # this installation's machine key (pipeline.store.machines)
        try:
            rows = SqliteRows(db)
            try:
                machine = this_machine_key(rows, machine, host_id(paths.state_dir, create=False))
            finally:
                rows.close()
        except (sqlite3.Error, StoreUnavailable):
            return None
    found = probe(
        paths.state_db, index_path(paths.state_dir), loaded.inputs_key, time.time(), machine=machine
    )
    if found is None or db is None:
        return None
    report = ScanReport(sessions=[], files_seen=found.files_seen, duration_s=found.duration_s)
    try:
        rows = SqliteRows(db)
        try:
            read_view(
                rows, report, notable_limit=TABLE_LIMIT, collect_sessions=collect_sessions, machine=machine
            )
        finally:
            rows.close()
    except (sqlite3.Error, StoreUnavailable):
        return None
    return report


async def _scan(settings: Settings, settings_key: str, *, collect_sessions: bool) -> ScanReport:
    from daemon.runtime import Runtime
    from pipeline.hits.record import record_memory_uses
    from pipeline.scan.scanner import scan

    async with Runtime.open(settings) as rt:
        return await scan(
            rt.store,
            settings,
            rt.clock,
            on_memory_reads=record_memory_uses,
            collect_sessions=collect_sessions,
            notable_limit=TABLE_LIMIT,
            settings_key=settings_key,
        )


def _ago(at: datetime | None) -> str:
    if at is None:
        from daemon.cli.text import ABSENT

        return ABSENT
    seconds = (datetime.now(UTC) - at).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if abs(seconds) >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return "just now"


def _print(report: ScanReport, show_all: bool, *, width: int | None = None) -> None:
    """The summary by source and state, then the notable sessions (every one with ``--all``).

    Plain padded columns (``format_table``), not rich: a rich table costs more than the whole quick
    check of a second scan of 20,000 sessions. ``width``: the terminal's (None: not a terminal, no
    fitting); a session table wider than it keeps the session id (whole: two never read the same),
    state, last activity and messages as the table, and shows source, project and reason under each row.
    """
    from daemon.cli.text import ABSENT, format_table, printable

    def table(
        title: str,
        header: tuple[str, ...],
        rows: list[tuple[str, ...]],
        *,
        left: int = 0,
        keep: int | None = None,
    ) -> None:
        head, *body = format_table(header, rows, left=left, width=width, keep=keep)
        click.echo(title)
        click.echo(click.style(head, bold=True))
        for line in body:
            click.echo(line)

    counts = report.counts()
    states = sorted({state for by_state in counts.values() for state in by_state})
    table(
        f"Sessions ({report.files_seen} files, {report.files_parsed} parsed, {report.duration_s:.2f}s)",
        ("source", *states),
        [(source, *(str(by_state.get(state, 0)) for state in states)) for source, by_state in counts.items()],
        left=1,
    )
    rows: list[SessionRecord] = report.sessions if show_all else report.notable()[:TABLE_LIMIT]
    if not rows:
        click.echo("No session is eligible, failed or changed in this scan (--all lists every session).")
    else:
        table(
            "All sessions" if show_all else "Eligible, failed or changed in this scan",
            ("session", "state", "last activity", "user msgs", "source", "project", "reason"),
            [
                (
                    s.session_id or ABSENT,
                    s.state,
                    _ago(s.last_activity),
                    str(s.user_messages),
                    s.source,
                    s.project or ABSENT,
                    s.reason or ABSENT,
                )
                for s in rows
            ],
            keep=SESSION_COLUMNS_KEPT,
        )
        unread = [s for s in rows if s.state in CANNOT_READ or not s.session_id]
        if unread:
            click.echo("Files memd could not read (state: path):")
            for s in unread:
                click.echo(f"  {s.state}: {printable(str(s.path))}")
        notable_total = sum(
            n
            for by_state in report.counts().values()
            for state, n in by_state.items()
            if state in TRANSCRIPT_NOTABLE
        )
        if not show_all and notable_total > len(rows):
            click.echo(
                f"(the {len(rows)} most recent shown; `memd scan --all` or `--json` lists every session)"
            )
    nxt = report.next_idle()
    if nxt is not None and nxt.eligible_at is not None:
        click.echo(
            f"Next session to become idle: {printable(nxt.session_id or ABSENT)} at {nxt.eligible_at:%Y-%m-%d %H:%M} UTC"
        )
    if report.enqueued:
        click.echo(f"{report.enqueued} session(s) queued for extraction.")
