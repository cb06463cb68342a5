"""``MemoryRepo.check_writable``: what stops a run from landing is found before the run, named."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.repository import LOCK_FILE, MemoryRepo


async def test_a_repository_memd_can_write_passes_and_so_does_one_not_made_yet(tmp_path: Path) -> None:
    MemoryRepo(tmp_path / "not" / "yet").check_writable()
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    repo.check_writable()
    assert (tmp_path / "memory" / ".git" / LOCK_FILE).is_file()


async def test_a_lock_that_cannot_be_opened_is_named_with_its_reason(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    lock = tmp_path / "memory" / ".git" / LOCK_FILE
    lock.symlink_to(tmp_path / "elsewhere")  # never followed
    with pytest.raises(MemoryRepoError) as caught:
        repo.check_writable()
    assert str(caught.value).startswith(f"the memory repository {repo.path} cannot be written: {lock}: ")
    assert "Errno" not in str(caught.value)
    assert not (tmp_path / "elsewhere").exists()


def test_a_memory_dir_under_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(MemoryRepoError, match="is not a folder"):
        MemoryRepo(tmp_path / "file" / "memory").check_writable()
