"""Atomic writes: a new file is private whatever the umask; an existing file keeps its mode."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.publish.atomic import atomic_write_text


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("open_umask")
def test_a_new_file_is_private_even_under_an_open_umask(tmp_path: Path) -> None:
    path = atomic_write_text(tmp_path / "memd-topic.md", "memory\n")
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text() == "memory\n"


@pytest.mark.usefixtures("open_umask")
def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text("mine\n")
    path.chmod(0o644)
    atomic_write_text(path, "mine\nmemd\n")
    assert path.stat().st_mode & 0o777 == 0o644
