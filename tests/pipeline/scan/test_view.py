"""The scan report's view of the store, read with sqlite3, matches the store layer's."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update

from pipeline.clock import FakeClock
from pipeline.scan.scanner import scan
from pipeline.scan.view import ScanReport, read_sqlite
from pipeline.store import Store
from pipeline.store import transcripts as transcripts_store
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

    view = ScanReport(sessions=[])
    conn = sqlite3.connect(tmp_path / "state.db")
    try:
        read_sqlite(conn, view, notable_limit=5, collect_sessions=True)
    finally:
        conn.close()
    assert view.by_source == await transcripts_store.state_counts(sqlite_store)
    assert view.next_idle_session == await transcripts_store.next_idle(sqlite_store)
    assert view.next_idle_session is not None
    assert view.sessions == await transcripts_store.sessions(sqlite_store)
    assert len(view.sessions) == 12
    assert view.sessions[-1].last_activity is None
    notable = await transcripts_store.sessions(sqlite_store, states=TRANSCRIPT_NOTABLE, limit=5)
    assert view.notable_sessions == notable
    assert len(notable) == 5
    assert {s.state for s in notable} <= set(TRANSCRIPT_NOTABLE)
