"""What one phase-1 run shares between its direct and its batched path (``Phase1Context``).

``run`` (the entry point and the direct calls) and ``batch`` (Message Batches) both work through
it, with ``lease_for`` and ``PHASE``, so ``batch`` needs nothing from ``run``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from pipeline.clock import Clock
from pipeline.errors import LeaseLost, LLMError, LLMOutputInvalid
from pipeline.extract.item import Loader, Prepared, RedactorLike, finish, prepare
from pipeline.extract.report import Phase1Report
from pipeline.extract.request import ExtractPrompts
from pipeline.extract.schema import parse_result
from pipeline.llm.endpoint import phase_cost
from pipeline.llm.pricing import Usage
from pipeline.llm.protocol import ModelClient
from pipeline.settings import Settings
from pipeline.store import Store, stage1
from pipeline.store import jobs as jobs_
from pipeline.store.jobs import Job
from pipeline.vocabulary import JobKind

log = structlog.get_logger(__name__)

PHASE = "extract"
"""Phase 1's name in the ``llm_calls`` ledger and on its Message Batches."""
ERROR_RETRY = timedelta(minutes=10)


def lease_for(settings: Settings) -> timedelta:
    """A direct call's claim: two tries of the request timeout, and room to store."""
    return timedelta(seconds=2 * settings.llm.request_timeout_s + 300)


@dataclass
class Phase1Context:
    """One phase-1 run's shared state: the store, settings, client and report, and what every item
    goes through (claim, prepare, retry, fail, store the result), direct or batched."""

    store: Store
    settings: Settings
    clock: Clock
    llm: ModelClient
    redactor: RedactorLike
    prompts: ExtractPrompts
    load: Loader
    report: Phase1Report
    owner: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    fatal: LLMError | None = None
    """What makes the run fail although no item is to blame (a refused key, an unreachable API, a
    model the API does not know): the items wait, and ``run_phase1`` raises it at the end."""
    batches_refused: bool = False
    """The endpoint refused Message Batches during this run: the run calls directly instead."""

    def stop_for(self, exc: LLMError) -> None:
        """Start nothing new: ``exc`` would fail every item the same way."""
        self.stop.set()
        self.report.stopped = str(exc)
        self.fatal = exc

    def now(self) -> datetime:
        return self.clock.now()

    def cost(self, model: str, usage: Usage, *, batch: bool = False) -> float:
        """What ``usage`` costs at phase 1's endpoint (0 on a local one unless priced)."""
        return phase_cost(self.settings.llm, "extract", model, usage, batch=batch)

    async def claim(self, lease: timedelta) -> Job | None:
        return await jobs_.claim_next(
            self.store, JobKind.EXTRACT, owner=self.owner, now=self.now(), lease=lease
        )

    async def prepare(self, job: Job) -> Prepared | None:
        try:
            prep = await prepare(
                self.store,
                self.settings,
                job,
                now=self.now(),
                prompts=self.prompts,
                redactor=self.redactor,
                load=self.load,
            )
        except LeaseLost:
            return None
        except Exception as exc:  # a bug or an I/O failure: the item waits, the run goes on
            log.exception("phase1_prepare_failed", job=job.key)
            await self.retry(job, not_before=self.now() + ERROR_RETRY, reason=f"{type(exc).__name__}: {exc}")
            return None
        if isinstance(prep, Prepared):
            return prep
        if prep.outcome in ("failed", "unreadable"):
            self.report.failed += 1
            self.report.failures.append((job.key, prep.reason))
        elif prep.outcome == "unchanged":
            self.report.unchanged += 1
        elif prep.outcome == "skipped":
            self.report.opted_out += 1
        else:
            self.report.retried += 1
        return None

    async def retry(self, job: Job, *, not_before: datetime, reason: str) -> None:
        try:
            await jobs_.retry_later(self.store, job, now=self.now(), not_before=not_before, reason=reason)
            self.report.retried += 1
        except LeaseLost:
            pass

    async def fail(self, prep: Prepared, reason: str) -> None:
        try:
            await stage1.fail_extract(
                self.store, prep.job(), transcript_id=prep.transcript_id, now=self.now(), reason=reason
            )
        except LeaseLost:
            return
        self.report.failed += 1
        self.report.failures.append((prep.job_key, reason))
        log.warning("extract_failed", transcript_id=prep.transcript_id, reason=reason)

    async def store_result(
        self, prep: Prepared, text: str, *, model: str, usage: Usage, batch: bool
    ) -> LLMOutputInvalid | None:
        """Validate and store; the validation error when the output was invalid (the caller decides)."""
        try:
            result = parse_result(text)
        except LLMOutputInvalid as exc:
            log.warning("extract_output_invalid", transcript_id=prep.transcript_id, batch=batch)
            return exc
        usage_json = {**usage.as_dict(), "cost_usd": self.cost(model, usage, batch=batch), "batch": batch}
        try:
            await finish(
                self.store,
                prep,
                result,
                now=self.now(),
                redactor=self.redactor,
                model=model,
                usage=usage_json,
            )
        except LeaseLost:
            log.warning("extract_lease_lost", transcript_id=prep.transcript_id)
            return None
        self.report.extracted += 1
        self.report.nothing_durable += int(result.nothing_durable)
        self.report.scopes.add(prep.scope)
        return None
