"""Hostile copies of the real Copilot CLI and Qwen Code samples: torn and truncated lines, a symlink,
a FIFO, /dev/zero and a huge line never raise, never hang, and lose nothing that can be read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.sources._lines import MAX_LINE_BYTES
from tests.pipeline.sources import test_copilot_cli as copilot
from tests.pipeline.sources import test_qwen_code as qwen
from tests.pipeline.sources.support import parse

MAINS = {"copilot_cli": copilot.MAIN, "qwen_code": qwen.MAIN}


def _copy(tmp_path: Path, source: str, data: bytes) -> Path:
    path = tmp_path / source / MAINS[source].parent.name / MAINS[source].name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("source", sorted(MAINS))
def test_a_session_cut_mid_line_is_read_up_to_its_last_whole_line(tmp_path: Path, source: str) -> None:
    whole = MAINS[source].read_bytes()
    lines = whole.splitlines(keepends=True)
    cut = b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2]
    path = _copy(tmp_path, source, cut)
    result = parse(source, path)
    assert result.problem is None
    assert result.transcript is not None
    assert result.new_offset == len(whole) - len(lines[-1])  # the torn tail waits for its newline
    assert result.transcript.user_message_count == 1
    path.write_bytes(whole)  # the writer finishes the line
    again = parse(source, path, start_offset=result.new_offset, state=result.state)
    assert again.new_offset == len(whole)
    assert not again.restarted


@pytest.mark.parametrize("source", sorted(MAINS))
def test_torn_and_garbage_lines_cost_those_lines_only(tmp_path: Path, source: str) -> None:
    lines = MAINS[source].read_bytes().splitlines(keepends=True)
    torn = lines[1][: len(lines[1]) // 2] + b"\n"
    data = lines[0] + torn + b"\x00\x00\x00\n" + b"not json at all\n" + b"".join(lines[1:])
    result = parse(source, _copy(tmp_path, source, data))
    assert result.problem is None
    assert result.transcript is not None
    assert result.transcript.parse_errors.count >= 2
    assert result.transcript.user_message_count == 1


@pytest.mark.parametrize("source", sorted(MAINS))
def test_a_huge_line_is_skipped_with_a_reason(tmp_path: Path, source: str) -> None:
    lines = MAINS[source].read_bytes().splitlines(keepends=True)
    huge = b'{"type": "user", "x": "' + b"a" * (MAX_LINE_BYTES + 10) + b'"}\n'
    result = parse(source, _copy(tmp_path, source, lines[0] + huge + b"".join(lines[1:])))
    assert result.problem is None
    assert result.transcript is not None
    assert result.transcript.parse_errors.first is not None
    assert "longer than" in result.transcript.parse_errors.first
    assert result.transcript.user_message_count == 1


@pytest.mark.parametrize("source", sorted(MAINS))
def test_another_agents_file_in_its_place_is_unreadable_by_name(tmp_path: Path, source: str) -> None:
    path = _copy(tmp_path, source, b'{"hello": "world"}\n')
    result = parse(source, path)
    assert result.problem is not None
    assert not result.retryable
    assert result.problem.reason.startswith("not a ")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "dangling_symlink"])
@pytest.mark.parametrize("source", sorted(MAINS))
def test_a_fifo_a_device_or_a_dangling_symlink_is_unreadable_at_once(
    tmp_path: Path, source: str, kind: str
) -> None:
    path = tmp_path / MAINS[source].name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(tmp_path / "gone.jsonl")
    result = parse(source, path)
    assert result.transcript is None
    assert result.problem is not None
    assert not result.retryable
    expected = {"fifo": "FIFO", "dev_zero": "character device", "dangling_symlink": "dangling symlink"}[kind]
    assert expected in result.problem.reason


@pytest.mark.parametrize("source", sorted(MAINS))
def test_a_symlinked_session_is_read_through_its_link(tmp_path: Path, source: str) -> None:
    target = _copy(tmp_path, source, MAINS[source].read_bytes())
    link = tmp_path / "link" / MAINS[source].name
    link.parent.mkdir()
    link.symlink_to(target)
    result = parse(source, link)
    assert result.transcript is not None
    assert result.transcript.user_message_count == 1
