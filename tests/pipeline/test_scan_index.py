from __future__ import annotations

from pathlib import Path

from pipeline import scan_index


def test_an_index_is_used_only_at_the_generation_it_was_written(tmp_path: Path) -> None:
    path = scan_index.index_path(tmp_path)
    entries = {"/a.jsonl": (1, "claude_code", (1, 2, 3, 4), None, "eligible")}
    scan_index.save(path, (1, 1, "2026-11-01T12:00:00+00:00"), entries)
    assert scan_index.load(path, (1, 1, "2026-11-01T12:00:00+00:00")) == entries
    assert scan_index.load(path, (1, 1, "2026-11-01T12:00:01+00:00")) is None
    assert scan_index.load(path, (2, 2, "2026-11-01T12:00:00+00:00")) is None


def test_a_missing_truncated_or_foreign_index_is_ignored(tmp_path: Path) -> None:
    path = scan_index.index_path(tmp_path)
    assert scan_index.load(path, (0, 0, "")) is None
    scan_index.save(path, (0, 0, ""), {})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert scan_index.load(path, (0, 0, "")) is None
    path.write_bytes(b"not an index at all")
    assert scan_index.load(path, (0, 0, "")) is None
    import marshal

    path.write_bytes(marshal.dumps(("another-format", (0, 0, ""), {})))
    assert scan_index.load(path, (0, 0, "")) is None
