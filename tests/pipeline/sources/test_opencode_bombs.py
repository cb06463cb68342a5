"""OpenCode databases built to exhaust the reader: no database makes memd hold more than its caps.

The schema bombs are read in a child process (an address-space limit keeps a regression from taking
the machine down) whose peak resident memory is compared with its own before the read: a bound,
not a timing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.agents.opencode import database as opencode_db
from pipeline.agents.opencode.transcripts import ROW_MAX_BYTES, OpenCodeAdapter
from pipeline.transcript import UserMessage
from tests.pipeline.sources import opencode_bombs
from tests.pipeline.sources.opencode_support import SAMPLE_SESSION, new_session, sample_db

ROOT = Path(__file__).resolve().parents[3]
GROWTH_BOUND_MB = 200
adapter = OpenCodeAdapter()

CHILD = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from pipeline.agents.opencode import database as opencode_db
from pipeline.agents.opencode.transcripts import OpenCodeAdapter
adapter = OpenCodeAdapter()
root = Path(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
walked = adapter.walk(root)
result = adapter.parse(Path(opencode_db.session_path(str(root / "opencode.db"), sys.argv[2])))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("RESULT " + json.dumps({
    "growth_mb": (after - before) / 1024,
    "walked": [[path, error] for path, _, error in walked],
    "problem": None if result.problem is None else str(result.problem),
}))
"""


def read_in_child(root: Path) -> dict[str, object]:
    """Walk ``root`` and read the sample session in a fresh process; what it found and how much its
    peak resident memory grew doing so."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), SAMPLE_SESSION],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,  # a guard against a hang, never a measurement
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    found: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return found


BOMBS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "virtual-generated-zeroblob": (opencode_bombs.generated_bomb, "part.data is a generated column"),
    "stored-generated": (opencode_bombs.stored_generated, "part.data is a generated column"),
    "view-part": (lambda f: opencode_bombs.view_in_place(f, "part"), "part is a view"),
    "view-message": (lambda f: opencode_bombs.view_in_place(f, "message"), "message is a view"),
    "view-session": (lambda f: opencode_bombs.view_in_place(f, "session"), "session is a view"),
    "view-project": (lambda f: opencode_bombs.view_in_place(f, "project"), "project is a view"),
    "endless-view-project": (
        lambda f: opencode_bombs.view_in_place(f, "project", endless=True),
        "project is a view",
    ),
    "virtual-table-part": (opencode_bombs.virtual_part, "part is a virtual table"),
}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_a_database_built_to_exhaust_the_reader_is_refused_with_its_reason(tmp_path: Path, bomb: str) -> None:
    build, reason = BOMBS[bomb]
    folder = tmp_path / "opencode"
    db = build(folder)
    assert db.stat().st_size < 1_000_000  # the bomb is in the schema, not the file
    found = read_in_child(folder)
    assert found["growth_mb"] < GROWTH_BOUND_MB, found  # type: ignore[operator]
    assert found["walked"] == [[str(db), f"OpenCode database: {reason} (not OpenCode's schema)"]], found
    assert reason in str(found["problem"]), found


def test_the_issues_bomb_is_refused_without_reading_a_row_and_a_good_database_beside_it_is_read(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    opencode_bombs.generated_bomb(tmp_path / "bomb").rename(folder / "opencode-bomb.db")
    good = sample_db(folder)
    walked = adapter.walk(folder)
    by_path = {path: error for path, _, error in walked}
    assert "generated column" in str(by_path[str(folder / "opencode-bomb.db")])
    assert by_path[opencode_db.session_path(str(good), SAMPLE_SESSION)] is None
    result = adapter.parse(Path(opencode_db.session_path(str(good), SAMPLE_SESSION)))
    assert result.ok, result.problem


def test_a_real_row_over_the_cap_is_skipped_without_being_fetched(tmp_path: Path) -> None:
    db = opencode_bombs.huge_row(tmp_path, 3 * ROW_MAX_BYTES)
    path = Path(opencode_db.session_path(str(db), SAMPLE_SESSION))
    tracemalloc.start()
    try:
        result = adapter.parse(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < ROW_MAX_BYTES  # the row never became a Python value
    assert result.ok, result.problem
    assert result.transcript is not None
    assert result.transcript.parse_errors.count == 1
    assert "over" in str(result.transcript.parse_errors.first)
    assert any(isinstance(i, UserMessage) for i in result.transcript.items)  # the rest is read


def test_a_database_file_over_its_cap_is_not_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = sample_db(tmp_path)
    monkeypatch.setattr(opencode_db, "DATABASE_MAX_BYTES", db.stat().st_size - 1)
    [(path, key, error)] = adapter.walk(tmp_path)
    assert (path, key) == (str(db), None)
    assert f"over {db.stat().st_size - 1} bytes" in str(error)
    assert not adapter.parse(Path(opencode_db.session_path(str(db), SAMPLE_SESSION))).ok


def test_a_read_past_its_deadline_stops_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sample_db(tmp_path)
    monkeypatch.setattr(opencode_db, "READ_DEADLINE_S", 0.0)
    [(_, key, error)] = adapter.walk(tmp_path)
    assert key is None
    assert "took over 0 s" in str(error)
    result = adapter.parse(Path(opencode_db.session_path(str(db), SAMPLE_SESSION)))
    assert "took over 0 s" in str(result.problem)
    assert not result.retryable
    monkeypatch.setattr(opencode_db, "READ_DEADLINE_S", 30.0)
    assert adapter.walk(tmp_path) == [(str(db), None, error)], "not listed again while it is unchanged"
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_other", "/nowhere", 1_700_000_000_000)
    conn.close()
    assert [e for _, _, e in adapter.walk(tmp_path)] == [None, None], "changed: listed again"


def test_more_sessions_or_rows_than_the_caps_are_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sample_db(tmp_path)
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_other", "/nowhere", 1_700_000_000_000, turns=3)
    conn.close()
    monkeypatch.setattr(opencode_db, "MAX_SESSIONS", 1)
    [(_, _, error)] = adapter.walk(tmp_path)
    assert "over 1 sessions" in str(error)
    monkeypatch.setattr(opencode_db, "MAX_SESSIONS", 10)
    assert len(adapter.walk(tmp_path)) == 2
    monkeypatch.setattr(opencode_db, "MAX_ROWS", 2)
    result = adapter.parse(Path(opencode_db.session_path(str(db), "ses_other")))
    assert "over 2 rows" in str(result.problem)
    assert not result.retryable


def test_a_session_over_its_byte_budget_stops_at_the_row_that_crosses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.agents.opencode import transcripts as opencode

    db = sample_db(tmp_path)
    monkeypatch.setattr(opencode, "SESSION_MAX_BYTES", 100)
    result = adapter.parse(Path(opencode_db.session_path(str(db), SAMPLE_SESSION)))
    assert result.problem is not None
    assert "the session holds over 100 bytes" in result.problem.reason
    assert not result.retryable
