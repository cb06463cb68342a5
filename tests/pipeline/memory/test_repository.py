"""The memory repository: created once, changed only by landing a scratch copy's commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.memory.repository import MemoryRepo


async def commit_in(clone: MemoryRepo, rel: str, text: str, message: str) -> None:
    path = clone.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    await clone.git("add", "-A")
    await clone.git("commit", "-q", "-m", message)


async def test_ensure_creates_once_and_refuses_a_foreign_folder(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    head = await repo.head()
    await repo.ensure()
    assert await repo.head() == head
    assert await repo.branch() == "main"
    assert [c.subject for c in await repo.log()] == ["memd: initialize the memory repository"]
    other = tmp_path / "docs"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(MemoryRepoError, match="not a git repository"):
        await MemoryRepo(other).ensure()
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]


async def test_a_scratch_copy_is_thrown_away_and_the_repository_is_untouched(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    head = await repo.head()

    async def crashes() -> None:
        async with repo.scratch(tmp_path / "scratch") as clone:
            await commit_in(clone, "global/MEMORY.md", "x\n", "in scratch")
            raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        await crashes()
    assert await repo.head() == head
    assert list((tmp_path / "scratch").iterdir()) == []
    assert not (repo.path / "global").exists()


async def test_land_fast_forwards_and_replays_onto_a_moved_branch(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    base = await repo.head()
    assert base is not None
    async with repo.scratch(tmp_path / "s") as a, repo.scratch(tmp_path / "s") as b:
        await commit_in(a, "global/MEMORY.md", "global\n", "run a")
        await commit_in(b, "projects/p-1/MEMORY.md", "p\n", "run b")
        head_a = await repo.land(a, base=base)
        assert await repo.head() == head_a
        head_b = await repo.land(b, base=base)  # the branch moved: b is replayed onto a
    assert [c.subject for c in await repo.log()][:2] == ["run b", "run a"]
    assert await repo.head() == head_b
    assert (repo.path / "global" / "MEMORY.md").read_text() == "global\n"
    assert (repo.path / "projects" / "p-1" / "MEMORY.md").read_text() == "p\n"
    assert [c.subject for c in await repo.log("global")] == ["run a"]


async def test_a_conflicting_landing_writes_nothing(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    base = await repo.head()
    assert base is not None
    async with repo.scratch(tmp_path / "s") as a:
        await commit_in(a, "global/MEMORY.md", "from the run\n", "run")
        await commit_in(repo, "global/MEMORY.md", "by hand\n", "hand edit")
        head = await repo.head()
        with pytest.raises(MemoryRepoError, match="changed under this scope"):
            await repo.land(a, base=base)
    assert await repo.head() == head
    assert (repo.path / "global" / "MEMORY.md").read_text() == "by hand\n"
    assert await repo.dirty_paths("global") == []


async def test_park_accept_and_reject_inbox_branches(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    head = await repo.head()
    async with repo.scratch(tmp_path / "s") as a:
        await commit_in(a, "global/MEMORY.md", "x\n", "run 1")
        await repo.park(a, "inbox/r1")
    async with repo.scratch(tmp_path / "s") as b:
        await commit_in(b, "projects/k-1/MEMORY.md", "y\n", "run 2")
        await repo.park(b, "inbox/r2")
    assert await repo.head() == head
    assert not (repo.path / "global").exists()
    assert await repo.inbox_branches() == ["inbox/r1", "inbox/r2"]
    await repo.accept("inbox/r1", tmp_path / "s")
    await repo.reject("inbox/r2")
    assert await repo.inbox_branches() == []
    assert (repo.path / "global" / "MEMORY.md").exists()
    assert not (repo.path / "projects").exists()


async def test_dirty_paths_report_uncommitted_edits_in_a_scope(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    await commit_in(repo, "global/a.md", "a\n", "a")
    (repo.path / "global" / "a.md").write_text("edited\n")
    (repo.path / "global" / "new.md").write_text("new\n")
    assert sorted(await repo.dirty_paths("global")) == ["global/a.md", "global/new.md"]
    assert await repo.dirty_paths("projects/x-1") == []
