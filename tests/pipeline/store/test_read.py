"""The read model: the fast paths and the store layer read the same rows the same way, and classify
every state and outcome of the vocabulary alike."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert

from pipeline.clock import FakeClock, parse_time
from pipeline.machine import UNNAMED
from pipeline.scan.view import ScanReport, read_view
from pipeline.store import Store, consolidation
from pipeline.store.read import sessions as read_sessions
from pipeline.store.read.rows import SqliteRows, on_store
from pipeline.store.read.sessions import generation_of, record_from_row
from pipeline.store.schema import transcripts
from pipeline.vocabulary import TRANSCRIPT_FAILED, TRANSCRIPT_NOTABLE, RunOutcome, TranscriptState
from tests.pipeline.status.test_read import read_report


@pytest.mark.parametrize("outcome", list(RunOutcome))
async def test_memd_status_and_the_store_layer_agree_whether_a_run_failed(
    store: Store, clock: FakeClock, tmp_path: Path, outcome: RunOutcome
) -> None:
    now = clock.now()
    await consolidation.start_run(store, run_id="r1", scope="global", mode="auto", now=now, inputs={})
    await consolidation.finish_run(store, "r1", outcome=outcome, now=now, reason=f"it ended {outcome}")
    [run] = await consolidation.list_runs(store)
    listed = [f["run"] for f in (await read_report(store, clock, tmp_path))["phase2"]["failures"]]
    assert run.outcome == outcome
    assert listed == (["r1"] if run.failed else [])
    # And the classification is the one meant: only a failed or crashed run is a failure.
    assert run.failed is (outcome in (RunOutcome.FAILED, RunOutcome.CRASHED))


async def _one_session_per_state(store: Store, now: datetime) -> None:
    async with store.write() as conn:
        for n, state in enumerate(TranscriptState):
            await conn.execute(
                insert(transcripts).values(
                    machine=UNNAMED,
                    source="claude_code",
                    path=f"/t/{state}.jsonl",
                    session_id=f"s-{state}",
                    project="/home/dev/shop",
                    state=state,
                    reason=f"the session is {state}",
                    last_activity=now - timedelta(hours=n + 1),
                    eligible_at=now + timedelta(hours=1) if state == TranscriptState.ACTIVE else None,
                    first_seen_at=now,
                    updated_at=now - timedelta(minutes=n),
                )
            )


async def test_memd_status_and_the_store_layer_classify_every_transcript_state_alike(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await _one_session_per_state(store, clock.now())
    report = await read_report(store, clock, tmp_path)
    counts = await on_store(store, lambda rows: read_sessions.state_counts(rows, store.machine))
    assert report["transcripts"]["by_source"] == counts
    assert report["transcripts"]["by_state"] == {state.value: 1 for state in sorted(TranscriptState)}
    failed = await on_store(
        store, lambda rows: read_sessions.sessions(rows, store.machine, states=TRANSCRIPT_FAILED)
    )
    assert {f["state"] for f in report["transcripts"]["failures"]} == {s.state for s in failed}
    assert {s.state for s in failed} == {TranscriptState.FAILED, TranscriptState.UNREADABLE}
    # Phase 1's failures are the sessions it failed, not the ones no one could read.
    phase1 = {f["session_id"] for f in report["phase1"]["failures"]}
    assert phase1 == {f"s-{TranscriptState.FAILED}"}
    nxt = await on_store(store, lambda rows: read_sessions.next_idle(rows, store.machine))
    assert nxt is not None
    assert report["transcripts"]["next_idle"]["session_id"] == nxt.session_id == f"s-{TranscriptState.ACTIVE}"


async def test_memd_scans_quick_check_and_a_full_scan_list_the_same_notable_sessions(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await _one_session_per_state(sqlite_store, clock.now())
    quick, full = ScanReport(sessions=[]), ScanReport(sessions=[])
    rows = SqliteRows(tmp_path / "state.db")  # the quick check's reader
    try:
        read_view(rows, quick, notable_limit=50, collect_sessions=True, machine=sqlite_store.machine)
    finally:
        rows.close()
    await on_store(  # a full scan's, on the open store
        sqlite_store,
        lambda rows: read_view(
            rows, full, notable_limit=50, collect_sessions=True, machine=sqlite_store.machine
        ),
    )
    assert quick.notable_sessions == full.notable_sessions
    assert {s.state for s in quick.notable_sessions} == set(TRANSCRIPT_NOTABLE)
    assert quick.sessions == full.sessions
    assert len(quick.sessions) == len(TranscriptState)
    assert quick.next_idle_session == full.next_idle_session
    assert quick.next_idle_session is not None


def test_record_from_row_reads_either_backend() -> None:
    sqlite_row = {
        "id": 3,
        "source": "codex",
        "path": "/p",
        "session_id": "s",
        "project": None,
        "user_messages": None,
        "last_activity": "2026-11-01 12:00:00.000000",
        "flags": '{"subagent": true}',
        "external_context": '["mcp:x/y"]',
        "state": "eligible",
        "reason": None,
        "eligible_at": None,
    }
    at = datetime(2026, 11, 1, 12, tzinfo=UTC)
    pg_row = {**sqlite_row, "last_activity": at, "flags": {"subagent": True}, "external_context": ["mcp:x/y"]}
    a, b = record_from_row(sqlite_row), record_from_row(pg_row)
    assert a == b
    assert (a.last_activity, a.subagent, a.external_context, a.user_messages) == (at, True, ("mcp:x/y",), 0)


def test_generation_of_reads_either_backend() -> None:
    assert generation_of((0, None, None)) == (0, 0, "")
    assert generation_of((3, 9, "2026-11-01 12:00:00.000000")) == (3, 9, "2026-11-01 12:00:00.000000")
    at = datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert generation_of((3, 9, at)) == (3, 9, at.isoformat())


def test_parse_time_gives_aware_utc() -> None:
    at = datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert parse_time("2026-11-01 12:00:00.000000") == at
    assert parse_time("2026-11-01T13:00:00+01:00") == at
    assert parse_time(at.replace(tzinfo=None)) == at
    assert parse_time("") is None
    assert parse_time("not a time") is None


async def _two_extracts(store: Store, now: datetime) -> int:
    from pipeline.store.schema import stage1_outputs

    row = {
        "source": "claude_code",
        "session_id": "s-sent",
        "project": "/home/dev/shop",
        "scope": "projects/shop-1a2b3c4d",
        "range_start": 0,
        "range_end": 10,
        "rollout_slug": "slug",
        "raw_memory": "- notes",
        "model": "claude-haiku-5-5",
        "usage": {},
        "created_at": now,
    }
    async with store.write() as conn:
        tid = (
            await conn.execute(
                insert(transcripts)
                .values(
                    machine=UNNAMED,
                    source="claude_code",
                    path="/t/sent.jsonl",
                    session_id="s-sent",
                    state="extracted",
                    first_seen_at=now,
                    updated_at=now,
                )
                .returning(transcripts.c.id)
            )
        ).scalar_one()
        await conn.execute(
            insert(stage1_outputs),
            [
                {
                    **row,
                    "transcript_id": tid,
                    "rollout_summary": "first part",
                    "memories": [],
                    "redactions": {"api-key": 1},  # a store from before input and output were told apart
                    "superseded_by": 2,
                    "items_start": 0,
                    "items_end": 4,
                },
                {
                    **row,
                    "transcript_id": tid,
                    "rollout_summary": "the whole session",
                    "memories": [{"name": "m", "body": "b"}],
                    "redactions": {
                        "input": {"github-token": 2, "aws-access-key": 0},
                        "output": {"github-token": 1},
                    },
                    "items_start": 4,
                    "items_end": 9,
                    "superseded_by": None,
                },
            ],
        )
    return int(tid)


async def test_a_sessions_sent_extracts_read_the_same_through_either_reader(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from pipeline.store import stage1
    from pipeline.store.read.extracts import SESSION_SENT_SQL, sent_from_row

    tid = await _two_extracts(store, clock.now())
    params = {"session_id": "s-sent", "limit": 10}
    found = await on_store(store, lambda rows: [sent_from_row(r) for r in rows.all(SESSION_SENT_SQL, params)])
    newest, oldest = found
    assert (newest.summary, oldest.summary) == ("the whole session", "first part")
    assert newest.live
    assert not oldest.live
    assert newest.redacted_in == {"github-token": 2}
    assert newest.redacted_out == {"github-token": 1}
    assert (oldest.redacted_in, oldest.redacted_out) == ({"api-key": 1}, {})
    assert newest.memories == ({"name": "m", "body": "b"},)
    assert (newest.items_start, newest.items_end, newest.created_at) == (4, 9, clock.now())
    # The store layer's rows are the same extracts.
    layer = await stage1.outputs_for(store, tid)
    assert [(r.id, r.rollout_summary, r.superseded_by) for r in reversed(layer)] == [
        (f.id, f.summary, f.superseded_by) for f in found
    ]
    if store.dialect == "sqlite":
        conn = sqlite3.connect(tmp_path / "state.db")
        conn.row_factory = sqlite3.Row
        try:
            fast = [sent_from_row(r) for r in conn.execute(SESSION_SENT_SQL, params).fetchall()]
        finally:
            conn.close()
        assert fast == found
