"""Phase 1 through Message Batches (half price; a background daemon does not mind the latency).

Submitting: claim up to ``max_rollouts_per_run`` jobs, prepare each, and hand them to a batch
owner token (so a cancelled run's ``release_owner`` does not put them back). Record the batch under
a placeholder id with every entry's ``Prepared`` (as JSON, without the request text) and extend the
jobs' claims to ``BATCH_LEASE``, *then* ask the API to create it (``custom_id`` =
``x<job id>-<transcript id>``) and record the id it got. A stop between the two leaves the
placeholder: the next collection looks for the batch among the account's recent ones (one memd does
not know, of the same size, created since) and adopts it, so it is read and paid for once; when
there is none, the batch was never created and its entries go back to the queue.

Collecting (every run, gate or not): for each stored open batch, ask whether it ended; if so read
its results and match them by ``custom_id``: a success is validated and stored like a direct
reply (an invalid one goes back to the queue once, marked, and fails the second time); an entry
the API rejected as invalid fails the item; errored for other reasons, expired, canceled or
missing entries go back to the queue. A restart finds the stored batch and resumes polling.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import structlog

from pipeline.errors import (
    LeaseLost,
    LLMAuthFailed,
    LLMError,
    LLMFeatureRefused,
    LLMModelNotFound,
    LLMRejected,
    LLMUnavailable,
    LLMUnreachable,
)
from pipeline.extract.context import PHASE, Phase1Context, lease_for
from pipeline.extract.item import Prepared
from pipeline.llm.protocol import BatchEntry
from pipeline.store import jobs as jobs_
from pipeline.store import stage1
from pipeline.vocabulary import BatchState

log = structlog.get_logger(__name__)

BATCH_LEASE = timedelta(hours=25)  # the API ends every batch within 24 hours (expired entries included)
REQUEUE_DELAY = timedelta(minutes=1)
CLOCK_SKEW = timedelta(minutes=10)
"""How far the API's clock may be behind ours when matching a batch to its placeholder."""
NOT_HEALING = frozenset({"invalid_request_error", "not_found_error", "request_too_large"})


def custom_id(prep: Prepared) -> str:
    return f"x{prep.job_id}-{prep.transcript_id}"


async def submit_batch(ctx: Phase1Context) -> None:
    cap = ctx.settings.memories.max_rollouts_per_run
    prepared: list[Prepared] = []
    while ctx.report.claimed < cap:
        job = await ctx.claim(lease_for(ctx.settings))
        if job is None:
            break
        ctx.report.claimed += 1
        prep = await ctx.prepare(job)
        if prep is not None:
            prepared.append(prep)
    if not prepared:
        return
    # The jobs change hands to the batch, so a cancelled run's release_owner leaves them alone.
    batch_owner = f"batch-{uuid.uuid4().hex[:12]}"
    moved: list[Prepared] = []
    for p in prepared:
        try:
            await stage1.transfer_job(ctx.store, p.job(), new_owner=batch_owner, now=ctx.now())
        except LeaseLost:
            continue
        moved.append(replace(p, owner=batch_owner))
    prepared = moved
    if not prepared:
        return
    requests = [(custom_id(p), p.params) for p in prepared]
    # What finishing needs, without the request text (the redacted transcript stays out of the store).
    entries = {custom_id(p): replace(p, params={"model": p.params["model"]}).to_json() for p in prepared}
    placeholder = f"pending-{batch_owner}"
    await stage1.record_batch(
        ctx.store, placeholder, phase=PHASE, entries=entries, now=ctx.now(), state=BatchState.SUBMITTING
    )
    for p in prepared:
        try:
            await jobs_.renew(ctx.store, p.job(), now=ctx.now(), lease=BATCH_LEASE)
        except LeaseLost:
            log.warning("batch_job_lease_lost", job=p.job_key)
    try:
        batch_id = await ctx.llm.submit_batch(requests, phase=PHASE)
    except (LLMUnavailable, LLMAuthFailed, LLMRejected) as exc:
        await stage1.close_batch(ctx.store, placeholder, state=BatchState.ABANDONED, now=ctx.now())
        if isinstance(exc, LLMFeatureRefused):  # no batches there (learned): this run calls directly
            for p in prepared:
                await ctx.retry(p.job(), not_before=ctx.now(), reason=str(exc))
            ctx.report.claimed -= len(prepared)
            ctx.batches_refused = True
            return
        ctx.report.stopped = f"batch not submitted: {exc}"
        if isinstance(exc, LLMAuthFailed | LLMUnreachable | LLMModelNotFound):
            ctx.fatal = exc
        not_before = getattr(exc, "not_before", None) or ctx.now() + REQUEUE_DELAY
        for p in prepared:
            await ctx.retry(p.job(), not_before=not_before, reason=str(exc))
        return
    await stage1.adopt_batch(ctx.store, placeholder, batch_id=batch_id)
    ctx.report.batches_submitted.append(batch_id)
    ctx.report.batches_pending += 1
    ctx.report.sessions_pending += len(entries)
    log.info("batch_submitted", batch_id=batch_id, entries=len(entries))


async def collect_batches(ctx: Phase1Context) -> None:
    for row in await stage1.open_batches(ctx.store, phase=PHASE):
        if row.state == BatchState.SUBMITTING:
            found = await _recover(ctx, row)
            if found is None:
                continue
            row = replace(row, batch_id=found, state=BatchState.SUBMITTED)
        try:
            info = await ctx.llm.batch_info(row.batch_id, phase=PHASE)
            if not info.ended:
                ctx.report.batches_pending += 1
                ctx.report.sessions_pending += len(row.entries)
                continue
            entries = {e.custom_id: e for e in await ctx.llm.batch_results(row.batch_id, phase=PHASE)}
        except LLMRejected as exc:
            if getattr(exc, "status", None) == 404:
                # The API no longer knows the batch: every entry goes back to the queue.
                entries = {}
            else:
                ctx.report.stopped = f"batch {row.batch_id}: {exc}"
                return
        except LLMError as exc:
            ctx.report.stopped = f"batch {row.batch_id}: {exc}"
            if isinstance(exc, LLMAuthFailed | LLMUnreachable):
                ctx.fatal = exc
            return
        for cid, meta in row.entries.items():
            await _settle(ctx, Prepared.from_json(meta), entries.get(cid))
        await stage1.close_batch(ctx.store, row.batch_id, state=BatchState.COLLECTED, now=ctx.now())
        ctx.report.batches_collected += 1
        log.info("batch_collected", batch_id=row.batch_id, entries=len(row.entries))


async def _recover(ctx: Phase1Context, row: stage1.BatchRow) -> str | None:
    """A batch a stop left mid-submission: the id the API gave it, adopted; or None (its entries
    back in the queue when it was never created, or the API could not be asked)."""
    try:
        recent = await ctx.llm.recent_batches(phase=PHASE)
    except LLMError as exc:
        ctx.report.stopped = f"batch {row.batch_id}: {exc}"
        return None
    known = await stage1.known_batch_ids(ctx.store)
    since = row.submitted_at - CLOCK_SKEW
    for info in reversed(recent):  # oldest first: the first created after the placeholder
        created_after = info.created_at is None or info.created_at >= since
        if info.batch_id not in known and info.size == len(row.entries) and created_after:
            await stage1.adopt_batch(ctx.store, row.batch_id, batch_id=info.batch_id)
            log.warning("batch_recovered", batch_id=info.batch_id, entries=len(row.entries))
            return info.batch_id
    for meta in row.entries.values():
        await ctx.retry(
            Prepared.from_json(meta).job(),
            not_before=ctx.now(),
            reason="memd stopped before its batch was created: queued again",
        )
    await stage1.close_batch(ctx.store, row.batch_id, state=BatchState.ABANDONED, now=ctx.now())
    log.warning("batch_never_created", placeholder=row.batch_id, entries=len(row.entries))
    return None


async def _settle(ctx: Phase1Context, prep: Prepared, entry: BatchEntry | None) -> None:
    now = ctx.now()
    job = prep.job()
    if entry is None or entry.kind in ("expired", "canceled"):
        kind = entry.kind if entry is not None else "missing"
        await ctx.retry(job, not_before=now, reason=f"batch entry {kind}")
        return
    if entry.kind == "errored":
        reason = f"API rejected the batch entry ({entry.error_type}): {entry.error}"
        if entry.error_type in NOT_HEALING:
            await ctx.fail(prep, reason)
        else:
            await ctx.retry(job, not_before=now + REQUEUE_DELAY, reason=reason)
        return
    reply = entry.reply
    assert reply is not None
    model = str(prep.params.get("model", reply.model))
    await ctx.llm.record_usage(
        reply.usage, model=model, phase=PHASE, job_key=prep.job_key, prompt_hash=prep.prompt_hash, batch=True
    )
    ctx.report.add_usage(model, reply.usage, batch=True, cost=ctx.cost(model, reply.usage, batch=True))
    invalid = await ctx.store_result(prep, reply.text, model=model, usage=reply.usage, batch=True)
    if invalid is None:
        return
    if prep.invalid_before >= 1:
        await ctx.fail(prep, f"model output invalid after 2 tries: {invalid}")
        return
    try:
        await stage1.requeue_extract(
            ctx.store, job, now=now, not_before=now, reason=str(invalid), payload={"invalid_outputs": 1}
        )
        ctx.report.retried += 1
    except LeaseLost:
        pass
