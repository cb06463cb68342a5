from __future__ import annotations

import json

from pipeline.sources._lines import RawLine, decode_line, iter_lines


def test_only_newline_terminated_lines_count() -> None:
    lines = list(iter_lines([b'{"a":1}\n{"b"', b':2}\n{"c":'], 100))
    assert lines == [RawLine(b'{"a":1}', 108), RawLine(b'{"b":2}', 116)]


def test_a_line_over_the_limit_is_reported_without_its_bytes() -> None:
    chunks = [b"x" * 10, b"y" * 10, b"\nok\n"]
    assert list(iter_lines(chunks, 0, max_line_bytes=15)) == [RawLine(None, 21), RawLine(b"ok", 24)]


def test_an_oversized_partial_tail_is_not_consumed() -> None:
    assert list(iter_lines([b"ok\n", b"z" * 50], 0, max_line_bytes=15)) == [RawLine(b"ok", 3)]


def test_nul_runs_are_dropped() -> None:
    assert decode_line(b'\x00\x00{"a":\x001}\x00') == ([{"a": 1}], None)
    assert decode_line(b"\x00" * 10) == ([], "a run of NUL bytes")


def test_blank_lines_are_not_errors() -> None:
    assert decode_line(b"  \r") == ([], None)


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    records, error = decode_line(b'{"t":"caf\xff\xfe"}')
    assert error is None
    assert records[0]["t"].startswith("caf")


def test_glued_records_are_split() -> None:
    assert decode_line(b'{"a":1}{"b":2}') == ([{"a": 1}, {"b": 2}], None)


def test_a_torn_record_spliced_into_the_next_keeps_the_whole_one() -> None:
    whole = json.dumps({"type": "user", "message": {"content": "kept"}})
    torn = json.dumps({"type": "user", "message": {"content": "lost in a crash"}})[:30]
    records, error = decode_line((torn + whole).encode())
    assert {"type": "user", "message": {"content": "kept"}} in records
    assert error is not None
    assert "torn" in error


def test_garbage_is_an_error_with_a_reason() -> None:
    records, error = decode_line(b"{not json")
    assert records == []
    assert error is not None
    assert error.startswith("invalid JSON")


def test_a_json_value_that_is_not_an_object_is_not_a_record() -> None:
    assert decode_line(b"[1, 2]") == ([], "a JSON array, not a record")
    assert decode_line(b"42") == ([], "a JSON int, not a record")


def test_recovery_is_bounded_on_huge_garbage() -> None:
    line = b'{"' * 600_000
    records, error = decode_line(line)
    assert records == []
    assert error is not None


def test_a_deeply_nested_line_is_an_error_not_an_exception() -> None:
    assert decode_line(b"[" * 200_000) == ([], "JSON nested too deeply to read")
    assert decode_line(b'{"a": ' * 100_000) == ([], "JSON nested too deeply to read")
