"""Reading the memory repository for people: its scopes, one scope's memory, its history."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import MemoryRepoError
from pipeline.memory import frontmatter
from pipeline.memory.layout import GLOBAL_SCOPE, INDEX, PROJECTS_DIR, SUMMARY, is_scope, is_topic_path
from pipeline.memory.repository import Commit, MemoryRepo
from pipeline.memory.validate import list_scope


@dataclass(frozen=True)
class TopicInfo:
    path: str
    name: str
    type: str
    description: str
    updated: str
    sources: int


@dataclass(frozen=True)
class ScopeView:
    scope: str
    summary: str
    index: str
    topics: list[TopicInfo]
    inputs: int


def scopes(repo: MemoryRepo) -> list[str]:
    """The scopes in the working tree: ``global`` first, then the projects by key."""
    out = [GLOBAL_SCOPE] if (repo.path / GLOBAL_SCOPE).is_dir() else []
    projects = repo.path / PROJECTS_DIR
    if projects.is_dir() and not projects.is_symlink():
        out += sorted(
            f"{PROJECTS_DIR}/{p.name}"
            for p in projects.iterdir()
            if p.is_dir() and not p.is_symlink() and is_scope(f"{PROJECTS_DIR}/{p.name}")
        )
    return out


def _read(path: Path) -> str:
    if not path.is_file() or path.is_symlink():
        return ""
    return path.read_text(encoding="utf-8", errors="replace")


def view(repo: MemoryRepo, scope: str) -> ScopeView:
    if not is_scope(scope):
        raise MemoryRepoError(f"not a scope: {scope!r} (see `memd memories show`)")
    folder = repo.path.joinpath(*scope.split("/"))
    if not folder.is_dir() or folder.is_symlink():
        raise MemoryRepoError(f"no scope {scope} in {repo.path}")
    listing = list_scope(folder)
    topics = []
    inputs = 0
    for rel in listing.files:
        if rel.startswith("rollout_summaries/"):
            inputs += 1
        if not is_topic_path(rel):
            continue
        try:
            meta = frontmatter.parse(_read(folder / rel)).meta
        except frontmatter.FrontmatterError:
            topics.append(TopicInfo(rel, rel, "?", "(no valid frontmatter)", "", 0))
            continue
        updated = meta.updated.isoformat() if meta.updated else ""
        topics.append(TopicInfo(rel, meta.name, meta.type, meta.description, updated, len(meta.sources)))
    return ScopeView(scope, _read(folder / SUMMARY), _read(folder / INDEX), topics, inputs)


def topic_text(repo: MemoryRepo, scope: str, name: str) -> str:
    view(repo, scope)  # checks the scope
    rel = name if name.endswith(".md") else f"{name}.md"
    if rel.startswith("/") or ".." in rel.split("/"):
        raise MemoryRepoError(f"not a file of {scope}: {name}")
    path = repo.path.joinpath(*scope.split("/"), *rel.split("/"))
    if not path.is_file() or path.is_symlink():
        raise MemoryRepoError(f"no file {rel} in {scope}")
    return _read(path)


async def history(repo: MemoryRepo, scope: str | None = None, *, limit: int = 20) -> list[Commit]:
    if scope is not None and not is_scope(scope):
        raise MemoryRepoError(f"not a scope: {scope!r}")
    if not (repo.path / ".git").is_dir():
        return []
    return await repo.log(scope, limit=limit)
