"""The quick check behind `memd scan`: it says "unchanged" exactly when a full scan would do nothing."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from pipeline.clock import FakeClock
from pipeline.scan import index as scan_index
from pipeline.scan.probe import Unchanged, probe
from pipeline.scan.scanner import scan
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store.schema import transcripts
from tests.pipeline.scan.test_scanner import SID, _session, _settings, _user

KEY = "settings-key-1"


def _probe(tmp_path: Path, settings: Settings, clock: FakeClock, key: str = KEY) -> Unchanged | None:
    index = scan_index.index_path(settings.paths.state_dir)
    return probe(f"sqlite:///{tmp_path}/state.db", index, key, clock.now().timestamp())


async def _two_sessions(tmp_path: Path, store: Store, clock: FakeClock) -> tuple[Settings, Path, Path]:
    settings = _settings(tmp_path)
    idle = _session(tmp_path, tmp_path / "a", clock.now() - timedelta(hours=9))
    active = _session(tmp_path, tmp_path / "b", clock.now() - timedelta(hours=1), sid="b" * 8 + SID[8:])
    await scan(store, settings, clock, settings_key=KEY)
    return settings, idle, active


async def test_unchanged_after_a_scan_under_the_same_settings(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings, _, _ = await _two_sessions(tmp_path, sqlite_store, clock)
    found = _probe(tmp_path, settings, clock)
    assert found is not None
    assert found.files_seen == 2
    # ... and a full scan agrees: nothing to parse, judge again or enqueue.
    report = await scan(sqlite_store, settings, clock, settings_key=KEY)
    assert (report.files_parsed, report.enqueued, report.changed_paths) == (0, 0, set())


async def test_other_settings_or_no_key_mean_a_full_scan(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings, _, _ = await _two_sessions(tmp_path, sqlite_store, clock)
    assert _probe(tmp_path, settings, clock, key="other-settings") is None
    assert _probe(tmp_path, settings, clock, key="") is None
    # A scan that knows no key and changed nothing keeps the key; one that changed rows drops it.
    await scan(sqlite_store, settings, clock)
    assert _probe(tmp_path, settings, clock) is not None
    _session(tmp_path, tmp_path / "c", clock.now() - timedelta(hours=9), sid="c" * 8 + SID[8:])
    await scan(sqlite_store, settings, clock)
    assert _probe(tmp_path, settings, clock) is None
    await scan(sqlite_store, settings, clock, settings_key=KEY)
    assert _probe(tmp_path, settings, clock) is not None


@pytest.mark.parametrize("change", ["append", "new", "delete", "replace", "touch"])
async def test_any_change_to_the_files_means_a_full_scan(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path, change: str
) -> None:
    settings, idle, _ = await _two_sessions(tmp_path, sqlite_store, clock)
    if change == "append":
        with idle.open("a") as f:
            f.write(_user(SID, str(tmp_path / "a"), "one more", clock.now() - timedelta(hours=8), 9) + "\n")
    elif change == "new":
        _session(tmp_path, tmp_path / "d", clock.now() - timedelta(hours=9), sid="d" * 8 + SID[8:])
    elif change == "delete":
        idle.unlink()
    elif change == "replace":
        text = idle.read_text()
        idle.unlink()
        idle.write_text(text)  # same size and content, another inode
    else:
        st = idle.stat()
        os.utime(idle, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert _probe(tmp_path, settings, clock) is None
    report = await scan(sqlite_store, settings, clock, settings_key=KEY)
    assert report.changed_paths  # the full scan did have something to record
    assert _probe(tmp_path, settings, clock) is not None


async def test_a_session_whose_idle_time_has_come_means_a_full_scan(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings, _, active = await _two_sessions(tmp_path, sqlite_store, clock)
    clock.advance(timedelta(hours=4))
    assert _probe(tmp_path, settings, clock) is not None  # still active: nothing moved
    clock.advance(timedelta(hours=2))
    assert _probe(tmp_path, settings, clock) is None
    report = await scan(sqlite_store, settings, clock, settings_key=KEY)
    assert report.changed_paths == {str(active)}
    assert report.enqueued == 1


async def test_a_store_changed_behind_the_index_means_a_full_scan(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings, _, _ = await _two_sessions(tmp_path, sqlite_store, clock)
    async with sqlite_store.write() as conn:
        await conn.execute(update(transcripts).values(updated_at=clock.now() + timedelta(seconds=1)))
    assert _probe(tmp_path, settings, clock) is None


async def test_a_file_that_comes_back_is_seen_again(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings, idle, _ = await _two_sessions(tmp_path, sqlite_store, clock)
    moved = tmp_path / "elsewhere.jsonl"
    os.rename(idle, moved)
    report = await scan(sqlite_store, settings, clock, settings_key=KEY)
    assert {s.state for s in report.sessions if s.path == str(idle)} == {"gone"}
    os.rename(moved, idle)  # same inode, size and mtime as before it went
    assert _probe(tmp_path, settings, clock) is None
    report = await scan(sqlite_store, settings, clock, settings_key=KEY)
    assert {s.state for s in report.sessions if s.path == str(idle)} == {"eligible"}


async def test_a_missing_or_foreign_index_or_store_means_a_full_scan(
    sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings, _, _ = await _two_sessions(tmp_path, sqlite_store, clock)
    index = scan_index.index_path(settings.paths.state_dir)
    now = clock.now().timestamp()
    assert probe("postgresql://localhost/test", index, KEY, now) is None
    assert probe(f"sqlite:///{tmp_path}/absent.db", index, KEY, now) is None
    index.write_bytes(b"garbage")
    assert probe(f"sqlite:///{tmp_path}/state.db", index, KEY, now) is None
    index.unlink()
    assert probe(f"sqlite:///{tmp_path}/state.db", index, KEY, now) is None
