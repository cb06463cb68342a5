"""The open flag rule, once: a topic an agent called wrong or stale through `memd mcp`
(``memory_feedback``: a verdict of ``FLAG_VERDICTS``) that no consolidation was given yet
(``resolved_run`` unset). Phase 2 takes a scope's open flags (``pipeline.store.notes``), `memd status`
lists the newest, the page shows a topic's.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from pipeline.clock import parse_time
from pipeline.store.read.rows import Rows
from pipeline.store.read.values import in_list
from pipeline.vocabulary import FLAG_VERDICTS

OPEN = f"verdict IN ({in_list(FLAG_VERDICTS)}) AND resolved_run IS NULL"
"""The condition on ``memory_feedback`` of an open flag."""
NEWEST_FIRST = "ORDER BY created_at DESC, id DESC"
OPEN_FLAGS_LIMIT = 50
"""The most `memd status` lists."""
TOPIC_FLAGS_LIMIT = 20
"""The most a topic's page lists."""


class Flag(NamedTuple):
    id: int
    scope: str
    file: str
    verdict: str
    note: str | None
    created_at: datetime


def _flag(r: Any) -> Flag:
    at = parse_time(r["created_at"])
    assert at is not None  # the column is NOT NULL
    return Flag(int(r["id"]), str(r["scope"]), str(r["file"]), str(r["verdict"]), r["note"], at)


_COLUMNS = "SELECT id, scope, file, verdict, note, created_at FROM memory_feedback"


def open_flags(rows: Rows, scope: str | None = None, *, machines: Iterable[str] | None = None) -> list[Flag]:
    """The open flags of ``scope`` (of every scope when None) in the order they were given;
    ``machines``: only those these machines recorded (a shared store's ``global``: this person's)."""
    where, params = OPEN, {}
    if scope is not None:
        where += " AND scope = :scope"
        params["scope"] = scope
    if machines is not None:
        listed = sorted(machines)
        if not listed:
            return []
        where += " AND machine IN ({})".format(", ".join(f":m{i}" for i in range(len(listed))))
        params |= {f"m{i}": m for i, m in enumerate(listed)}
    return [_flag(r) for r in rows.all(f"{_COLUMNS} WHERE {where} ORDER BY id", params)]


def newest_flags(rows: Rows, *, limit: int = OPEN_FLAGS_LIMIT) -> list[Flag]:
    """Every scope's open flags, newest first (`memd status`)."""
    return [
        _flag(r) for r in rows.all(f"{_COLUMNS} WHERE {OPEN} {NEWEST_FIRST} LIMIT :limit", {"limit": limit})
    ]


def topic_flags(rows: Rows, scope: str, file: str) -> list[Flag]:
    """One topic's open flags, newest first (its page)."""
    sql = f"{_COLUMNS} WHERE scope = :scope AND file = :file AND {OPEN} {NEWEST_FIRST} LIMIT :limit"
    return [_flag(r) for r in rows.all(sql, {"scope": scope, "file": file, "limit": TOPIC_FLAGS_LIMIT})]


def flagged_scopes(rows: Rows) -> set[str]:
    """Every scope holding an open flag."""
    return {str(r["scope"]) for r in rows.all(f"SELECT DISTINCT scope FROM memory_feedback WHERE {OPEN}")}
