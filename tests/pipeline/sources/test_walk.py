"""Discovery: every adapter walks its root without raising, without looping, de-duplicated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.sources.registry import adapter_for
from pipeline.sources.walk import drop_twins, walk_files
from tests.source_names import SourceName


def test_symlinked_directories_are_followed_once_and_loops_end(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "s.jsonl").write_text("{}\n")
    (tmp_path / "a" / "b" / "loop").symlink_to(tmp_path / "a")
    (tmp_path / "a" / "self").symlink_to(tmp_path / "a" / "self")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "t.jsonl").write_text("{}\n")
    (tmp_path / "a" / "link").symlink_to(tmp_path / "elsewhere")
    found = list(walk_files(tmp_path / "a", lambda n: n.endswith(".jsonl")))
    assert [p.name for p in found] == ["s.jsonl", "t.jsonl"]


def test_a_looping_or_dangling_file_link_is_yielded_for_parse_to_explain(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").symlink_to(tmp_path / "x.jsonl")
    (tmp_path / "y.jsonl").symlink_to(tmp_path / "missing")
    assert sorted(p.name for p in walk_files(tmp_path, lambda n: n.endswith(".jsonl"))) == [
        "x.jsonl",
        "y.jsonl",
    ]


def test_depth_is_bounded(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 20)
    deep.mkdir(parents=True)
    (deep / "s.jsonl").write_text("{}\n")
    assert list(walk_files(tmp_path, lambda n: True)) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root can list any directory")
def test_an_unreadable_directory_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "s.jsonl").write_text("{}\n")
    (tmp_path / "ok.jsonl").write_text("{}\n")
    (tmp_path / "locked").chmod(0)
    try:
        assert [p.name for p in walk_files(tmp_path, lambda n: True)] == ["ok.jsonl"]
    finally:
        (tmp_path / "locked").chmod(0o755)


@pytest.mark.parametrize("source", list(SourceName))
def test_a_missing_root_yields_nothing(source: str, tmp_path: Path) -> None:
    assert list(adapter_for(source).discover(tmp_path / "absent")) == []


@pytest.mark.parametrize("source", list(SourceName))
def test_every_adapter_survives_a_symlink_loop_under_its_root(source: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    chats = root / "proj" / "chats"
    chats.mkdir(parents=True)
    (chats / "loop").symlink_to(root)
    (root / "proj" / "loop").symlink_to(root)
    (root / "back").symlink_to(root)
    assert list(adapter_for(source).discover(root)) == []


def test_drop_twins() -> None:
    paths = [Path("d/a.jsonl"), Path("d/a.jsonl.zst"), Path("d/b.jsonl.zst"), Path("e/a.jsonl.zst")]
    assert drop_twins(paths, ".jsonl.zst", ".jsonl") == [
        Path("d/a.jsonl"),
        Path("d/b.jsonl.zst"),
        Path("e/a.jsonl.zst"),
    ]
