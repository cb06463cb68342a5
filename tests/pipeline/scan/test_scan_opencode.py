"""OpenCode sessions through the scanner: one row per session of the database, its project from its
directory (else OpenCode's worktree), only the sessions that changed read again, the quick check,
and a database that cannot be read leaving its sessions as they were."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select, update

from pipeline.clock import FakeClock
from pipeline.scan import index as scan_index
from pipeline.scan.probe import probe
from pipeline.scan.scanner import scan
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store.schema import transcripts
from tests.pipeline.sources.opencode_bombs import generated_bomb
from tests.pipeline.sources.opencode_support import (
    SAMPLE_SESSION,
    SUBAGENT_CHILD,
    SUBAGENT_PARENT,
    load_rows,
    new_session,
    opencode_settings,
    sample_db,
    user_message,
)

KEY = "settings-key-1"


def _settings(tmp_path: Path) -> Settings:
    return opencode_settings(tmp_path)


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


async def _setup(tmp_path: Path, clock: FakeClock) -> tuple[Path, Path]:
    repo = _repo(tmp_path / "work" / "app")
    (repo / "sub").mkdir()
    db = sample_db(tmp_path / "opencode")
    load_rows(db, "subagent-example.rows.json")
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_idle", str(repo / "sub"), _ms(clock.now() - timedelta(hours=9)), turns=2)
        new_session(conn, "ses_busy", str(repo), _ms(clock.now() - timedelta(minutes=30)))
    conn.close()
    return db, repo


async def test_sessions_of_the_database_are_scanned_with_agent_and_project(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    db, repo = await _setup(tmp_path, clock)
    report = await scan(store, _settings(tmp_path), clock)
    by_id = {s.session_id: s for s in report.sessions}
    assert set(by_id) == {SAMPLE_SESSION, SUBAGENT_PARENT, SUBAGENT_CHILD, "ses_idle", "ses_busy"}
    assert {s.source for s in report.sessions} == {"opencode"}
    idle = by_id["ses_idle"]
    assert (idle.path, idle.project, idle.user_messages, idle.state) == (
        f"{db}#ses_idle",
        str(repo),
        2,
        "eligible",
    ), "the directory is in the repository: git names the project"
    assert by_id["ses_busy"].state == "active"
    # Written on another machine: the directory is gone, OpenCode's worktree names the project.
    assert by_id[SAMPLE_SESSION].project == "/home/dev/ag/work/repo"
    child = by_id[SUBAGENT_CHILD]
    assert (child.state, child.reason) == (
        "skipped",
        "sub-agent session: its work is part of the parent session",
    )
    assert report.enqueued == 1
    assert report.files_parsed == 5


async def test_only_the_sessions_that_changed_are_read_again(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    db, _ = await _setup(tmp_path, clock)
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    again = await scan(store, settings, clock)
    assert (again.files_seen, again.files_parsed, again.bytes_parsed, again.changed_paths) == (5, 0, 0, set())

    # The idle session was extracted; then its user came back to it.
    async with store.write() as conn:
        await conn.execute(
            update(transcripts)
            .where(transcripts.c.path == f"{db}#ses_idle")
            .values(extracted_offset=transcripts.c.parsed_offset, state="extracted")
        )
    with sqlite3.connect(db) as conn:
        user_message(conn, "ses_idle", 5, "one more thing", _ms(clock.now() - timedelta(hours=8)))
    conn.close()
    report = await scan(store, settings, clock)
    assert report.files_parsed == 1
    assert report.changed_paths == {f"{db}#ses_idle"}
    assert report.bytes_parsed > 0
    async with store.read() as conn:
        row = (await conn.execute(select(transcripts).where(transcripts.c.path == f"{db}#ses_idle"))).one()
    assert row.user_messages == 3
    assert 0 < row.extracted_offset < row.parsed_offset, (
        "what was extracted stays extracted: only the rest is new"
    )
    assert row.state == "eligible"


async def test_the_quick_check_sees_a_write_to_one_session(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    db, _ = await _setup(tmp_path, clock)
    settings = _settings(tmp_path)
    await scan(sqlite_store, settings, clock, settings_key=KEY)
    index = scan_index.index_path(settings.paths.state_dir)
    state_db = f"sqlite:///{tmp_path}/state.db"
    found = probe(state_db, index, KEY, clock.now().timestamp())
    assert found is not None
    assert found.files_seen == 5
    with sqlite3.connect(db) as conn:  # a part added without touching session.time_updated
        conn.execute("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", (SAMPLE_SESSION,))
    conn.close()
    assert probe(state_db, index, KEY, clock.now().timestamp()) is None


async def test_a_database_that_cannot_be_read_leaves_its_sessions_as_they_were(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    db, _ = await _setup(tmp_path, clock)
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    good = db.read_bytes()
    db.write_bytes(good[:3000])  # torn
    report = await scan(store, settings, clock)
    states = {s.path: (s.state, s.reason) for s in report.sessions}
    assert states[str(db)][0] == "unreadable"
    assert "OpenCode database" in (states[str(db)][1] or "")
    assert all(state != "gone" for path, (state, _) in states.items() if "#" in path)
    db.write_bytes(good)
    healed = await scan(store, settings, clock)
    again = {s.session_id: s.state for s in healed.sessions if "#" in s.path}
    [database] = [s for s in healed.sessions if s.path == str(db)]
    assert (database.state, database.reason) == ("gone", "readable again: its sessions are listed one by one")
    assert again["ses_idle"] == "eligible"
    assert len(again) == 5


async def test_a_database_bomb_is_recorded_unreadable_and_loses_nothing_else(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    db, _ = await _setup(tmp_path, clock)
    settings = _settings(tmp_path)
    bomb = generated_bomb(tmp_path / "elsewhere", size=50_000_000).rename(db.parent / "opencode-bomb.db")
    report = await scan(store, settings, clock)
    states = {s.path: (s.state, s.reason) for s in report.sessions}
    assert states[str(bomb)] == (
        "unreadable",
        "OpenCode database: part.data is a generated column (not OpenCode's schema)",
    )
    assert {s.session_id for s in report.sessions if s.path.startswith(f"{db}#")} == {
        SAMPLE_SESSION,
        SUBAGENT_PARENT,
        SUBAGENT_CHILD,
        "ses_idle",
        "ses_busy",
    }
    assert states[f"{db}#ses_idle"][0] == "eligible"
    # The good database turned into one: its sessions stay as they were, the reason is recorded.
    generated_bomb(tmp_path / "again", size=50_000_000).replace(db)
    again = await scan(store, settings, clock)
    after = {s.path: (s.state, s.reason) for s in again.sessions}
    assert "generated column" in (after[str(db)][1] or "")
    assert after[f"{db}#ses_idle"][0] == "eligible"


async def test_a_database_removed_takes_its_sessions_with_it(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await _setup(tmp_path, clock)
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    shutil.rmtree(tmp_path / "opencode")
    (tmp_path / "opencode").mkdir()
    report = await scan(store, settings, clock)
    assert {s.state for s in report.sessions} == {"gone"}


async def test_an_opencode_session_becomes_a_redacted_extraction_request(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from pipeline.extract.item import Prepared, build, parse_full
    from pipeline.extract.request import ExtractPrompts
    from pipeline.redaction import Redactor
    from tests.pipeline.sources.opencode_support import SECRET

    db = sample_db(tmp_path / "opencode")
    settings = _settings(tmp_path)
    late = FakeClock(datetime(2026, 12, 2, 12, 0, tzinfo=clock.now().tzinfo))  # the sample is idle by then
    report = await scan(store, settings, late)
    [session] = report.sessions
    assert session.state == "eligible"
    prepared = await build(
        store,
        settings,
        str(session.id),
        prompts=ExtractPrompts.load(),
        redactor=Redactor(b"opencode-test-key-0123456789"),
        load=parse_full,
    )
    assert isinstance(prepared, Prepared), prepared
    assert (prepared.source, prepared.session_id, prepared.project) == (
        "opencode",
        SAMPLE_SESSION,
        "/home/dev/ag/work/repo",
    )
    request = json.dumps(prepared.params)
    assert "Please list the files here" in request
    assert "STUB_FINAL_TEXT" in request
    assert SECRET not in request
    assert "[REDACTED:" in request
    assert prepared.range_end == session_row_offset(report, db)


def session_row_offset(report: object, db: Path) -> int:
    """The version the scan recorded is what the extract covers (its ``range_end``)."""
    from pipeline.agents.opencode import database as opencode_db

    [(_, key, _)] = opencode_db.list_sessions(str(db))
    assert key is not None
    return key[2]
