"""Reading the memory repository for people: its scopes, one scope's memory, its history."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.repository import Commit, MemoryRepo
from pipeline.layout import (
    GLOBAL_SCOPE,
    INDEX,
    PROJECTS_DIR,
    SUMMARY,
    check_file,
    is_scope,
    is_topic_path,
)
from pipeline.memory import frontmatter
from pipeline.memory.listing import list_scope
from pipeline.safefile import UnsafeFile, read_capped

READ_MAX_BYTES = 1_000_000
"""The most of one file shown or searched (memd caps topic files far below this)."""
SEARCH_LIMIT = 200


@dataclass(frozen=True)
class TopicInfo:
    path: str
    name: str
    type: str
    description: str
    updated: str
    sources: int
    pinned: bool = False
    edited: bool = False


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
    """The file's text; empty when it is missing or not a regular file, or too big to show."""
    try:
        return read_capped(path, READ_MAX_BYTES, follow_symlinks=False).decode("utf-8", errors="replace")
    except (OSError, UnsafeFile):
        return ""


@dataclass(frozen=True)
class ScopeBrief:
    scope: str
    topics: int
    inputs: int
    summary: str


def brief(repo: MemoryRepo, scope: str) -> ScopeBrief:
    """A scope at a glance: how many topic files and phase-1 inputs, and its summary (no topic is read)."""
    folder = _folder(repo, scope)
    files = list_scope(folder).files
    topics = sum(1 for rel in files if is_topic_path(rel))
    inputs = sum(1 for rel in files if rel.startswith("rollout_summaries/"))
    return ScopeBrief(scope, topics, inputs, _read(folder / SUMMARY))


def _folder(repo: MemoryRepo, scope: str) -> Path:
    if not is_scope(scope):
        raise MemoryRepoError(f"not a scope: {scope!r} (see `memd memories show`)")
    folder = repo.path.joinpath(*scope.split("/"))
    if not folder.is_dir() or folder.is_symlink():
        raise MemoryRepoError(f"no scope {scope} in {repo.path}")
    return folder


def view(repo: MemoryRepo, scope: str) -> ScopeView:
    folder = _folder(repo, scope)
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
        topics.append(
            TopicInfo(
                rel,
                meta.name,
                meta.type,
                meta.description,
                updated,
                len(meta.sources),
                pinned=meta.pinned,
                edited=meta.edited is not None,
            )
        )
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


async def file_history(repo: MemoryRepo, scope: str, name: str, *, limit: int = 50) -> list[Commit]:
    """The commits that changed one file of ``scope``, newest first."""
    if not is_scope(scope):
        raise MemoryRepoError(f"not a scope: {scope!r}")
    if not (repo.path / ".git").is_dir():
        return []
    try:
        rel = check_file(name)
    except ValueError as exc:
        raise MemoryRepoError(str(exc)) from None
    return await repo.log(scope, limit=limit, file=rel)


async def file_diff(repo: MemoryRepo, scope: str, name: str, base: str | None, target: str) -> str:
    """The change of one file of ``scope`` between two commits (``base`` None: its first version)."""
    if not is_scope(scope):
        raise MemoryRepoError(f"not a scope: {scope!r}")
    try:
        rel = check_file(name)
    except ValueError as exc:
        raise MemoryRepoError(str(exc)) from None
    return await repo.diff_file(scope, rel, base, target)


@dataclass(frozen=True)
class SearchHit:
    scope: str
    path: str
    name: str
    line: str
    """The first line that matches (the file's name or description when only they do)."""


def search(repo: MemoryRepo, query: str, *, limit: int = SEARCH_LIMIT) -> list[SearchHit]:
    """Topic files of every scope whose name, description or text holds ``query`` (any case)."""
    needle = query.strip().casefold()
    hits: list[SearchHit] = []
    if not needle:
        return hits
    for scope in scopes(repo):
        folder = repo.path.joinpath(*scope.split("/"))
        for rel in list_scope(folder).files:
            if not is_topic_path(rel):
                continue
            text = _read(folder / rel)
            if needle not in text.casefold():
                continue
            try:
                parsed = frontmatter.parse(text)
                name, body = parsed.meta.name or rel, parsed.body
            except frontmatter.FrontmatterError:
                name, body = rel, text
            line = next((ln.strip() for ln in body.splitlines() if needle in ln.casefold()), name)
            hits.append(SearchHit(scope, rel, name, line))
            if len(hits) >= limit:
                return hits
    return hits


@dataclass(frozen=True)
class Citation:
    scope: str
    path: str
    name: str


def citing(repo: MemoryRepo, sessions: set[str], *, limit: int = SEARCH_LIMIT) -> list[Citation]:
    """The topic files of every scope whose frontmatter ``sources`` name one of ``sessions``."""
    wanted = {s for s in sessions if s}
    found: list[Citation] = []
    if not wanted:
        return found
    for scope in scopes(repo):
        folder = repo.path.joinpath(*scope.split("/"))
        for rel in list_scope(folder).files:
            if not is_topic_path(rel):
                continue
            text = _read(folder / rel)
            if not any(s in text for s in wanted):  # most files name none: no parse
                continue
            try:
                meta = frontmatter.parse(text).meta
            except frontmatter.FrontmatterError:
                continue
            if wanted & set(meta.sources):
                found.append(Citation(scope, rel, meta.name or rel))
                if len(found) >= limit:
                    return found
    return found
