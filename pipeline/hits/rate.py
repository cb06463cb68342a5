"""The published-files index and the per-scope hit rate, read from the store's read model.

Standard library only: ``summarize`` runs the read model's aggregates (``pipeline.store.read``)
through whichever reader it is given, ``sqlite3`` for ``memd status`` or SQLAlchemy for
``usage_summary``, so both see the same figures. It reads a few rows per scope, never one per
session.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from pipeline.clock import parse_time
from pipeline.frozen import frozen_by_position
from pipeline.layout import GLOBAL_SCOPE, NOT_TOPICS
from pipeline.store.read.keys import KV_SQL
from pipeline.store.read.rows import Rows
from pipeline.store.read.sessions import PROJECTS_SINCE_SQL
from pipeline.store.read.uses import USE_SCOPES_SQL, scope_usage_sql
from pipeline.store.read.values import json_value

INDEX_KEY = "publish.index"
"""kv: what ``publish_all`` published where (path -> scope and file; each topic's sources)."""
RECALL_FILE = "<recall>"
"""The ``memory_uses.file`` of a session that was given a ``memd recall`` block."""
NOT_TOPIC_USES = NOT_TOPICS | {RECALL_FILE}
"""The ``memory_uses.file`` values that are not a topic file read (the index, the digest, a recall)."""
WINDOW_DAYS = 30


@frozen_by_position
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


@frozen_by_position
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
    uses: int
    """The scope's memory uses since ``since``."""
    last_used_at: datetime | None

    @property
    def hit_rate(self) -> float | None:
        return None if self.sessions == 0 else self.sessions_reading / self.sessions


def summarize(
    rows: Rows,
    now: datetime,
    *,
    window_days: int = WINDOW_DAYS,
) -> list[ScopeUsage]:
    """Per published scope (or scope used in the window): how many of the sessions since it was
    published read its memory (on either reader: ``pipeline.store.read.rows``)."""
    from pipeline.projects import scope_for  # reads a project's .git/config: only with projects

    index_rows = rows.all(KV_SQL, {"key": INDEX_KEY})
    index = PublishedIndex.from_kv(json_value(index_rows[0]["value"]) if index_rows else None)
    window_start = now - timedelta(days=window_days)
    start = {"since": rows.time(window_start)}
    used = {r["scope"] for r in rows.all(USE_SCOPES_SQL, start)}
    projects_of: dict[str, list[str]] = {}
    for r in rows.all(PROJECTS_SINCE_SQL, start):
        project = r["project"] or ""
        projects_of.setdefault(scope_for(project), []).append(project)
    summary = []
    for scope in sorted(set(index.first_published) | used):
        since = max(window_start, index.first_published.get(scope, window_start))
        params: dict[str, Any] = {"scope": scope, "since": rows.time(since)}
        projects = None if scope == GLOBAL_SCOPE else sorted(projects_of.get(scope, []))
        params.update({f"p{i}": p for i, p in enumerate(projects or ())})
        (row,) = rows.all(
            scope_usage_sql(None if projects is None else len(projects), NOT_TOPIC_USES), params
        )
        summary.append(
            ScopeUsage(
                scope=scope,
                since=since,
                sessions=int(row["own_sessions"]) + int(row["other_sessions"]),
                sessions_reading=int(row["reading"]),
                sessions_given=int(row["given"]),
                topics_published=sum(1 for key in index.sources if key.startswith(scope + "/")),
                topics_read=int(row["topics_read"]),
                uses=int(row["uses"]),
                last_used_at=parse_time(row["last_used_at"]),
            )
        )
    return summary
