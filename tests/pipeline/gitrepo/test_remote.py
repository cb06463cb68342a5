"""The memory repository's remote: the hardened git environment applies to fetch and push too."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo import remote
from pipeline.gitrepo.repository import MemoryRepo


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _repo(path: Path) -> MemoryRepo:
    repo = MemoryRepo(path)
    await repo.ensure()
    return repo


@pytest.mark.parametrize("url", ["ext::sh -c touch% MARKER", "fd::3", "-uhelp", "a\nb", ""])
async def test_a_url_that_could_run_a_program_is_refused(tmp_path: Path, url: str) -> None:
    repo = await _repo(tmp_path / "memory")
    with pytest.raises(MemoryRepoError):
        await remote.fetch(repo, url.replace("MARKER", str(tmp_path / "ran")), "main")
    assert not (tmp_path / "ran").exists()


async def test_ssh_is_ssh_whatever_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    monkeypatch.setenv("GIT_SSH_COMMAND", f"touch {marker}")
    monkeypatch.setenv("GIT_SSH", f"/bin/sh -c 'touch {marker}'")
    repo = await _repo(tmp_path / "memory")
    with pytest.raises(MemoryRepoError):
        await remote.fetch(repo, "ssh://memd@127.0.0.1:1/nothing.git", "main")
    assert not marker.exists()


async def test_a_push_that_is_not_a_fast_forward_is_rejected_and_never_forced(tmp_path: Path) -> None:
    served = tmp_path / "served.git"
    served.mkdir()
    _git(served, "init", "-q", "--bare", "-b", "main")
    first = await _repo(tmp_path / "first")
    second = await _repo(tmp_path / "second")
    (second.path / "other.md").write_text("another history\n")
    _git(second.path, "add", "other.md")
    _git(second.path, "commit", "-qm", "x", "--amend")  # a history that does not hold the first's
    head = await first.head()
    assert head is not None
    await remote.push(first, str(served), "main", head)
    other = await second.head()
    assert other is not None
    with pytest.raises(remote.PushRejected):
        await remote.push(second, str(served), "main", other)
    assert _git(served, "rev-parse", "main").strip() == head


async def test_fetch_of_a_new_empty_remote_says_there_is_no_branch(tmp_path: Path) -> None:
    served = tmp_path / "served.git"
    served.mkdir()
    _git(served, "init", "-q", "--bare", "-b", "main")
    repo = await _repo(tmp_path / "memory")
    assert await remote.fetch(repo, str(served), "main") is None
