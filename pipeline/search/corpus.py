"""The topics of every scope, read from the memory repository's working tree as hostile files.

Only what the branch holds is there: a run waiting in the inbox lives on its own ``inbox/<run>``
branch, and a forgotten session's topics were withdrawn from the tree, so neither is ever read.
Every entry is checked without following a symlink: a scope is a real directory named as a scope
(``pipeline.layout.is_scope``), a topic a regular ``*.md`` file that is not the index, the
digest or an input, read with its size learned first and capped (``pipeline.safefile``). The
counts are capped too, so a repository someone else filled cannot make a search slow.

``Corpus.topics()`` reads again only the files whose size, time or inode changed since the last
call; a file that vanished is dropped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from pipeline.layout import GLOBAL_SCOPE, NOT_TOPICS, PROJECTS_DIR, is_scope
from pipeline.memory import forget_records, frontmatter
from pipeline.memory.likeness import ForgottenTopic
from pipeline.projects.scopes import topic_id_text
from pipeline.safefile import UnsafeFile, read_capped

TOPIC_MAX_BYTES = 256_000
"""The most of one topic file read (memd's own caps keep topics far smaller); a larger one is skipped."""
MAX_SCOPES = 2_000
MAX_TOPICS_PER_SCOPE = 1_000
"""Past these a working tree is not memd's: the rest is not read."""


@dataclass(frozen=True)
class Topic:
    scope: str
    file: str
    name: str
    description: str
    type: str
    body: str
    created: date | None
    updated: date | None
    expires: date | None
    sources: tuple[str, ...]
    evidence: str = ""
    """What the frontmatter's ``evidence`` says the topic rests on ("" when not marked)."""

    @property
    def from_tools(self) -> bool:
        """Whether it rests on tool output only (``evidence: tool``): published marked so, and
        returned marked so by ``memd mcp``."""
        return self.evidence == frontmatter.TOOL_EVIDENCE

    @property
    def id(self) -> str:
        """``<scope>/<file>``, as every memd command names a memory."""
        return topic_id_text(self.scope, self.file)

    @property
    def day(self) -> date | None:
        """When it last changed: ``updated``, else ``created``."""
        return self.updated or self.created

    def expired(self, today: date) -> bool:
        return self.expires is not None and self.expires < today


def parse_topic(scope: str, file: str, text: str) -> Topic:
    """A topic from its file's text (a malformed frontmatter reads leniently: what is sound is kept)."""
    parsed = frontmatter.parse(text, strict=False)
    meta = parsed.meta
    return Topic(
        scope=scope,
        file=file,
        name=meta.name or file.removesuffix(".md"),
        description=meta.description,
        type=meta.type,
        body=parsed.body,
        created=meta.created,
        updated=meta.updated,
        expires=meta.expires,
        sources=meta.sources,
        evidence=meta.evidence,
    )


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def scope_dirs(memory_dir: Path) -> Iterator[tuple[str, Path]]:
    """Each scope of the working tree and its folder: ``global`` first, then the projects by key."""
    if _real_dir(memory_dir / GLOBAL_SCOPE):
        yield GLOBAL_SCOPE, memory_dir / GLOBAL_SCOPE
    projects = memory_dir / PROJECTS_DIR
    if not _real_dir(projects):
        return
    try:
        names = sorted(e.name for e in os.scandir(projects) if e.is_dir(follow_symlinks=False))
    except OSError:
        return
    for name in names[:MAX_SCOPES]:
        scope = f"{PROJECTS_DIR}/{name}"
        if is_scope(scope):
            yield scope, projects / name


def _is_topic_name(name: str) -> bool:
    return name.endswith(".md") and name not in NOT_TOPICS and not name.startswith(".")


class Corpus:
    """The memory repository's topics, kept between calls and read again only where files changed."""

    def __init__(self, memory_dir: Path) -> None:
        self.memory_dir = memory_dir
        self._cache: dict[str, tuple[tuple[int, int, int], Topic]] = {}
        self.generation = 0
        """Goes up each time the set of topics or one of them changed (an index built on it is stale)."""

    def topics(self, scopes: Collection[str] | None = None) -> list[Topic]:
        """The topics of the working tree (of ``scopes`` only, when given: the rest is never read)."""
        seen: dict[str, tuple[tuple[int, int, int], Topic]] = {}
        changed = False
        forgotten = forget_records.read(self.memory_dir)  # once per listing, not once per topic
        for scope, folder in scope_dirs(self.memory_dir):
            if scopes is not None and scope not in scopes:
                continue
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            count = 0
            for entry in entries:
                if not _is_topic_name(entry.name) or count >= MAX_TOPICS_PER_SCOPE:
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode) or info.st_size > TOPIC_MAX_BYTES:
                    continue
                count += 1
                key = f"{scope}/{entry.name}"
                signature = (info.st_mtime_ns, info.st_size, info.st_ino)
                cached = self._cache.get(key)
                if cached is not None and cached[0] == signature:
                    seen[key] = cached
                    continue
                topic = self.read(scope, entry.name, forgotten=forgotten)
                if topic is not None:
                    seen[key] = (signature, topic)
                    changed = True
        if changed or seen.keys() != self._cache.keys():
            self.generation += 1
        self._cache = seen
        return [topic for _, topic in seen.values()]

    def read(self, scope: str, file: str, *, forgotten: list[ForgottenTopic] | None = None) -> Topic | None:
        """One topic of ``scope``, or None when ``file`` is not a readable regular topic file there."""
        if not is_scope(scope) or "/" in file or not _is_topic_name(file):
            return None
        folder = self.memory_dir.joinpath(*scope.split("/"))
        if not all(_real_dir(p) for p in ((folder,) if scope == GLOBAL_SCOPE else (folder.parent, folder))):
            return None
        try:
            data = read_capped(folder / file, TOPIC_MAX_BYTES, follow_symlinks=False)
        except (UnsafeFile, OSError):
            return None
        text = data.decode("utf-8", "replace")
        records = forget_records.read(self.memory_dir) if forgotten is None else forgotten
        if forget_records.hides(records, scope, file, text):
            return None  # a person forgot it (a record of any machine's): never answered
        return parse_topic(scope, file, text)
