"""Phase 1: each eligible session becomes one structured extract.

``run_phase1(store, settings, clock, llm, redactor)`` first collects any Message Batch that has
ended, then (unless the gate is closed) claims up to ``memories.max_rollouts_per_run`` ``extract``
jobs and, per job: full parse by the adapter -> the part not yet extracted (a grown session is
extracted again for its new part, with the previous summary as context) -> compact render within
``render_token_budget`` -> redaction -> one structured-output call (or one batch entry) ->
validation (an invalid output is retried once, then the item fails with the reason) -> redaction of
every output field -> stored with provenance, superseding the previous extract, job completed.

Direct calls run ``llm.max_concurrency`` at a time. A closed gate (rate-limit share, backoff after
a 429/529, daily token budget) starts nothing new: the run records it in the report and returns;
the items go back to the queue for after the reset. ``dry_run`` calls nothing: it reports what it
would extract, with rendered token counts and the estimated cost.
"""

from __future__ import annotations

import asyncio
import uuid

import structlog

from pipeline.clock import Clock
from pipeline.errors import (
    LLMAuthFailed,
    LLMModelNotFound,
    LLMOutputInvalid,
    LLMRejected,
    LLMUnavailable,
    LLMUnreachable,
    NoAPIKey,
)
from pipeline.extract.batch import collect_batches, submit_batch
from pipeline.extract.context import ERROR_RETRY, PHASE, Phase1Context, lease_for
from pipeline.extract.item import Loader, Prepared, RedactorLike, Settled, build, parse_full
from pipeline.extract.report import Phase1Report, WouldExtract
from pipeline.extract.request import ExtractPrompts, estimate_request_tokens
from pipeline.llm.endpoint import endpoint_for, price_for
from pipeline.llm.pricing import Usage, cost_usd
from pipeline.llm.protocol import ModelClient
from pipeline.llm.ratelimit import gate_state
from pipeline.settings import BatchMode, Settings
from pipeline.store import Store, kv, stage1
from pipeline.store import jobs as jobs_

__all__ = ["KV_LAST_RUN", "Phase1Report", "WouldExtract", "lease_for", "run_phase1"]

log = structlog.get_logger(__name__)

KV_LAST_RUN = "phase1_last_run"
EXPECTED_OUTPUT_TOKENS = 1_500  # for cost estimates before a call: a typical extract's size


async def run_phase1(
    store: Store,
    settings: Settings,
    clock: Clock,
    llm: ModelClient | None,
    redactor: RedactorLike,
    *,
    dry_run: bool = False,
    owner: str | None = None,
    load: Loader | None = None,
) -> Phase1Report:
    """One phase-1 pass (see the module docstring). ``llm`` is the model client
    (None without a key: then only ``dry_run`` works, anything else raises ``NoAPIKey``). ``owner``
    names this run's claims (a cancelled run hands them back itself). A 401/403, an unreachable API or a
    model the API does not know puts the item back, starts nothing new and is raised at the end of the
    run (``LLMAuthFailed``, ``LLMUnreachable``, ``LLMModelNotFound``: the step failed, and says where);
    ``PromptError`` when a prompt file does not match."""
    prompts = ExtractPrompts.load()
    load = load or parse_full
    report = Phase1Report(started_at=clock.now(), dry_run=dry_run)
    if dry_run:
        await _dry_run(store, settings, clock, redactor, prompts, load, report)
        report.finished_at = clock.now()
        return report
    if llm is None:
        raise NoAPIKey(settings.llm.api_key_env)
    owner = owner or f"phase1-{uuid.uuid4().hex[:12]}"
    ctx = Phase1Context(store, settings, clock, llm, redactor, prompts, load, report, owner)

    try:
        await collect_batches(ctx)
        gate = await gate_state(store, settings, clock.now())
        if gate.gated:
            report.gate = gate
            report.stopped = f"gated: {gate.reason}"
            log.info("phase1_gated", reason=gate.reason, reset_at=gate.reset_at)
        elif await _use_batch(ctx):
            report.batch = True
            await submit_batch(ctx)
            if ctx.batches_refused:
                report.batch = False
                await _run_direct(ctx)
        else:
            await _run_direct(ctx)
    except asyncio.CancelledError:
        # A shutdown: hand back what this run still holds (batched jobs belong to their batch).
        released = await jobs_.release_owner(store, owner, now=clock.now())
        log.info("phase1_cancelled", released=released)
        raise
    report.finished_at = clock.now()
    await kv.put(store, KV_LAST_RUN, report.summary(), now=report.finished_at)
    log.info(
        "phase1_done",
        extracted=report.extracted,
        failed=report.failed,
        retried=report.retried,
        tokens=report.usage.total_tokens,
    )
    if ctx.fatal is not None:
        raise ctx.fatal  # a wrong key, URL or model fails no item, but the run must say so
    return report


async def _use_batch(ctx: Phase1Context) -> bool:
    mode = ctx.settings.llm.batch
    if mode == BatchMode.off or not await ctx.llm.can_batch():
        return False
    if mode == BatchMode.on:
        return True
    pending = await stage1.count_claimable(ctx.store, now=ctx.now())
    return pending >= ctx.settings.llm.batch_min_pending


async def _run_direct(ctx: Phase1Context) -> None:
    cap = ctx.settings.memories.max_rollouts_per_run
    lease = lease_for(ctx.settings)

    async def worker() -> None:
        while not ctx.stop.is_set() and ctx.report.claimed < cap:
            ctx.report.claimed += 1  # reserve the slot before awaiting, so workers never overshoot
            job = await ctx.claim(lease)
            if job is None:
                ctx.report.claimed -= 1
                return
            prep = await ctx.prepare(job)
            if prep is None:
                continue
            try:
                await _extract_direct(ctx, prep)
            except Exception as exc:  # a bug or a store hiccup: this item waits, the others go on
                log.exception("phase1_item_crashed", job=prep.job_key)
                await ctx.retry(
                    prep.job(), not_before=ctx.now() + ERROR_RETRY, reason=f"{type(exc).__name__}: {exc}"
                )

    workers = min(ctx.settings.llm.max_concurrency, cap)
    await asyncio.gather(*(worker() for _ in range(workers)))


async def _extract_direct(ctx: Phase1Context, prep: Prepared) -> None:
    job = prep.job()
    gate = await gate_state(ctx.store, ctx.settings, ctx.now())
    if gate.gated:
        ctx.report.gate = gate
        ctx.report.stopped = f"gated: {gate.reason}"
        ctx.stop.set()
        await ctx.retry(job, not_before=gate.reset_at or ctx.now(), reason=f"gated: {gate.reason}")
        return
    tries = max(1, 2 - prep.invalid_before)
    invalid: LLMOutputInvalid | None = None
    for _ in range(tries):
        try:
            reply = await ctx.llm.create(
                prep.params,
                phase=PHASE,
                job_key=prep.job_key,
                prompt_hash=prep.prompt_hash,
                attempt=prep.attempts,
            )
        except LLMUnreachable as exc:
            # Not the API asking to wait: the session is due again at the next run, which tries
            # (and, while the API stays out of reach, fails as truthfully).
            ctx.stop_for(exc)
            await ctx.retry(job, not_before=ctx.now(), reason=str(exc))
            return
        except LLMUnavailable as exc:
            ctx.stop.set()
            ctx.report.stopped = str(exc)
            await ctx.retry(job, not_before=exc.not_before or ctx.now() + ERROR_RETRY, reason=str(exc))
            return
        except (LLMAuthFailed, LLMModelNotFound) as exc:
            ctx.stop_for(exc)
            await ctx.retry(job, not_before=ctx.now(), reason=str(exc))
            return
        except LLMRejected as exc:
            await ctx.fail(prep, str(exc))
            return
        ctx.report.add_usage(reply.model, reply.usage, batch=False, cost=ctx.cost(reply.model, reply.usage))
        invalid = await ctx.store_result(prep, reply.text, model=reply.model, usage=reply.usage, batch=False)
        if invalid is None:
            return
    await ctx.fail(prep, f"model output invalid after {tries + prep.invalid_before} tries: {invalid}")


async def _dry_run(
    store: Store,
    settings: Settings,
    clock: Clock,
    redactor: RedactorLike,
    prompts: ExtractPrompts,
    load: Loader,
    report: Phase1Report,
) -> None:
    """What a run would extract now, with token and cost estimates; claims nothing, calls nothing."""
    now = clock.now()
    keys = await stage1.claimable_keys(store, now=now, limit=settings.memories.max_rollouts_per_run)
    pending = await stage1.count_claimable(store, now=now)
    mode = settings.llm.batch
    batch = settings.llm.provider == "anthropic" and (
        mode == BatchMode.on or (mode == BatchMode.auto and pending >= settings.llm.batch_min_pending)
    )
    report.batch = batch
    price = price_for(settings.llm, endpoint_for(settings.llm, "extract"), settings.llm.extract_model)
    for key in keys:
        prep = await build(store, settings, key, prompts=prompts, redactor=redactor, load=load)
        if isinstance(prep, Settled):
            continue
        request_tokens = estimate_request_tokens(prep.params)
        usage = Usage(input_tokens=request_tokens, output_tokens=EXPECTED_OUTPUT_TOKENS)
        cost = cost_usd(settings.llm.extract_model, usage, batch=batch, price=price)
        report.usage = report.usage + usage
        report.cost_usd += cost
        report.would_extract.append(
            WouldExtract(
                transcript_id=prep.transcript_id,
                source=prep.source,
                session_id=prep.session_id,
                project=prep.project,
                reextract=prep.previous_id is not None,
                rendered_tokens=prep.rendered_tokens,
                request_tokens=request_tokens,
                items_omitted=prep.items_omitted,
                estimated_cost_usd=cost,
            )
        )
