"""OpenCode: sessions read from the real database the CLI wrote (and its sub-agent and compaction
runs), read-only with the WAL, while another connection writes, and hostile databases."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from pipeline.agents.opencode import database as opencode_db
from pipeline.agents.opencode.transcripts import OpenCodeAdapter
from pipeline.transcript import AssistantText, ToolCall, ToolResult, UserMessage
from tests.pipeline.sources.opencode_support import (
    COMPACTED,
    SAMPLE_SESSION,
    SECRET,
    SUBAGENT_CHILD,
    SUBAGENT_PARENT,
    bump,
    load_rows,
    new_session,
    sample_db,
    user_message,
)

adapter = OpenCodeAdapter()


def _path(db: Path, session: str) -> Path:
    return Path(opencode_db.session_path(str(db), session))


def _files(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_the_sample_session_reads_as_the_cli_wrote_it(tmp_path: Path) -> None:
    db = sample_db(tmp_path / "opencode")
    (walked,) = adapter.walk(tmp_path / "opencode")
    assert walked[0] == f"{db}#{SAMPLE_SESSION}"
    assert walked[2] is None
    result = adapter.parse(Path(walked[0]))
    assert result.ok, result.problem
    t = result.transcript
    assert t is not None
    assert (t.session_id, t.cwd, t.root) == (
        SAMPLE_SESSION,
        "/home/dev/ag/work/repo/sub",
        "/home/dev/ag/work/repo",
    )
    assert (t.user_message_count, t.agent_version, t.subagent, t.compacted) == (1, "1.18.33", False, False)
    assert t.started_at is not None
    assert t.last_activity is not None
    assert t.started_at < t.last_activity
    kinds = [type(i) for i in t.items]
    assert kinds == [UserMessage, AssistantText, ToolCall, ToolResult, AssistantText]
    first = t.items[0]
    assert isinstance(first, UserMessage)
    assert SECRET in first.text
    call = t.items[2]
    assert isinstance(call, ToolCall)
    assert (call.name, call.essential_arg) == ("bash", "ls")
    assert result.new_offset == walked[1][2], "the offset is the version the walk saw"
    assert result.bytes_read
    assert result.bytes_read > 500
    assert _files(tmp_path / "opencode") == ["opencode.db"], "reading left no file behind"


def test_a_sub_agent_is_its_own_session_marked_with_its_parent(tmp_path: Path) -> None:
    db = sample_db(tmp_path)
    load_rows(db, "subagent-example.rows.json")
    child = adapter.parse(_path(db, SUBAGENT_CHILD)).transcript
    parent = adapter.parse(_path(db, SUBAGENT_PARENT)).transcript
    assert child is not None
    assert parent is not None
    assert (child.subagent, child.parent_session_id) == (True, SUBAGENT_PARENT)
    assert parent.subagent is False
    task = next(i for i in parent.items if isinstance(i, ToolCall) and i.name == "task")
    result = next(i for i in parent.items if isinstance(i, ToolResult) and i.call_id == task.call_id)
    assert "<task_result>" in result.text, "the sub-agent's answer is part of the parent's work"


def test_compaction_marks_the_session_and_keeps_the_summary_and_the_continue_out(tmp_path: Path) -> None:
    db = sample_db(tmp_path)
    load_rows(db, "compaction-example.rows.json")
    t = adapter.parse(_path(db, COMPACTED)).transcript
    assert t is not None
    assert t.compacted
    users = [i.text for i in t.items if isinstance(i, UserMessage)]
    assert len(users) == 1
    assert users[0].startswith('"Compaction test')
    assert t.user_message_count == 1
    assert not any("Continue if you have next steps" in i.text for i in t.items if isinstance(i, UserMessage))
    texts = [i.text for i in t.items if isinstance(i, AssistantText)]
    assert texts.count("I'll list the files first.") == 2, "the work before and after the compaction"


def test_a_nested_agents_md_appended_to_a_read_result_is_stripped(tmp_path: Path) -> None:
    import json

    from tests.pipeline.sources.opencode_support import FIXTURES, insert

    db = sample_db(tmp_path)
    (part,) = json.loads((FIXTURES / "nested-AGENTS-read-tool-part.json").read_text())
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_nested", "/home/dev/ag/work/repo", 1796099236000)
        message = "msg_nested_a"
        insert(
            conn,
            "message",
            {
                "id": message,
                "session_id": "ses_nested",
                "time_created": 1796099236100,
                "time_updated": 1796099236200,
                "data": {"role": "assistant", "time": {"created": 1796099236100, "completed": 1796099236200}},
            },
        )
        insert(conn, "part", {**part, "message_id": message, "session_id": "ses_nested"})
    conn.close()
    t = adapter.parse(_path(db, "ses_nested")).transcript
    assert t is not None
    (out,) = [i for i in t.items if isinstance(i, ToolResult)]
    assert "secret notes" in out.text
    assert "MK_O_AGENTS" not in out.text
    assert "Instructions from" not in out.text


def test_rows_in_the_wal_are_read_while_another_connection_writes_and_nothing_waits(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    db = sample_db(folder)
    writer = sqlite3.connect(db, isolation_level=None, timeout=0)  # a writer that never waits
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # OpenCode's newest rows stay in the -wal
    new_session(writer, "ses_live", "/home/dev/ag/work/repo", 1796100000000, turns=2)
    assert (folder / "opencode.db-wal").stat().st_size > 0
    before = _files(folder)
    assert before == ["opencode.db", "opencode.db-shm", "opencode.db-wal"]

    walked = dict((p, k) for p, k, _ in adapter.walk(folder))
    assert f"{db}#ses_live" in walked
    first = adapter.parse(_path(db, "ses_live"))
    assert first.transcript is not None
    assert first.transcript.user_message_count == 2

    # The writer goes on, inside a transaction, while memd reads: memd sees the last commit and
    # the writer's commit never waits on memd's reader.
    writer.execute("BEGIN IMMEDIATE")
    user_message(writer, "ses_live", 7, "a third request", 1796100000100)
    during = adapter.parse(_path(db, "ses_live"), first.new_offset, first.state)
    assert during.transcript is not None
    assert during.transcript.user_message_count == 2
    stop = threading.Event()

    def keep_reading() -> None:
        while not stop.is_set():
            adapter.parse(_path(db, "ses_live"))

    reader = threading.Thread(target=keep_reading)
    reader.start()
    try:
        time.sleep(0.05)
        writer.execute("COMMIT")  # timeout=0: a reader holding it up would raise "database is locked"
        for n in range(8, 12):
            user_message(writer, "ses_live", n, f"request {n}", 1796100000200 + n)
    finally:
        stop.set()
        reader.join()
    after = adapter.parse(_path(db, "ses_live"), first.new_offset, first.state)
    assert after.transcript is not None
    assert after.transcript.user_message_count == 7
    assert after.new_offset > first.new_offset
    assert after.restarted is False
    assert dict((p, k) for p, k, _ in adapter.walk(folder))[f"{db}#ses_live"] != walked[f"{db}#ses_live"]
    writer.close()
    assert _files(folder) == ["opencode.db"], "the writer, closing last, checkpointed: memd kept nothing open"


def test_a_database_without_a_wal_is_read_without_creating_one(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    db = sample_db(folder)
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_plain", "/home/dev/ag/work/repo", 1796100000000)
    conn.close()
    assert _files(folder) == ["opencode.db"]
    assert {p for p, _, _ in adapter.walk(folder)} == {f"{db}#{SAMPLE_SESSION}", f"{db}#ses_plain"}
    assert adapter.parse(_path(db, "ses_plain")).ok
    assert _files(folder) == ["opencode.db"], "mode=ro alone would have left a -wal and a -shm here"


def test_a_database_that_changes_during_a_wal_less_read_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sample_db(tmp_path)
    calls = {"n": 0}
    real_connect = opencode_db._connect

    def connect_then_write(real: str) -> tuple[sqlite3.Connection, object]:
        conn, guard = real_connect(real)
        calls["n"] += 1
        if calls["n"] == 1:  # a writer commits (rollback mode: in the main file) right after memd opened
            with sqlite3.connect(db) as w:
                new_session(w, "ses_racer", "/x", 1796100000000)
            w.close()
        return conn, guard

    monkeypatch.setattr(opencode_db, "_connect", connect_then_write)
    result = adapter.parse(_path(db, "ses_racer"))
    assert calls["n"] == 2, "the first read was thrown away: the file changed under it"
    assert result.ok
    assert result.transcript is not None
    assert result.transcript.session_id == "ses_racer"


def test_the_prefix_check_says_when_earlier_messages_went(tmp_path: Path) -> None:
    db = sample_db(tmp_path)
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_undo", "/x", 1796100000000, turns=3)
    conn.close()
    first = adapter.parse(_path(db, "ses_undo"), with_items=False)
    with sqlite3.connect(db) as conn:
        user_message(conn, "ses_undo", 5, "more", 1796100001000)
    conn.close()
    grown = adapter.parse(_path(db, "ses_undo"), first.new_offset, first.state, with_items=False)
    assert grown.ok
    assert grown.restarted is False
    with sqlite3.connect(db) as conn:  # /undo: OpenCode deletes the reverted messages
        conn.execute("DELETE FROM message WHERE session_id = 'ses_undo' AND id LIKE '%0001%'")
        bump(conn, "ses_undo")
    conn.close()
    undone = adapter.parse(_path(db, "ses_undo"), grown.new_offset, grown.state, with_items=False)
    assert undone.ok
    assert undone.restarted is True


# -- hostile databases ---------------------------------------------------------------------------


def _walk_error(folder: Path) -> str:
    (entry,) = adapter.walk(folder)
    assert entry[1] is None
    assert entry[2] is not None
    return entry[2]


def test_a_truncated_database_is_unreadable_with_its_reason(tmp_path: Path) -> None:
    db = sample_db(tmp_path)
    db.write_bytes(db.read_bytes()[:5000])
    assert "OpenCode database" in _walk_error(tmp_path)
    result = adapter.parse(_path(db, SAMPLE_SESSION))
    assert result.problem is not None
    assert not result.retryable


def test_a_database_that_is_not_opencodes_is_named(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "opencode.db") as conn:
        conn.execute("CREATE TABLE notes (x)")
    conn.close()
    assert "not an OpenCode database (no message, part, session table)" in _walk_error(tmp_path)
    (tmp_path / "opencode.db").write_bytes(b"hello, not sqlite at all" * 100)
    assert "not a readable SQLite database" in _walk_error(tmp_path)


@pytest.mark.timeout(15)
def test_a_locked_database_waits_briefly_and_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    db = sample_db(folder)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("SELECT count(*) FROM session").fetchone()  # the -wal and -shm exist now
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    new_session(holder, "ses_held", "/x", 1796100000000)
    try:
        reason = _walk_error(folder)
        assert "locked" in reason
        result = adapter.parse(_path(db, SAMPLE_SESSION))
        assert result.retryable, result.problem
    finally:
        holder.execute("COMMIT")
        holder.close()


@pytest.mark.timeout(10)
@pytest.mark.parametrize("what", ["fifo", "symlink-to-fifo", "wal-fifo", "dev-zero", "directory"])
def test_a_fifo_device_or_folder_in_place_of_the_database_fails_promptly(tmp_path: Path, what: str) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    db = folder / "opencode.db"
    if what == "fifo":
        os.mkfifo(db)
    elif what == "symlink-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        db.symlink_to(tmp_path / "pipe")
    elif what == "wal-fifo":
        sample_db(folder)
        os.mkfifo(folder / "opencode.db-wal")
    elif what == "dev-zero":
        db.symlink_to("/dev/zero")
    else:
        db.mkdir()
    reason = _walk_error(folder)
    assert "not a regular file" in reason
    assert not adapter.parse(_path(db, SAMPLE_SESSION)).ok


def test_a_symlink_to_a_regular_database_is_read_where_it_points(tmp_path: Path) -> None:
    real = sample_db(tmp_path / "elsewhere")
    folder = tmp_path / "opencode"
    folder.mkdir()
    (folder / "opencode.db").symlink_to(real)
    (path, key, error) = adapter.walk(folder)[0]
    assert error is None
    assert path == f"{folder / 'opencode.db'}#{SAMPLE_SESSION}"
    assert adapter.parse(Path(path)).ok


def test_a_wal_without_its_index_waits_rather_than_create_one(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    db = sample_db(folder)
    (folder / "opencode.db-wal").write_bytes(b"")
    result = adapter.parse(_path(db, SAMPLE_SESSION))
    assert result.retryable
    assert "no index (-shm)" in str(result.problem)
    assert _files(folder) == ["opencode.db", "opencode.db-wal"]


def test_a_session_gone_from_the_database_is_waited_for(tmp_path: Path) -> None:
    db = sample_db(tmp_path)
    result = adapter.parse(_path(db, "ses_never"))
    assert result.retryable
    assert "no longer in the OpenCode database" in str(result.problem)
    assert not adapter.parse(tmp_path / "not-a-session-path").ok


READ_IN_READ_ONLY_MOUNT = """
import sys
from pathlib import Path
from pipeline.agents.opencode.transcripts import OpenCodeAdapter
a = OpenCodeAdapter()
walked = a.walk(Path(sys.argv[1]))
bad = [w for w in walked if w[2] is not None]
ok = [a.parse(Path(p)).ok for p, _, _ in walked]
print(len(walked), len(bad), all(ok), [w[2] for w in bad])
"""


def _in_read_only_mount(folder: Path) -> str:
    """What the adapter reads of ``folder`` bound read-only, as the service's sandbox has it (a
    private mount namespace: root only)."""
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and unshare(1)")
    script = f"mount --bind -o ro '{folder}' '{folder}' && exec '{sys.executable}' -c \"$0\" '{folder}'"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, READ_IN_READ_ONLY_MOUNT],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[3],
    )
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(f"no private read-only mount here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_read_only_folder_is_read_with_and_without_a_wal(tmp_path: Path) -> None:
    import subprocess
    import sys

    folder = tmp_path / "opencode"
    db = sample_db(folder)
    assert _in_read_only_mount(folder) == "1 0 True []"
    # A writer that died with its newest rows in the -wal (and the -shm beside it).
    writer = (
        "import sqlite3, os, sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from tests.pipeline.sources.opencode_support import new_session\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode = WAL'); c.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "new_session(c, 'ses_in_wal', '/x', 1796100000000, turns=2)\n"
        "os._exit(0)\n"
    )
    subprocess.run(
        [sys.executable, "-c", writer, str(db), str(Path(__file__).resolve().parents[3])], check=True
    )
    assert _files(folder) == ["opencode.db", "opencode.db-shm", "opencode.db-wal"]
    assert _in_read_only_mount(folder) == "2 0 True []"
    assert _files(folder) == ["opencode.db", "opencode.db-shm", "opencode.db-wal"]
