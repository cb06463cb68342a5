"""Reading a hostile file: symlinks, FIFOs, devices and huge files never hang memd or flood it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.safefile import UnsafeFile, read_capped, read_text_capped


def test_a_regular_file_within_the_cap_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 100)
    assert read_capped(path, 100) == b"x" * 100
    assert read_text_capped(path, 100) == "x" * 100


def test_a_file_over_the_cap_is_refused_not_truncated(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    with pytest.raises(UnsafeFile, match="larger than memd reads"):
        read_capped(path, 100)


def test_dev_zero_behind_a_symlink_is_refused_at_once(tmp_path: Path) -> None:
    link = tmp_path / "settings.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(UnsafeFile, match="character device"):
        read_capped(link, 1 << 20)


def test_a_fifo_with_no_writer_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFile, match="FIFO"):
        read_capped(fifo, 1 << 20)


def test_a_symlink_is_refused_where_memd_does_not_follow(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("secret")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert read_capped(link, 100) == b"secret"
    with pytest.raises(UnsafeFile, match="symbolic link"):
        read_capped(link, 100, follow_symlinks=False)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeFile, match="directory"):
        read_capped(tmp_path, 100)


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_capped(tmp_path / "none", 100)
