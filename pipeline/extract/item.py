"""One extraction item, either side of the model call: prepare (parse, slice, render, redact, build)
and finish (validate, redact again, store with provenance).

``prepare`` settles the items that need no call itself (transcript gone, unreadable, nothing new)
and returns None for them; otherwise a ``Prepared`` carries everything ``finish`` needs, so the
same code serves direct calls and Message Batches (whose ``Prepared`` is stored as JSON with the
batch and rebuilt after a restart).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

import structlog

from pipeline.extract.compact import render
from pipeline.extract.evidence import Turns, previous_evidence, transcript_of, verified
from pipeline.extract.request import ExtractPrompts, SessionInfo, build_params, user_text
from pipeline.extract.schema import Stage1Result, slugify
from pipeline.memory.inputs import tool_only_note
from pipeline.projects import has_ignore_file, scope_for
from pipeline.scan.eligibility import facts_of, skip_reason
from pipeline.settings import Settings
from pipeline.sources.base import ParseResult
from pipeline.store import Store, stage1
from pipeline.store import jobs as jobs_
from pipeline.store.jobs import Job
from pipeline.vocabulary import JobKind, TranscriptState

log = structlog.get_logger(__name__)

UNREADABLE_RETRY = timedelta(minutes=30)

Loader = Callable[[str, Path, int | None], ParseResult]
"""``load(source, path, max_bytes)``: the whole transcript with its conversation, read no further
than ``max_bytes`` (the size the scan saw; None when it saw none)."""


class RedactionResultLike(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def counts(self) -> Mapping[str, int]: ...


class RedactorLike(Protocol):
    """What phase 1 needs of ``pipeline.redaction.Redactor``."""

    def redact(self, text: str) -> RedactionResultLike: ...


def parse_full(source: str, path: Path, max_bytes: int | None = None) -> ParseResult:
    """A full parse (with the conversation) by the source's adapter, no further than ``max_bytes``:
    bytes written after the scan wait for the next scan, and a file swapped for a FIFO or a device
    since is unreadable with its reason (the adapter opens it through ``pipeline.safefile``)."""
    from pipeline.sources.registry import adapter_for

    adapter = adapter_for(source)
    result: ParseResult = adapter.parse(path, 0, None, with_items=True, max_bytes=max_bytes)
    return result


@dataclass(frozen=True)
class Prepared:
    job_id: int
    job_key: str
    owner: str
    attempts: int
    invalid_before: int
    transcript_id: int
    source: str
    session_id: str
    project: str | None
    scope: str
    started_at: str | None
    last_activity: str | None
    previous_id: int | None
    items_start: int
    items_end: int
    range_start: int
    range_end: int
    rendered_tokens: int
    items_omitted: int
    input_redactions: dict[str, int]
    prompt_hash: str
    params: dict[str, Any]
    evidence_turns: list[list[str]] = field(default_factory=list)
    """The user's and the agent's turns as sent, normalised (``pipeline.extract.evidence.Turns``):
    what the evidence check needs once the request's text is gone (a batch keeps no prompt)."""

    def job(self) -> Job:
        return Job(
            self.job_id, JobKind.EXTRACT, self.job_key, {}, self.owner, self.last_lease(), self.attempts
        )

    @staticmethod
    def last_lease() -> datetime:
        return datetime.fromtimestamp(0, UTC)  # informational only: completions are fenced by owner

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> Prepared:
        return Prepared(**dict(value))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


@dataclass(frozen=True)
class Settled:
    """An item that needs no call: ``outcome`` is failed, unreadable, retry, unchanged or skipped
    (the user opted out, or a rule now leaves the session out, since it was queued)."""

    outcome: Literal["failed", "unreadable", "retry", "unchanged", "skipped"]
    reason: str
    transcript_id: int | None = None
    offset: int = 0


async def build(
    store: Store,
    settings: Settings,
    key: str,
    *,
    prompts: ExtractPrompts,
    redactor: RedactorLike,
    load: Loader,
    job: Job | None = None,
) -> Prepared | Settled:
    """The request for the transcript with id ``key`` (no side effects), or why none is needed."""
    try:
        tid = int(key)
    except ValueError:
        return Settled("failed", f"bad job key {key!r}")
    row = await stage1.get_transcript(store, tid)
    if row is None:
        return Settled("failed", "transcript no longer known")
    result = await asyncio.to_thread(load, row.source, Path(row.path), row.size)
    if result.problem is not None or result.transcript is None:
        reason = result.problem.reason if result.problem is not None else "no transcript"
        return Settled("retry" if result.retryable else "unreadable", reason, tid)
    transcript = result.transcript
    # The last look before the text leaves the machine: an opt-out made, or a rule changed, since
    # the session was queued counts.
    ignored: bool = row.project is not None and await asyncio.to_thread(has_ignore_file, row.project)
    facts = facts_of(
        transcript, project=row.project, project_opted_out=ignored, last_activity=transcript.last_activity
    )
    if (skip := skip_reason(facts, settings.memories)) is not None:
        return Settled("skipped", skip, tid)
    items = transcript.items
    previous = await stage1.current_output(store, tid)
    start = 0
    # The scan resets the extract offset of a file it read again from byte 0 (replaced, shrunk,
    # rewritten): the previous extract covered other bytes, so the whole file is extracted again
    # (the new extract still supersedes the old one).
    read_again = previous is not None and row.extracted_offset < previous.range_end
    if previous is not None and not read_again and 0 < previous.items_end <= len(items):
        start = previous.items_end
    new_items = items[start:]
    if previous is not None and not new_items:
        return Settled("unchanged", "nothing new since the last extract", tid, result.new_offset)

    counts: Counter[str] = Counter()

    def clean(block: str) -> str:  # each kept block whole, before it is quoted (compact)
        out = redactor.redact(block)
        counts.update(dict(out.counts))
        return out.text

    rendered = render(new_items, settings.memories.render_token_budget, clean=clean)
    if start:
        coverage = f"the part after the previous extract: items {start + 1}-{len(items)} of {len(items)}"
    else:
        coverage = f"the whole session ({len(items)} items)"
    session = SessionInfo(
        row.source,
        row.project,
        row.session_id or transcript.session_id,
        transcript.started_at,
        transcript.last_activity,
    )
    text = user_text(
        prompts,
        session,
        transcript=rendered.text,
        coverage=coverage,
        render_note=rendered.note,
        previous_summary=previous.rollout_summary if previous is not None and start else None,
    )
    redacted = redactor.redact(text)
    counts.update(dict(redacted.counts))
    return Prepared(
        job_id=job.id if job else 0,
        job_key=key,
        owner=job.owner if job else "",
        attempts=job.attempts if job else 0,
        invalid_before=int(job.payload.get("invalid_outputs", 0) or 0) if job else 0,
        transcript_id=tid,
        source=row.source,
        session_id=session.session_id or "",
        project=row.project,
        scope=scope_for(row.project),
        started_at=_iso(transcript.started_at),
        last_activity=_iso(transcript.last_activity),
        previous_id=previous.id if previous is not None else None,
        items_start=start,
        items_end=len(items),
        range_start=previous.range_end if previous is not None and start else 0,
        range_end=result.new_offset,
        rendered_tokens=rendered.tokens,
        items_omitted=rendered.items_omitted,
        input_redactions={k: v for k, v in counts.items() if v},
        prompt_hash=prompts.hash,
        params=build_params(prompts, model=settings.llm.extract_model, user=redacted.text),
        evidence_turns=[list(p) for p in Turns.of(transcript_of(redacted.text)).pairs],
    )


async def prepare(
    store: Store,
    settings: Settings,
    job: Job,
    *,
    now: datetime,
    prompts: ExtractPrompts,
    redactor: RedactorLike,
    load: Loader,
) -> Prepared | Settled:
    """``build`` for a claimed job, settling (failing, deferring, completing) the job when no call is needed."""
    built = await build(store, settings, job.key, prompts=prompts, redactor=redactor, load=load, job=job)
    if isinstance(built, Prepared):
        return built
    tid = built.transcript_id
    if built.outcome == "retry":
        await jobs_.retry_later(store, job, now=now, not_before=now + UNREADABLE_RETRY, reason=built.reason)
    elif built.outcome == "unchanged" and tid is not None:
        await stage1.mark_extracted(store, job, transcript_id=tid, now=now, extracted_offset=built.offset)
    elif built.outcome == "skipped" and tid is not None:
        await stage1.skip_extract(store, job, transcript_id=tid, now=now, reason=built.reason)
    else:
        state = TranscriptState.UNREADABLE if built.outcome == "unreadable" else TranscriptState.FAILED
        await stage1.fail_extract(store, job, transcript_id=tid, now=now, reason=built.reason, state=state)
    return built


def check_evidence(
    result: Stage1Result, prep: Prepared, previous: list[dict[str, Any]] | None = None
) -> list[str]:
    """Each memory's evidence as the transcript sent bears it out (``pipeline.extract.evidence``)."""
    turns = Turns([(a, b) for a, b in prep.evidence_turns])
    before = previous_evidence(previous or [])
    return [verified(m.evidence, m.evidence_quote, turns, before) for m in result.memories]


def redact_result(
    result: Stage1Result, redactor: RedactorLike, evidence: list[str] | None = None
) -> tuple[dict[str, Any], dict[str, int]]:
    """Every string of the output through the redactor; the stored fields and the counts by rule.
    ``evidence`` is each memory's checked evidence (None: what the model claimed)."""
    counts: Counter[str] = Counter()

    def r(text: str) -> str:
        out = redactor.redact(text)
        counts.update(dict(out.counts))
        return out.text

    memories = [
        {
            "type": m.type,
            "name": r(m.name),
            "description": r(m.description),
            "body": r(m.body),
            "why": r(m.why),
            "how_to_apply": r(m.how_to_apply),
            "dates": list(m.dates),
            "key": r(m.key),
            "value": r(m.value),
            "evidence": evidence[i] if evidence is not None else m.evidence,
            "evidence_claimed": m.evidence,
            "evidence_quote": r(m.evidence_quote),
        }
        for i, m in enumerate(result.memories)
    ]
    note = tool_only_note(memories)
    raw = r(result.raw_memory)
    fields = {
        "rollout_summary": r(result.rollout_summary),
        "raw_memory": (raw.rstrip() + "\n\n" + note).strip() if note else raw,
        "rollout_slug": slugify(r(result.rollout_slug)),
        "memories": memories,
    }
    return fields, {k: v for k, v in counts.items() if v}


def _parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


async def finish(
    store: Store,
    prep: Prepared,
    result: Stage1Result,
    *,
    now: datetime,
    redactor: RedactorLike,
    model: str,
    usage: dict[str, Any],
) -> int:
    """Store the redacted extract with its provenance, supersede the previous one, complete the job."""
    previous = None
    if prep.previous_id is not None:
        rows = await stage1.outputs_for(store, prep.transcript_id)
        previous = next((row.memories for row in rows if row.id == prep.previous_id), None)
    fields, output_counts = redact_result(result, redactor, check_evidence(result, prep, previous))
    row = {
        "transcript_id": prep.transcript_id,
        "source": prep.source,
        "session_id": prep.session_id,
        "project": prep.project,
        "scope": prep.scope,
        "range_start": prep.range_start,
        "range_end": prep.range_end,
        "items_start": prep.items_start,
        "items_end": prep.items_end,
        **fields,
        "model": model,
        "usage": {**usage, "rendered_tokens": prep.rendered_tokens, "items_omitted": prep.items_omitted},
        "redactions": {"input": prep.input_redactions, "output": output_counts},
        "session_started_at": _parse_time(prep.started_at),
        "session_last_activity": _parse_time(prep.last_activity),
        "created_at": now,
    }
    new_id = await stage1.save_extract(
        store, prep.job(), now=now, output=row, previous_id=prep.previous_id, extracted_offset=prep.range_end
    )
    log.info(
        "extract_stored",
        transcript_id=prep.transcript_id,
        stage1_id=new_id,
        memories=len(fields["memories"]),
        superseded=prep.previous_id,
    )
    return new_id
