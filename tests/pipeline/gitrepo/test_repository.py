"""The memory repository: created once, changed only by landing a scratch copy's commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.repository import Change, MemoryRepo


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


async def test_staged_changes_name_each_change_of_one_scope_relative_to_it(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    await commit_in(repo, "global/keep.md", "keep\n", "one")
    await commit_in(repo, "global/old.md", "a long enough body to be seen as the same file\n" * 3, "two")
    await commit_in(repo, "global/gone.md", "gone\n", "three")
    since = await repo.head()
    assert since is not None
    scope = repo.path / "global"
    (scope / "old.md").rename(scope / "new.md")
    (scope / "gone.md").unlink()
    (scope / "keep.md").write_text("kept, changed\n")
    (scope / "added.md").write_text("added\n")
    (repo.path / "projects" / "p-1").mkdir(parents=True)
    (repo.path / "projects" / "p-1" / "other.md").write_text("another scope\n")

    assert await repo.staged_changes("global") == []  # nothing staged yet
    await repo.stage("global")

    changes = sorted(await repo.staged_changes("global", since), key=lambda c: c.path)
    assert changes == [
        Change("A", "added.md"),
        Change("D", "gone.md"),
        Change("M", "keep.md"),
        Change("R", "new.md", "old.md"),
    ]
    assert await repo.staged_changes("projects/p-1") == []  # another scope is not staged
    with pytest.raises(ValueError, match="not a memory scope"):
        await repo.stage("../elsewhere")


async def test_untrack_drops_paths_from_the_index_and_leaves_the_disk(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    await commit_in(repo, "global/a.md", "a\n", "a")
    await repo.untrack(["global/a.md", "global/never-tracked.md"])
    await repo.untrack([])
    assert await repo.staged_changes("global") == [Change("D", "a.md")]
    assert (repo.path / "global" / "a.md").read_text() == "a\n"


async def test_staged_diff_shows_the_scope_under_a_prefix_without_the_excluded_paths(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    since = await repo.head()
    assert since is not None
    for rel, text in [
        ("global/topic.md", "topic\n"),
        ("global/raw/input.md", "input\n"),
        ("other.md", "x\n"),
    ]:
        (repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / rel).write_text(text)
    await repo.stage("global")
    await repo.git("add", "other.md")

    full = await repo.staged_diff("global", since, prefix="memories/")
    assert "+++ b/memories/topic.md" in full
    assert "+++ b/memories/raw/input.md" in full
    assert "other.md" not in full  # outside the scope
    withheld = await repo.staged_diff("global", since, prefix="memories/", exclude=["raw"])
    assert "+++ b/memories/topic.md" in withheld
    assert "input" not in withheld


async def test_commit_staged_commits_with_the_message_and_returns_the_new_head(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    (repo.path / "global").mkdir()
    (repo.path / "global" / "MEMORY.md").write_text("index\n")
    await repo.stage("global")
    head = await repo.commit_staged("memd: global\n\nbody line\n")
    assert head == await repo.head()
    assert [c.subject for c in await repo.log("global")] == ["memd: global"]
    assert await repo.staged_changes("global") == []


async def test_branch_patch_is_what_the_branch_adds_since_it_left_head(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    async with repo.scratch(tmp_path / "s") as a:
        await commit_in(a, "global/MEMORY.md", "proposed\n", "memd: the proposal")
        await repo.park(a, "inbox/r1")
    await commit_in(repo, "projects/p-1/MEMORY.md", "moved on\n", "meanwhile on main")
    patch = await repo.branch_patch("inbox/r1")
    assert patch.startswith("memd: the proposal\n")
    assert "+proposed" in patch
    assert "meanwhile" not in patch
    assert "moved on" not in patch
