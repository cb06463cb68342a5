"""The scan report's view of the store reads the same through sqlite3 (the quick check) and the open
store (a full scan)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update

from pipeline.clock import FakeClock
from pipeline.scan.scanner import scan
from pipeline.scan.view import ScanReport, read_view
from pipeline.store import Store
from pipeline.store.read.rows import SqliteRows, on_store
from pipeline.store.schema import transcripts
from pipeline.vocabulary import TRANSCRIPT_NOTABLE
from tests.pipeline.scan.test_scanner import SID, _session, _settings


async def test_sqlite_view_equals_the_store_layer(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    now = clock.now()
    for i in range(12):
        hours = 9 if i % 3 else 1  # a third stay active
        _session(
            tmp_path, tmp_path / f"p{i}", now - timedelta(hours=hours, minutes=i), sid=f"{i:08x}" + SID[8:]
        )
    report = await scan(sqlite_store, _settings(tmp_path), clock)
    ids = sorted(s.id for s in report.sessions)
    async with sqlite_store.write() as conn:  # other states, a missing time and a tie
        await conn.execute(update(transcripts).where(transcripts.c.id == ids[1]).values(state="failed"))
        await conn.execute(update(transcripts).where(transcripts.c.id == ids[2]).values(state="unreadable"))
        await conn.execute(update(transcripts).where(transcripts.c.id == ids[4]).values(last_activity=None))
        tie = datetime(2026, 10, 31, 23, 0, tzinfo=UTC)
        await conn.execute(
            update(transcripts).where(transcripts.c.id.in_(ids[5:8])).values(last_activity=tie)
        )

    view, full = ScanReport(sessions=[]), ScanReport(sessions=[])
    rows = SqliteRows(tmp_path / "state.db")
    try:
        read_view(rows, view, notable_limit=5, collect_sessions=True, machine=sqlite_store.machine)
    finally:
        rows.close()
    await on_store(
        sqlite_store,
        lambda rows: read_view(
            rows, full, notable_limit=5, collect_sessions=True, machine=sqlite_store.machine
        ),
    )
    assert view.by_source == full.by_source
    assert view.next_idle_session == full.next_idle_session
    assert view.next_idle_session is not None
    assert view.sessions == full.sessions
    assert len(view.sessions) == 12
    assert view.sessions[-1].last_activity is None
    tied = [s.id for s in view.sessions if s.last_activity == tie]
    assert tied == sorted(ids[5:8], reverse=True)  # a tie: the newest row first
    assert view.notable_sessions == full.notable_sessions
    assert len(view.notable_sessions) == 5
    assert {s.state for s in view.notable_sessions} <= set(TRANSCRIPT_NOTABLE)
