from __future__ import annotations

import marshal
from pathlib import Path

from pipeline.scan import index as scan_index
from pipeline.scan.index import Index
from pipeline.store.read.sessions import Seen

ENTRIES: dict[str, Seen] = {"/a.jsonl": (1, "claude_code", (1, 2, 3, 4), None, "eligible")}


def test_an_index_reads_back_as_written(tmp_path: Path) -> None:
    path = scan_index.index_path(tmp_path)
    written = Index((1, 1, "2026-11-01 12:00:00.000000"), ENTRIES, key="k1", roots={"claude_code": "/r"})
    scan_index.save(path, written)
    assert scan_index.load(path) == written
    scan_index.save(path, Index((2, 2, "x"), {}))  # replaced whole
    assert scan_index.load(path) == Index((2, 2, "x"), {})
    assert [p.name for p in tmp_path.iterdir()] == [scan_index.FILE_NAME]  # no temporary left


def test_a_missing_truncated_or_foreign_index_is_ignored(tmp_path: Path) -> None:
    path = scan_index.index_path(tmp_path)
    assert scan_index.load(path) is None
    scan_index.save(path, Index((0, 0, ""), {}))
    assert scan_index.load(path) == Index((0, 0, ""), {})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert scan_index.load(path) is None
    path.write_bytes(b"not an index at all")
    assert scan_index.load(path) is None
    path.write_bytes(marshal.dumps(("another-format", (0, 0, ""), None, {}, {})))
    assert scan_index.load(path) is None
    # The first format (no key, no roots) is read as no index: the next scan writes a new one.
    path.write_bytes(marshal.dumps(("memd-scan-index-1", (0, 0, ""), {})))
    assert scan_index.load(path) is None
    path.write_bytes(marshal.dumps((scan_index.FORMAT, (0, 0, ""), 7, {}, {})))
    assert scan_index.load(path) is None
    path.write_bytes(marshal.dumps((scan_index.FORMAT, (0, 0, ""), None, {}, [])))
    assert scan_index.load(path) is None
