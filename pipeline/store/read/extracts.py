"""A session's extracts as the page shows them: what memd sent about it, and the redactor's counts."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from pipeline.clock import parse_time
from pipeline.store.read.values import json_value

SESSION_EXTRACTS_SQL = (
    "SELECT scope, count(*) AS n, max(forgotten_at) AS forgotten_at, "
    "sum(CASE WHEN forgotten_at IS NULL AND superseded_by IS NULL THEN 1 ELSE 0 END) AS live "
    "FROM stage1_outputs WHERE session_id = :session_id GROUP BY scope ORDER BY scope"
)
"""A session's extracts by scope: how many, how many are live, when it was forgotten."""

SESSION_SENT_SQL = (
    "SELECT id, scope, created_at, model, items_start, items_end, rollout_summary, raw_memory, "
    "memories, redactions, superseded_by, forgotten_at FROM stage1_outputs "
    "WHERE session_id = :session_id ORDER BY id DESC LIMIT :limit"
)
"""A session's extracts, newest first: what memd sent about it (phase 1's output, redacted) and
the redactor's counts (``pipeline.store.stage1`` reads the same rows)."""


class SentExtract(NamedTuple):
    """One extract of a session as the page shows it: the text phase 2 was given, and what the
    redactor replaced by rule (``redacted_in``: in the transcript before the request;
    ``redacted_out``: in the model's answer), never a value."""

    id: int
    scope: str
    created_at: datetime | None
    model: str
    items_start: int
    items_end: int
    summary: str
    notes: str
    memories: tuple[dict[str, Any], ...]
    redacted_in: dict[str, int]
    redacted_out: dict[str, int]
    superseded_by: int | None
    forgotten_at: datetime | None

    @property
    def live(self) -> bool:
        return self.superseded_by is None and self.forgotten_at is None


def redaction_counts(value: Any) -> tuple[dict[str, int], dict[str, int]]:
    """The stored ``redactions`` of an extract as (before the request, in the answer), each rule ->
    count: ``{"input": {...}, "output": {...}}`` as phase 1 records it; an older flat ``{rule: n}``
    counts as before the request."""
    found = json_value(value) or {}
    if not isinstance(found, dict):
        return {}, {}

    def counts(part: Any) -> dict[str, int]:
        if not isinstance(part, dict):
            return {}
        return {str(k): int(v) for k, v in sorted(part.items()) if isinstance(v, int) and v > 0}

    if "input" in found or "output" in found:
        return counts(found.get("input")), counts(found.get("output"))
    return counts(found), {}


def sent_from_row(r: Any) -> SentExtract:
    """A row of ``SESSION_SENT_SQL`` read by name (either backend)."""
    redacted_in, redacted_out = redaction_counts(r["redactions"])
    memories = json_value(r["memories"]) or []
    return SentExtract(
        id=int(r["id"]),
        scope=str(r["scope"]),
        created_at=parse_time(r["created_at"]),
        model=str(r["model"] or ""),
        items_start=int(r["items_start"] or 0),
        items_end=int(r["items_end"] or 0),
        summary=str(r["rollout_summary"] or ""),
        notes=str(r["raw_memory"] or ""),
        memories=tuple(m for m in memories if isinstance(m, dict)) if isinstance(memories, list) else (),
        redacted_in=redacted_in,
        redacted_out=redacted_out,
        superseded_by=None if r["superseded_by"] is None else int(r["superseded_by"]),
        forgotten_at=parse_time(r["forgotten_at"]),
    )
