"""Bad input never raises out of an adapter: every bad file comes back with a state and a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.registry import adapter_for
from pipeline.transcript import UserMessage
from tests.pipeline.sources.support import HOSTILE, parse
from tests.source_names import SourceName

CORRUPT = HOSTILE / "c0ffee00-0000-4000-8000-00000000dead.jsonl"


@pytest.mark.parametrize("source", list(SourceName))
@pytest.mark.parametrize("name", sorted(p.name for p in HOSTILE.iterdir()))
def test_no_bad_file_raises_from_any_adapter(source: str, name: str) -> None:
    result = adapter_for(source).parse(HOSTILE / name)
    assert result.problem is not None or result.transcript is not None
    if result.problem is not None:
        assert result.problem.reason
        assert result.transcript is None
        assert not result.problem.reason.startswith("parser error"), result.problem.reason


def test_corruption_is_repaired_where_it_can_be_and_counted_where_it_cannot() -> None:
    result = parse("claude_code", CORRUPT)
    t = result.transcript
    assert result.problem is None
    assert t is not None
    # NUL run dropped, glued records split, invalid UTF-8 replaced, the torn record's successor kept,
    # the garbage line counted, the partial tail left for later
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "first prompt",
        "second prompt",
        "third prompt",
        "fourth prompt, with bad bytes: \ufffd\ufffd",
        "fifth prompt after the splice",
        "sixth prompt",
    ]
    assert t.parse_errors.count == 3
    assert t.parse_errors.first == "line 3: a run of NUL bytes"
    assert result.new_offset < CORRUPT.stat().st_size
    assert CORRUPT.read_bytes()[result.new_offset - 1 : result.new_offset] == b"\n"


@pytest.mark.parametrize(
    ("name", "retryable", "reason"),
    [
        ("empty.jsonl", True, "the file is empty"),
        ("only_partial.jsonl", True, "no complete line yet"),
        ("nul_only.jsonl", False, "not JSON Lines"),
        ("binary.jsonl", False, "not JSON Lines (binary or unknown content)"),
        ("array.jsonl", False, "a JSON array where JSON Lines belong"),
        ("array_one_line.jsonl", False, "a JSON array where JSON Lines belong"),
        ("other_format.jsonl", False, "not a Claude Code transcript"),
        ("rollout-corrupt.jsonl.zst", False, "corrupt zstd stream"),
        ("rollout-truncated.jsonl.zst", False, "truncated zstd stream"),
    ],
)
def test_reasons_a_user_can_read(name: str, retryable: bool, reason: str) -> None:
    result = parse("claude_code", HOSTILE / name)
    assert result.problem is not None
    assert result.retryable is retryable
    assert reason in result.problem.reason


def test_a_file_that_was_bad_and_then_grew_good_lines_recovers(tmp_path: Path) -> None:
    path = tmp_path / "c0ffee00-0000-4000-8000-00000000dead.jsonl"
    path.write_bytes(b"{garbage\n")
    first = parse("claude_code", path)
    assert first.problem is not None
    assert not first.retryable
    lines = CORRUPT.read_bytes().split(b"\n")
    with path.open("ab") as handle:
        handle.write(lines[0] + b"\n")
    second = parse("claude_code", path, start_offset=first.new_offset, state=first.state)
    assert second.problem is None
    assert second.transcript is not None
    assert second.transcript.user_message_count == 1
    assert second.transcript.parse_errors.count == 1


class _Crash(RuntimeError):
    pass


@pytest.mark.parametrize("source", list(SourceName))
def test_a_parser_that_crashes_anyway_is_caught_by_the_one_last_guard(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every adapter's parse goes through pipeline.sources.base.last_guard: a bug deep in a parser
    # comes back as an unreadable file with the exception as its reason, never as a raise
    adapter = adapter_for(source)

    def crash(*_args: object, **_kwargs: object) -> None:
        raise _Crash("a bug deep in the parser")

    for inner in ("_parse", "_parse_legacy", "_parse_all"):
        if hasattr(adapter, inner):
            monkeypatch.setattr(adapter, inner, crash)
    path = tmp_path / "session.json"  # Gemini CLI's legacy files take their own inner parse
    path.write_text('{"sessionId": "x", "messages": []}\n')
    result = adapter.parse(path, 0, {"kept": True})
    assert result.transcript is None
    assert result.problem is not None
    assert result.problem.reason == "parser error: _Crash: a bug deep in the parser"
    assert (result.new_offset, result.state) == (0, {"kept": True})
