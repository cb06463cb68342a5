"""Commits memd makes from trees it has: a tree without a folder, what a branch holds beyond others."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.gitrepo import crafted
from pipeline.gitrepo.repository import MemoryRepo


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _commit(path: Path, files: dict[str, str], subject: str) -> str:
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text, encoding="utf-8")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", subject)
    return _git(path, "rev-parse", "HEAD").strip()


async def test_a_commit_without_a_folder_holds_everything_else_and_none_of_it(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    repo = MemoryRepo(path)
    await repo.ensure()
    start = _git(path, "rev-parse", "HEAD").strip()
    _commit(path, {"global/a.md": "PRIVATE"}, "global only")
    head = _commit(path, {"projects/p/a.md": "shared", "global/b.md": "PRIVATE too"}, "both")
    tree = await crafted.tree_without(repo, head, "global")
    made = await crafted.commit_tree(repo, tree, [start], "made\n")
    assert _git(path, "ls-tree", "-r", "--name-only", made).split() == ["README.md", "projects/p/a.md"]
    assert _git(path, "rev-parse", f"{made}^").strip() == start
    assert await crafted.tree_of(repo, head) == _git(path, "rev-parse", f"{head}^{{tree}}").strip()
    assert await crafted.subjects_outside(repo, head, [start], "global", limit=5) == ["both"]
    assert len(await crafted.commits_between(repo, head, [start])) == 2
    assert await crafted.commits_between(repo, head, [start, head]) == set()
