"""Usage: which memd memories later sessions actually read, and the per-scope hit rate.

The scanner records on each transcript the memd files the session read (a read tool call, or a
shell command on the path) and whether it was given a ``memd recall`` block
(``Transcript.memory_reads``); it calls ``record_memory_uses`` with them. A read of a topic file
bumps ``use_count`` and ``last_used_at`` of the extracts in the topic's ``sources``, which feeds
``max_unused_days`` retention; so does a topic file the agent itself loaded into the session as
relevant (``via="injected"``, e.g. a Claude Code memory attachment). A read or load of an index
(``MEMORY.md``, ``memory_summary.md``) and a recall block are recorded as "given" only: every memory
of the scope is in them (Claude Code loads ``MEMORY.md`` into every session), so they say nothing
about any one memory and are not hits.

Published paths are looked up in the index ``publish_all`` keeps in kv (``publish.index``).
"""

from __future__ import annotations

from datetime import datetime

from pipeline.hits.rate import (
    INDEX_KEY,
    NOT_TOPIC_USES,
    RECALL_FILE,
    WINDOW_DAYS,
    PublishedIndex,
    ScopeUsage,
    summarize,
)
from pipeline.projects import ProjectResolver, scope_for
from pipeline.store import Store, kv
from pipeline.store.hits import Use, record_uses, transcript_project
from pipeline.store.read.rows import on_store
from pipeline.transcript import Transcript

__all__ = ["INDEX_KEY", "RECALL_FILE", "ScopeUsage", "record_memory_uses", "usage_summary"]


async def record_memory_uses(
    store: Store, transcript_row_id: int, transcript: Transcript, now: datetime
) -> int:
    """Record the memd memories ``transcript`` read or was given; returns how many uses were new.

    Idempotent: a transcript scanned again (its reads are cumulative) adds nothing twice.
    """
    reads = tuple(transcript.memory_reads)
    if not reads:
        return 0
    index = PublishedIndex.from_kv(await kv.get(store, INDEX_KEY))
    fallback = transcript.started_at or transcript.last_activity or now
    uses: list[Use] = []
    recall_scope: str | None = None
    for read in reads:
        when = read.timestamp or fallback
        if read.via == "recall":
            if recall_scope is None:
                recall_scope = await _session_scope(store, transcript_row_id, transcript)
            uses.append(Use(scope=recall_scope, file=RECALL_FILE, used_at=when))
            continue
        entry = index.lookup(read.path, transcript.cwd)
        if entry is None:
            continue
        scope, file = entry
        sources = () if file in NOT_TOPIC_USES else index.sources.get(f"{scope}/{file}", ())
        uses.append(Use(scope=scope, file=file, used_at=when, sources=sources))
    if not uses:
        return 0
    return await record_uses(store, transcript_row_id, uses)


async def _session_scope(store: Store, transcript_row_id: int, transcript: Transcript) -> str:
    project = await transcript_project(store, transcript_row_id)
    if project is None and transcript.cwd:
        project = ProjectResolver().resolve(transcript.cwd)
    return scope_for(project)


async def usage_summary(store: Store, now: datetime, *, window_days: int = WINDOW_DAYS) -> list[ScopeUsage]:
    """Per published scope: how many of the sessions since it was published read its memory."""
    return await on_store(store, lambda rows: summarize(rows, now, window_days=window_days))
