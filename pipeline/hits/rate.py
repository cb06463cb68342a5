"""Usage arithmetic without the state store: the published-files index and the per-scope hit rate.

Standard library only, so ``memd status`` (which reads the store with ``sqlite3``) can compute the
same figures from its own rows: pass it the ``publish.index`` kv value, the ``memory_uses`` rows and
the sessions (``transcripts``: id, project, last_activity) of the window.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pipeline.memory.layout import GLOBAL_SCOPE, NOT_TOPICS
from pipeline.projects import scope_for

INDEX_KEY = "publish.index"
"""kv: what ``publish_all`` published where (path -> scope and file; each topic's sources)."""
RECALL_FILE = "<recall>"
"""The ``memory_uses.file`` of a session that was given a ``memd recall`` block."""
NOT_TOPIC_USES = NOT_TOPICS | {RECALL_FILE}
"""The ``memory_uses.file`` values that are not a topic file read (the index, the digest, a recall)."""
WINDOW_DAYS = 30


@dataclass(frozen=True)
class UseRow:
    scope: str
    file: str
    transcript_id: int | None
    used_at: datetime


@dataclass(frozen=True)
class SessionRow:
    id: int
    project: str | None
    last_activity: datetime | None


@dataclass(frozen=True)
class PublishedIndex:
    files: dict[str, tuple[str, str]]
    sources: dict[str, tuple[str, ...]]
    first_published: dict[str, datetime]

    @classmethod
    def from_kv(cls, value: Any) -> PublishedIndex:
        value = value if isinstance(value, dict) else {}
        files = {
            str(path): (str(entry[0]), str(entry[1]))
            for path, entry in (value.get("files") or {}).items()
            if isinstance(entry, list | tuple) and len(entry) == 2
        }
        sources = {
            str(k): tuple(str(s) for s in v)
            for k, v in (value.get("sources") or {}).items()
            if isinstance(v, list)
        }
        first: dict[str, datetime] = {}
        for scope, iso in (value.get("first_published") or {}).items():
            try:
                first[str(scope)] = datetime.fromisoformat(str(iso))
            except ValueError:
                continue
        return cls(files=files, sources=sources, first_published=first)

    def lookup(self, path: str, cwd: str | None = None) -> tuple[str, str] | None:
        """The (scope, file) of a published path; a relative path also matches a unique published suffix."""
        raw = os.path.expanduser(path.strip().strip("'\""))
        if os.path.isabs(raw):
            return self.files.get(os.path.normpath(raw))
        if cwd and (hit := self.files.get(os.path.normpath(os.path.join(cwd, raw)))):
            return hit
        tail = "/" + os.path.normpath(raw)
        matches = {entry for published, entry in self.files.items() if published.endswith(tail)}
        return matches.pop() if len(matches) == 1 else None


@dataclass(frozen=True)
class ScopeUsage:
    scope: str
    since: datetime
    """The window's start: ``window_days`` ago, or the scope's first publish when later."""
    sessions: int
    """Sessions of the scope's project active since ``since`` (every session for ``global``)."""
    sessions_reading: int
    """Of those, sessions that used at least one of the scope's topic files (read it, or had the
    agent load it as relevant): the hits."""
    sessions_given: int
    """Sessions that were given the scope's index or digest (a recall block, an index read or load)."""
    topics_published: int
    topics_read: int
    last_used_at: datetime | None

    @property
    def hit_rate(self) -> float | None:
        return None if self.sessions == 0 else self.sessions_reading / self.sessions


def summarize(
    index_value: Any,
    uses: Sequence[UseRow],
    sessions: Sequence[SessionRow],
    now: datetime,
    *,
    window_days: int = WINDOW_DAYS,
) -> list[ScopeUsage]:
    """Per published scope: how many of the sessions since it was published read its memory."""
    index = PublishedIndex.from_kv(index_value)
    window_start = now - timedelta(days=window_days)
    uses = [u for u in uses if u.used_at >= window_start]
    sessions = [s for s in sessions if s.last_activity is not None and s.last_activity >= window_start]
    # Grouped once (a scope per distinct project, not per session): `memd status` runs this on
    # every session of the window.
    scope_of = {project: scope_for(project) for project in {s.project for s in sessions}}
    sessions_of: dict[str, list[SessionRow]] = {}
    for s in sessions:
        sessions_of.setdefault(scope_of[s.project], []).append(s)
    uses_of: dict[str, list[UseRow]] = {}
    for u in uses:
        uses_of.setdefault(u.scope, []).append(u)
    scopes = sorted(set(index.first_published) | set(uses_of))
    summary = []
    for scope in scopes:
        since = max(window_start, index.first_published.get(scope, window_start))
        candidates = sessions if scope == GLOBAL_SCOPE else sessions_of.get(scope, [])
        in_scope = {s.id for s in candidates if s.last_activity is not None and s.last_activity >= since}
        scope_uses = [u for u in uses_of.get(scope, []) if u.used_at >= since]
        reading = {
            u.transcript_id
            for u in scope_uses
            if u.file not in NOT_TOPIC_USES and u.transcript_id is not None
        }
        given = {
            u.transcript_id for u in scope_uses if u.file in NOT_TOPIC_USES and u.transcript_id is not None
        }
        summary.append(
            ScopeUsage(
                scope=scope,
                since=since,
                sessions=len(in_scope | reading | given),
                sessions_reading=len(reading),
                sessions_given=len(given),
                topics_published=sum(1 for key in index.sources if key.startswith(scope + "/")),
                topics_read=len({u.file for u in scope_uses if u.file not in NOT_TOPIC_USES}),
                last_used_at=max((u.used_at for u in scope_uses), default=None),
            )
        )
    return summary
