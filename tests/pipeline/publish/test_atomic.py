"""Atomic writes: a new file is private whatever the umask; an existing file keeps its mode."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.publish.atomic import UnsafeTarget, atomic_write_text, check_target, remove_file


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


def test_a_symlink_is_never_written_through_by_default(tmp_path: Path) -> None:
    secret = tmp_path / ".bashrc"
    secret.write_text("export PATH\n")
    link = tmp_path / "project" / "AGENTS.md"
    link.parent.mkdir()
    link.symlink_to("../.bashrc")
    with pytest.raises(UnsafeTarget, match="symbolic link"):
        atomic_write_text(link, "memd\n", within=link.parent)
    assert secret.read_text() == "export PATH\n"
    assert link.is_symlink()
    assert sorted(p.name for p in link.parent.iterdir()) == ["AGENTS.md"], "no temporary file left"


def test_a_folder_that_links_out_of_where_memd_means_is_refused(tmp_path: Path) -> None:
    home = tmp_path / ".claude"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "projects" / "-x").mkdir(parents=True)
    (home / "projects" / "-x" / "memory").symlink_to(elsewhere)
    target = home / "projects" / "-x" / "memory" / "memd-a.md"
    with pytest.raises(UnsafeTarget, match="symbolic link"):
        atomic_write_text(target, "memd\n", within=home)
    with pytest.raises(UnsafeTarget, match="symbolic link"):
        check_target(target, within=home)
    (elsewhere / "memd-a.md").write_text("someone's\n")
    with pytest.raises(UnsafeTarget, match="symbolic link"):
        remove_file(target, within=home)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["memd-a.md"]
    # Missing folders below ``within`` are created as real folders.
    fresh = home / "projects" / "-y" / "memory" / "memd-a.md"
    atomic_write_text(fresh, "memd\n", within=home)
    assert fresh.read_text() == "memd\n"


def test_a_user_level_link_to_the_users_own_file_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "CLAUDE.md"
    real.parent.mkdir()
    real.write_text("mine\n")
    real.chmod(0o640)
    link = tmp_path / ".claude" / "CLAUDE.md"
    link.parent.mkdir()
    link.symlink_to(real)
    written = atomic_write_text(link, "mine\nmemd\n", within=link.parent, follow_link=True)
    assert written == real
    assert link.is_symlink()
    assert real.read_text() == "mine\nmemd\n"
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["CLAUDE.md"]


@pytest.mark.parametrize("to", ["someone_elses", "folder", "dangling", "device"])
def test_a_user_level_link_to_anything_else_is_refused(tmp_path: Path, to: str) -> None:
    other = tmp_path / "other"
    if to == "someone_elses":
        other.write_text("theirs\n")
        os.chown(other, 65534, 65534) if os.getuid() == 0 else pytest.skip("needs root to chown")
    elif to == "folder":
        other.mkdir()
    elif to == "device":
        other = Path("/dev/zero")
    link = tmp_path / "CLAUDE.md"
    link.symlink_to(other)
    with pytest.raises(UnsafeTarget):
        atomic_write_text(link, "memd\n", within=tmp_path, follow_link=True)
    if to == "someone_elses":
        assert other.read_text() == "theirs\n"


def test_the_final_path_is_checked_again_right_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlink swapped in while the temporary file is written is not replaced."""
    path = tmp_path / "AGENTS.md"
    path.write_text("mine\n")
    secret = tmp_path / "secret"
    secret.write_text("secret\n")
    real_fsync = os.fsync

    def swap_then_fsync(fd: int) -> None:
        real_fsync(fd)
        if path.exists() and not path.is_symlink():
            path.unlink()
            path.symlink_to(secret)

    monkeypatch.setattr(os, "fsync", swap_then_fsync)
    with pytest.raises(UnsafeTarget):
        atomic_write_text(path, "memd\n", within=tmp_path)
    monkeypatch.undo()
    assert path.is_symlink()
    assert secret.read_text() == "secret\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["AGENTS.md", "secret"]
