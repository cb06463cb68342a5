"""The incremental driver shared by the JSONL adapters: offsets, partial tails, restarts, I/O errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pipeline.agents.claude_code.transcripts import ClaudeCodeAdapter
from pipeline.errors import TranscriptIncomplete
from pipeline.sources._lines import MAX_LINE_BYTES
from tests.pipeline.sources.support import CLAUDE_MAIN, CODEX_MAIN, GEMINI_MAIN, PI_MAIN, parse
from tests.source_names import SourceName

SID = "11111111-2222-4333-8444-555555555555"


def record(n: int, text: str = "prompt") -> bytes:
    line = {
        "type": "user",
        "uuid": f"u{n}",
        "sessionId": SID,
        "cwd": "/p",
        "timestamp": f"2026-10-01T10:00:{n:02d}Z",
        "message": {"role": "user", "content": f"{text} {n}"},
    }
    return json.dumps(line).encode() + b"\n"


@pytest.fixture
def session(tmp_path: Path) -> Path:
    return tmp_path / f"{SID}.jsonl"


def test_an_appended_file_is_parsed_from_the_last_complete_line(session: Path) -> None:
    session.write_bytes(record(1) + record(2))
    first = parse("claude_code", session)
    assert first.new_offset == session.stat().st_size
    assert first.transcript is not None
    assert first.transcript.user_message_count == 2
    with session.open("ab") as handle:
        handle.write(record(3))
    second = parse("claude_code", session, start_offset=first.new_offset, state=first.state)
    assert not second.restarted
    assert second.new_offset == session.stat().st_size
    assert second.transcript is not None
    assert second.transcript.user_message_count == 3
    assert second.transcript.items == ()
    assert not second.transcript.items_complete
    assert second.transcript.summary() == parse("claude_code", session).transcript.summary()  # type: ignore[union-attr]


def test_a_partial_tail_waits_for_its_newline(session: Path) -> None:
    whole = record(2)
    session.write_bytes(record(1) + whole[:25])
    first = parse("claude_code", session)
    assert first.new_offset == len(record(1))
    assert first.transcript is not None
    assert first.transcript.user_message_count == 1
    with session.open("ab") as handle:
        handle.write(whole[25:])
    second = parse("claude_code", session, start_offset=first.new_offset, state=first.state)
    assert second.transcript is not None
    assert second.transcript.user_message_count == 2


def test_nothing_new_costs_nothing_and_changes_nothing(session: Path) -> None:
    session.write_bytes(record(1))
    first = parse("claude_code", session, with_items=False)
    again = parse("claude_code", session, start_offset=first.new_offset, state=first.state)
    assert again.new_offset == first.new_offset
    assert again.state == first.state
    assert again.transcript == first.transcript


def test_the_callers_state_is_never_mutated(session: Path) -> None:
    session.write_bytes(record(1))
    first = parse("claude_code", session)
    frozen = json.dumps(first.state, sort_keys=True)
    with session.open("ab") as handle:
        handle.write(record(2))
    parse("claude_code", session, start_offset=first.new_offset, state=first.state)
    assert json.dumps(first.state, sort_keys=True) == frozen


@pytest.mark.parametrize("change", ["shrunk", "rewritten", "bad_state", "other_source"])
def test_a_rewritten_file_or_unusable_state_restarts_from_zero(session: Path, change: str) -> None:
    session.write_bytes(record(1) + record(2))
    first = parse("claude_code", session)
    state = dict(first.state or {})
    if change == "shrunk":
        session.write_bytes(record(1))
    elif change == "rewritten":
        session.write_bytes(record(1, "other") + record(2) + record(3))
    elif change == "bad_state":
        state = {"v": 999}
    else:
        state["source"] = "codex"
    again = parse("claude_code", session, start_offset=first.new_offset, state=state)
    assert again.restarted
    assert again.transcript is not None
    assert again.transcript.items_complete
    assert again.transcript == parse("claude_code", session).transcript


def test_a_multi_megabyte_line_is_parsed(session: Path) -> None:
    big = {
        "type": "user",
        "uuid": "u",
        "sessionId": SID,
        "timestamp": "2026-10-01T10:00:00Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x" * 5_000_000}],
        },
    }
    session.write_bytes(json.dumps(big).encode() + b"\n" + record(1))
    result = parse("claude_code", session)
    assert result.transcript is not None
    assert result.transcript.user_message_count == 1
    assert result.transcript.parse_errors.count == 0


def test_a_line_over_the_cap_is_skipped_with_a_reason(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.sources import _jsonl, _lines

    def small(chunks, start_offset, max_line_bytes=1000):  # type: ignore[no-untyped-def]
        return _lines.iter_lines(chunks, start_offset, 1000)

    monkeypatch.setattr(_jsonl, "iter_lines", small)
    session.write_bytes(record(1, "y" * 5000) + record(2))
    result = parse("claude_code", session)
    assert result.transcript is not None
    assert result.transcript.user_message_count == 1
    assert result.transcript.parse_errors.count == 1
    assert "longer than" in (result.transcript.parse_errors.first or "")
    assert MAX_LINE_BYTES > 1000


def test_a_vanished_file_is_retryable(tmp_path: Path) -> None:
    result = parse("claude_code", tmp_path / "gone.jsonl")
    assert result.problem is not None
    assert result.retryable
    assert "disappeared" in result.problem.reason


def test_a_dangling_symlink_is_not_retryable(tmp_path: Path) -> None:
    link = tmp_path / "a.jsonl"
    link.symlink_to(tmp_path / "nowhere.jsonl")
    result = parse("claude_code", link)
    assert result.problem is not None
    assert not result.retryable
    assert "dangling symlink" in result.problem.reason


def test_a_symlink_loop_is_unreadable(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.symlink_to(b)
    b.symlink_to(a)
    result = parse("claude_code", a)
    assert result.problem is not None
    assert "symlink loop" in result.problem.reason


def test_a_directory_named_like_a_transcript_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").mkdir()
    result = parse("claude_code", tmp_path / "d.jsonl")
    assert result.problem is not None
    assert "directory" in result.problem.reason


def test_permission_denied_is_unreadable(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session.write_bytes(record(1))

    def deny(path: object, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "open", deny)
    result = parse("claude_code", session)
    assert result.problem is not None
    assert result.problem.reason == "permission denied"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_unreadable(session: Path) -> None:
    session.write_bytes(record(1))
    session.chmod(0)
    result = parse("claude_code", session)
    assert result.problem is not None
    assert result.problem.reason == "permission denied"


def test_an_internal_failure_is_an_outcome_not_an_exception(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session.write_bytes(record(1))

    def boom(*args: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(ClaudeCodeAdapter, "begin", boom)
    result = ClaudeCodeAdapter().parse(session)
    assert result.problem is not None
    assert "RuntimeError" in result.problem.reason


def test_no_complete_line_yet_is_incomplete(session: Path) -> None:
    session.write_bytes(record(1)[:-1])
    result = parse("claude_code", session)
    assert isinstance(result.problem, TranscriptIncomplete)
    assert result.new_offset == 0


def test_a_full_parse_without_items_has_the_same_summary() -> None:
    with_items = parse("claude_code", CLAUDE_MAIN).transcript
    without = parse("claude_code", CLAUDE_MAIN, with_items=False).transcript
    assert with_items is not None
    assert without is not None
    assert without.items == ()
    assert not without.items_complete
    assert with_items.summary() == without


# -- hostile swaps and caps (issue 13): a transcript is opened without blocking, checked on the open
# descriptor, and read no further than the size the caller saw ------------------------------------

JSONL_MAINS = {
    "claude_code": CLAUDE_MAIN,
    "codex": CODEX_MAIN,
    "gemini_cli": GEMINI_MAIN,
    "pi": PI_MAIN,
}


def _swap(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
@pytest.mark.parametrize("source", sorted(JSONL_MAINS))
def test_a_fifo_or_dev_zero_in_place_of_a_transcript_is_unreadable_at_once(
    tmp_path: Path, source: SourceName, kind: str
) -> None:
    path = tmp_path / JSONL_MAINS[source].name
    _swap(path, kind)
    for start, max_bytes in ((0, None), (0, 4096), (100, 4096)):
        result = parse(source, path, start_offset=start, max_bytes=max_bytes)
        assert result.transcript is None
        assert result.problem is not None
        assert not result.retryable
        assert ("FIFO" if kind == "fifo" else "character device") in result.problem.reason


def test_a_parse_reads_no_further_than_max_bytes(session: Path) -> None:
    session.write_bytes(record(1) + record(2) + record(3))
    seen = len(record(1) + record(2)) + 5  # the scan saw two lines and part of a third
    capped = parse("claude_code", session, max_bytes=seen)
    assert capped.new_offset == len(record(1) + record(2))
    assert capped.transcript is not None
    assert capped.transcript.user_message_count == 2
    # the bytes after the cap wait for the next call, which resumes where this one stopped
    rest = parse("claude_code", session, start_offset=capped.new_offset, state=capped.state, max_bytes=10**6)
    assert not rest.restarted
    assert rest.new_offset == session.stat().st_size
    assert rest.transcript is not None
    assert rest.transcript.user_message_count == 3


def test_a_file_truncated_then_grown_past_the_offset_is_read_again_from_zero(session: Path) -> None:
    # More than the 4 KB head fingerprint, so the head alone cannot tell the truncation.
    session.write_bytes(b"".join(record(n, "first " + "x" * 200) for n in range(40)))
    first = parse("claude_code", session)
    assert first.new_offset == session.stat().st_size
    kept = b"".join(record(n, "first " + "x" * 200) for n in range(30))
    grown = kept + b"".join(record(n, "second " + "y" * 300) for n in range(30, 45))
    assert len(grown) > first.new_offset
    session.write_bytes(grown)  # truncated to 30 records, then 15 different ones written
    again = parse("claude_code", session, start_offset=first.new_offset, state=first.state)
    assert again.restarted
    assert again.problem is None
    assert again.transcript is not None
    assert again.transcript.user_message_count == 45
    assert again.transcript.parse_errors.count == 0
    assert again.transcript == parse("claude_code", session).transcript


# -- a bad line costs that line only (issue 14) -----------------------------------------------------

DEEP_LINE = b"[" * 200_000 + b"\n"


@pytest.mark.parametrize("source", sorted(JSONL_MAINS))
def test_a_deeply_nested_line_costs_that_line_only(tmp_path: Path, source: SourceName) -> None:
    original = JSONL_MAINS[source]
    lines = original.read_bytes().splitlines(keepends=True)
    path = tmp_path / original.name
    path.write_bytes(lines[0] + DEEP_LINE + b"".join(lines[1:]))
    result = parse(source, path)
    assert result.problem is None, result.problem
    assert result.transcript is not None
    expected = parse(source, original).transcript
    assert expected is not None
    assert result.transcript.items == expected.items
    assert result.transcript.user_message_count == expected.user_message_count
    assert result.transcript.parse_errors.count == expected.parse_errors.count + 1
    assert result.transcript.parse_errors.first == "line 2: JSON nested too deeply to read"


def test_an_exception_from_a_record_costs_that_record_only(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session.write_bytes(record(1) + record(2, "boom") + record(3))
    real_feed = ClaudeCodeAdapter.feed

    def feed(self: ClaudeCodeAdapter, c: Any, rec: dict[str, Any], has_recall: bool) -> bool:
        if "boom" in json.dumps(rec):
            raise RecursionError("maximum recursion depth exceeded")
        return real_feed(self, c, rec, has_recall)

    monkeypatch.setattr(ClaudeCodeAdapter, "feed", feed)
    result = parse("claude_code", session)
    assert result.problem is None, result.problem
    assert result.transcript is not None
    assert result.transcript.user_message_count == 2
    assert result.transcript.parse_errors.count == 1
    assert result.transcript.parse_errors.first == "line 2: unreadable record (RecursionError)"
