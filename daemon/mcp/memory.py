"""The memory as the tools see it: the session's project and scope (resolved once, as memd
resolves a session's project), the topics of the working tree it may see (its own project's and
the global scope's, never another project's), and a search index kept fresh (built again when a
topic file changed or the day turned)."""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from pipeline.clock import Clock
from pipeline.layout import GLOBAL_SCOPE
from pipeline.search.corpus import Corpus, Topic
from pipeline.search.rank import Hit, Index, visible, visible_scopes

OTHER_PROJECT = "a session sees only its own project's memory and the global one"
"""Why `memory_get` refuses another project's id (memd never shows one project's memory to another)."""
RESCAN_S = 2.0
"""How long the working tree's listing is trusted before its files are looked at again."""


@dataclass(frozen=True)
class Session:
    cwd: str
    project: str | None
    scope: str
    """The project's scope (``global`` outside any project)."""


class Memory:
    def __init__(self, memory_dir: Path, cwd: Path, clock: Clock) -> None:
        self.memory_dir = memory_dir
        self.cwd = cwd
        self.clock = clock
        self.corpus = Corpus(memory_dir)
        self._lock = threading.Lock()
        self._index: Index | None = None
        self._built: tuple[int, date] | None = None
        self._session: Session | None = None
        self._scanned: float | None = None
        self._topics: list[Topic] = []

    def session(self) -> Session:
        with self._lock:
            if self._session is None:
                self._session = _resolve(self.memory_dir, str(self.cwd))
            return self._session

    def today(self) -> date:
        return self.clock.now().date()

    def index(self) -> Index:
        """The index of the working tree as it was at most ``RESCAN_S`` ago (a burst of calls looks
        at the files once), of the topics this session may see."""
        own = self.session().scope
        with self._lock:
            now = self.clock.monotonic()
            if self._index is None or self._scanned is None or now - self._scanned >= RESCAN_S:
                self._topics = self.corpus.topics(visible_scopes(own))  # another project's is never read
                self._scanned = now
            key = (self.corpus.generation, self.today())
            if self._index is None or self._built != key:
                self._index = Index(visible(self._topics, own), today=key[1])
                self._built = key
            return self._index

    def scopes(self, which: str) -> tuple[str, Collection[str]]:
        """The session's own scope and the scopes ``which`` ("project", "global", "all": both)
        searches; never another project's."""
        own = self.session().scope
        if which == "project":
            return own, {own}
        if which == "global":
            return own, {GLOBAL_SCOPE}
        return own, visible_scopes(own)

    def search(self, query: str, which: str, limit: int, uses: dict[str, int]) -> list[Hit]:
        own, scopes = self.scopes(which)
        index = self.index()
        return index.search(query, own_scope=own, scopes=scopes, limit=limit, uses=uses)

    def get(self, ids: Sequence[str]) -> list[tuple[str, Topic | None, str]]:
        """Each id with its topic, or None and why not (no such memory, or one a search never offers)."""
        from pipeline.projects.scopes import ScopeNotFound, topic_id

        own, mine = self.scopes("all")
        index = self.index()
        known = {t.scope for t in index.topics}
        out: list[tuple[str, Topic | None, str]] = []
        for raw in ids:
            try:
                parsed = topic_id(raw.strip(), known=known)
            except (ScopeNotFound, ValueError) as exc:
                out.append((raw, None, str(exc)))
                continue
            name = f"{parsed.scope}/{parsed.file}"
            if parsed.scope not in mine:  # said alike whether it exists or not
                out.append((raw, None, f"{name} is another project's memory: {OTHER_PROJECT}"))
                continue
            if name in index.superseded:
                out.append(
                    (
                        raw,
                        None,
                        f"{name} is out of date (expired, or replaced by a newer memory): search again",
                    )
                )
                continue
            topic = self.corpus.read(parsed.scope, parsed.file)
            out.append((raw, topic, "" if topic is not None else f"no memory {name}"))
        return out


def _resolve(memory_dir: Path, cwd: str) -> Session:
    from pipeline.projects import resolve_project, scope_for, scope_for_path

    project = resolve_project(cwd)
    scope = scope_for(project)
    if project and not (memory_dir / scope).is_dir() and (memory_dir / scope_for_path(project)).is_dir():
        scope = scope_for_path(project)  # keyed by origin now, not moved yet (the next run moves it)
    return Session(cwd=cwd, project=project, scope=scope)
