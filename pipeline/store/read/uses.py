"""Memory use: uses per scope and topic, live extracts, and the helped and misled verdicts agents gave
(open flags: ``pipeline.store.read.flags``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.store.read.rows import Rows
from pipeline.store.read.values import in_list
from pipeline.vocabulary import (
    Verdict,
)

USE_SCOPES_SQL = "SELECT DISTINCT scope FROM memory_uses WHERE used_at >= :since"
"""The scopes memory was used from since ``:since``."""

TOPIC_USES_SQL = (
    "SELECT scope, file, count(*) AS uses FROM memory_uses WHERE used_at >= :since GROUP BY scope, file"
)
"""How often each file was used since ``:since`` (`memd mcp` ranks search results by it)."""
TOPIC_SESSIONS_SQL = (
    "SELECT scope, file, count(DISTINCT transcript_id) AS n FROM memory_uses WHERE used_at >= :since "
    "GROUP BY scope, file"
)
"""How many sessions read each file since ``:since`` (publishing orders a scope's topics by it)."""


def topic_uses(rows: Rows, since: datetime) -> list[tuple[str, str, int]]:
    """(scope, file, uses) of every file used since ``since``."""
    return [
        (str(r["scope"]), str(r["file"]), int(r["uses"]))
        for r in rows.all(TOPIC_USES_SQL, {"since": rows.time(since)})
    ]


def topic_sessions(rows: Rows, since: datetime) -> dict[str, int]:
    """``<scope>/<file>`` -> how many sessions read that file since ``since``."""
    found = rows.all(TOPIC_SESSIONS_SQL, {"since": rows.time(since)})
    return {f"{r['scope']}/{r['file']}": int(r["n"]) for r in found}


def scope_usage_sql(projects: int | None, not_topics: frozenset[str]) -> str:
    """One scope's (``:scope``) figures since ``:since``: how many sessions are its own (those of
    its ``projects`` projects, bound as ``:p0``, ``:p1``...; every session for None, the global
    scope) and how many others used its memory; its uses and last use; the distinct sessions that
    read a topic file or were given a file of ``not_topics`` (the index, a recall block); the
    distinct topic files read."""

    def own(t: str, project: str) -> str:
        active = f"{t}.last_activity IS NOT NULL AND {t}.last_activity >= :since"
        if projects is None:
            return active
        if projects == 0:
            return "1 = 0"
        listed = ", ".join(f":p{i}" for i in range(projects))
        return f"{project} IN ({listed}) AND {active}"

    given = f"u.file IN ({in_list(not_topics)})"
    theirs = own("s", "coalesce(s.project, '')")
    return (
        # The count searches the index by project. A use's session without a project (NULL) is not
        # the scope's own: its NOT must be true, never NULL.
        f"SELECT (SELECT count(*) FROM transcripts t WHERE {own('t', 't.project')}) AS own_sessions, "
        f"count(DISTINCT CASE WHEN NOT ({theirs}) THEN u.transcript_id END) AS other_sessions, "
        "count(*) AS uses, max(u.used_at) AS last_used_at, "
        f"count(DISTINCT CASE WHEN NOT {given} THEN u.transcript_id END) AS reading, "
        f"count(DISTINCT CASE WHEN {given} THEN u.transcript_id END) AS given, "
        f"count(DISTINCT CASE WHEN NOT {given} THEN u.file END) AS topics_read "
        "FROM memory_uses u LEFT JOIN transcripts s ON s.id = u.transcript_id "
        "WHERE u.scope = :scope AND u.used_at >= :since"
    )


LIVE_MEMORIES_SQL = (
    "SELECT scope, count(*) AS live, sum(CASE WHEN use_count > 0 THEN 1 ELSE 0 END) AS used, "
    "coalesce(sum(use_count), 0) AS use_count, max(last_used_at) AS last_used_at "
    "FROM stage1_outputs WHERE superseded_by IS NULL AND forgotten_at IS NULL GROUP BY scope"
)

_TALLIED = (Verdict.HELPED.value, Verdict.MISLED.value)

SCOPE_VERDICTS_SQL = (
    "SELECT scope, verdict, count(*) AS n FROM memory_feedback "
    f"WHERE verdict IN ({in_list(_TALLIED)}) AND created_at >= :since GROUP BY scope, verdict"
)
"""How often agents said a scope's topics helped or misled them since ``:since`` (``memory_feedback``:
recorded beside the hit rate)."""

TOPIC_VERDICTS_SQL = (
    "SELECT verdict, count(*) AS n FROM memory_feedback "
    f"WHERE scope = :scope AND file = :file AND verdict IN ({in_list(_TALLIED)}) AND created_at >= :since "
    "GROUP BY verdict"
)
"""The same for one topic (its page)."""

TOPIC_USE_SQL = (
    "SELECT count(*) AS uses, max(used_at) AS last_used_at FROM memory_uses "
    "WHERE scope = :scope AND file = :file AND used_at >= :since"
)
"""One topic's uses since ``:since`` (its page)."""


def tally(rows: list[dict[str, Any]]) -> dict[str, int]:
    """``helped`` and ``misled`` counted, from the rows of ``SCOPE_VERDICTS_SQL`` or ``TOPIC_VERDICTS_SQL``."""
    out = dict.fromkeys(_TALLIED, 0)
    for r in rows:
        out[str(r["verdict"])] += int(r["n"])
    return out
