"""Reading a scope of the memory repository from its working tree (read-only, standard library only).

The layout (``pipeline.layout``): ``global/`` and ``projects/<key>/``, each with
``MEMORY.md`` (the index), ``memory_summary.md`` (the digest), topic files ``*.md`` with a small
YAML-style frontmatter (``pipeline.memory.frontmatter``, read leniently), and the phase-1 inputs
(``rollout_summaries/``, ``raw_memories.md``), which are never published. Symlinks, hidden files
and oversized files are ignored.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from pipeline.frozen import frozen_by_position
from pipeline.layout import GLOBAL_SCOPE, INDEX, NOT_TOPICS, PROJECTS_DIR, SUMMARY
from pipeline.memory import forget_records, frontmatter

TOPIC_MAX_BYTES = 1_000_000


@frozen_by_position
class Topic:
    file: str
    path: Path
    name: str
    description: str
    type: str
    created: date | None
    updated: date | None
    sources: tuple[str, ...]
    expires: date | None
    text: str
    from_tools: bool = False
    """``evidence: tool``: the topic rests on tool output only, and is published marked as such."""
    pinned: bool = False
    """``pinned: true`` in its frontmatter (``memd memories pin``): kept first when an index is cut."""
    uses: int = 0
    """Sessions that read it lately (``pipeline.hits``): the most used are kept next when an index is cut."""
    stale: str | None = None
    """Why it is published marked stale (a cited file changed or is gone), None when it is not."""
    cites: tuple[str, ...] = ()
    """The code lines it rests on (``pipeline.memory.cites``), as its frontmatter says."""

    @property
    def updated_date(self) -> str:
        """The last-updated day (YYYY-MM-DD), from ``updated`` else ``created``; "undated" when neither."""
        day = self.updated or self.created
        return day.isoformat() if day is not None else "undated"

    def expired(self, today: date) -> bool:
        return self.expires is not None and self.expires < today


@frozen_by_position
class ScopeMemory:
    scope: str
    path: Path
    summary: str
    index: str
    topics: tuple[Topic, ...]

    @property
    def empty(self) -> bool:
        return not self.summary.strip() and not self.topics


def scope_dir(memory_dir: Path, scope: str) -> Path:
    return memory_dir.joinpath(*scope.split("/"))


def list_scopes(memory_dir: Path) -> list[str]:
    """The scopes present in the working tree: ``global`` first, then ``projects/<key>`` sorted."""
    scopes: list[str] = []
    if _real_dir(memory_dir / GLOBAL_SCOPE):
        scopes.append(GLOBAL_SCOPE)
    projects = memory_dir / PROJECTS_DIR
    if _real_dir(projects):
        for child in sorted(projects.iterdir()):
            if not child.name.startswith(".") and _real_dir(child):
                scopes.append(f"{PROJECTS_DIR}/{child.name}")
    return scopes


def read_scope(memory_dir: Path, scope: str, *, today: date | None = None) -> ScopeMemory:
    """One scope's summary, index and topic files (newest first); expired topics left out when ``today`` is given."""
    folder = scope_dir(memory_dir, scope)
    topics = []
    if _real_dir(folder):
        forgotten = forget_records.of_scope(forget_records.read(memory_dir), scope)
        for path in sorted(folder.iterdir()):
            topic = read_topic(path)
            if topic is None or (today is not None and topic.expired(today)):
                continue
            if forget_records.hides(forgotten, scope, topic.file, topic.text):
                continue  # a person forgot it (a record of any machine's): never published
            topics.append(topic)
    topics.sort(key=lambda t: (t.updated_date if t.updated_date != "undated" else "", t.file), reverse=True)
    return ScopeMemory(
        scope=scope,
        path=folder,
        summary=_read_small(folder / SUMMARY),
        index=_read_small(folder / INDEX),
        topics=tuple(topics),
    )


def read_topic(path: Path) -> Topic | None:
    """A topic file, or None when ``path`` is not one (not ``*.md``, reserved, hidden, a symlink, too big)."""
    name = path.name
    if not name.endswith(".md") or name in NOT_TOPICS or name.startswith("."):
        return None
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > TOPIC_MAX_BYTES:
            return None
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    meta = frontmatter.parse(text, strict=False).meta
    return Topic(
        file=name,
        path=path,
        name=meta.name or name.removesuffix(".md"),
        description=meta.description,
        type=meta.type,
        created=meta.created,
        updated=meta.updated,
        sources=meta.sources,
        expires=meta.expires,
        text=text,
        from_tools=meta.from_tools,
        pinned=meta.pinned,
        cites=meta.cites,
    )


def _read_small(path: Path) -> str:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > TOPIC_MAX_BYTES:
            return ""
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()
