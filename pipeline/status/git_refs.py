"""The memory repository's HEAD, read from the files under ``.git`` (no git process).

`memd status` must stay fast and must not run git (hooks, fsmonitor, a slow network mount); a
ref is a small file, or a line of ``packed-refs``.
"""

from __future__ import annotations

from pathlib import Path


def _git_dir(repo: Path) -> Path | None:
    dot = repo / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text.removeprefix("gitdir:").strip())
            return target if target.is_absolute() else (repo / target)
    return None


def _packed_refs(git_dir: Path) -> dict[str, str]:
    refs: dict[str, str] = {}
    try:
        lines = (git_dir / "packed-refs").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return refs
    for line in lines:
        if line and line[0] not in "#^" and " " in line:
            sha, name = line.split(" ", 1)
            refs[name.strip()] = sha
    return refs


def git_head(repo: Path) -> tuple[str | None, str | None]:
    """(HEAD's commit, its branch) from the files under ``.git``; (None, None) without a repository."""
    git_dir = _git_dir(repo)
    if git_dir is None:
        return None, None
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    if not head.startswith("ref:"):
        return head or None, None
    ref = head.removeprefix("ref:").strip()
    branch = ref.removeprefix("refs/heads/")
    try:
        return (git_dir / ref).read_text(encoding="utf-8").strip() or None, branch
    except OSError:
        return _packed_refs(git_dir).get(ref), branch
