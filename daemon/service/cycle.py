"""One cycle of work: scan, extract, consolidate, sync, publish, each step isolated and recorded.

A step is an async callable returning its report (or ``Skipped`` when there was nothing for it to
do); a report whose ``failure`` is set (a consolidation refused by validation) makes the step
``failed`` with that reason. A step that raises does not stop the steps after it, except when the state store itself is
failing. Each outcome is kept in the store (``kv["run.<step>:<machine>"]``, each machine its own) for `memd status`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import PurePath
from typing import Any, Protocol, runtime_checkable

import structlog

from pipeline.clock import Clock
from pipeline.errors import LeaseLost, LLMUnavailable, LLMUnreachable, MemdError, StoreError
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store.read.keys import run_key
from pipeline.vocabulary import Step as StepName
from pipeline.vocabulary import StepOutcome

log = structlog.get_logger(__name__)

STEP_ORDER: tuple[str, ...] = tuple(StepName)
MAX_LIST_ITEMS = 100
INTERRUPTED = "interrupted"
"""Why a step was cut short, or not run, after a stop was asked for."""


@runtime_checkable
class StepReport(Protocol):
    """What the cycle reads of a step's report (every phase's report, and ``Skipped``): ``failure``,
    what went wrong although the step ran to its end (the step is then ``failed``); ``spend``, the
    model tokens and dollars it spent (None: it calls no model), for its log line; ``summary()``, the
    report as recorded for `memd status`. Anything else a step returns is recorded as its fields."""

    @property
    def failure(self) -> str | None: ...

    @property
    def spend(self) -> tuple[int, float] | None: ...

    def summary(self) -> dict[str, Any]: ...


@runtime_checkable
class LeavesBatches(Protocol):
    """The extract step's report: the Message Batches it left open (`memd run --once --wait`)."""

    batches_pending: int
    sessions_pending: int


@runtime_checkable
class WaitsForReview(Protocol):
    """The consolidate step's report (or its ``Skipped``): the runs waiting in the inbox for review."""

    waiting_review: int


class Step(Protocol):
    def __call__(self, *, dry_run: bool) -> Awaitable[object]: ...


@dataclass(frozen=True)
class StepEnv:
    """What the daemon gives the step factory once the store is open."""

    store: Store
    settings: Callable[[], Settings]
    """The current settings (a SIGHUP may replace them between steps)."""
    owner: str
    """This instance's owner token: jobs claimed under it are handed back at shutdown."""


@dataclass
class StepSet:
    """The steps of a cycle by name, and how to release what they loaded (the LLM client, say)."""

    steps: Mapping[str, Step]
    close: Callable[[], Awaitable[None]] | None = None

    async def aclose(self) -> None:
        if self.close is not None:
            await self.close()


@dataclass(frozen=True)
class Skipped:
    """A step that found nothing to do (and so loaded nothing to do it with)."""

    reason: str
    waiting_review: int = 0
    """The consolidate step: the runs waiting in the inbox for review (why there may be nothing to do)."""

    @property
    def failure(self) -> str | None:
        return None

    @property
    def spend(self) -> tuple[int, float] | None:
        return None

    def summary(self) -> dict[str, Any]:
        """As recorded: the reason, and the runs waiting for review when there are any."""
        return {
            "reason": self.reason,
            **({"waiting_review": self.waiting_review} if self.waiting_review else {}),
        }


@dataclass(frozen=True)
class StepResult:
    name: str
    outcome: StepOutcome
    started_at: datetime
    finished_at: datetime
    duration_s: float
    report: object = None
    error: str | None = None
    store_down: bool = False
    """The step failed because the state store did: the steps after it would fail the same way."""

    def record_key(self, machine: str) -> str:
        """Where the outcome is kept (per machine): a skip does not hide the last run that did something."""
        return run_key(self.name, skipped=self.outcome == StepOutcome.SKIPPED, machine=machine)

    @property
    def failed(self) -> bool:
        """The step could not do its work (a retryable API outage is not a failure of memd)."""
        return self.outcome in (StepOutcome.FAILED, StepOutcome.CANCELLED)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.name,
            "outcome": self.outcome,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "duration_s": round(self.duration_s, 3),
            "error": self.error,
            "report": compact(self.report),
        }


@dataclass
class CycleResult:
    results: list[StepResult] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    """Steps a stop kept from running."""
    hints: list[str] = field(default_factory=list)
    """What memd says once, the first time it applies (``daemon.service.hints``)."""

    @property
    def failures(self) -> list[StepResult]:
        return [r for r in self.results if r.failed]

    def summary(self) -> str:
        """One line, e.g. ``scan ok, extract skipped, consolidate ok, publish ok``, or after a stop
        ``scan ok, extract cancelled, consolidate skipped: interrupted, publish skipped: interrupted``."""
        parts = [f"{r.name} {r.outcome}" for r in self.results]
        parts += [f"{name} {StepOutcome.SKIPPED}: {INTERRUPTED}" for name in self.not_run]
        return ", ".join(parts) or "nothing ran"


def enabled(steps: Mapping[str, Step], settings: Settings) -> dict[str, Step]:
    """The steps the settings have: without a ``[sync] remote`` there is no ``sync`` step at all (a
    cycle does not say "sync skipped" to everyone who never asked for sync)."""
    return {name: step for name, step in steps.items() if name != "sync" or settings.sync.enabled}


def ordered(names: Iterable[str]) -> list[str]:
    wanted = set(names)
    unknown = wanted - set(STEP_ORDER)
    if unknown:
        raise ValueError(f"unknown steps: {sorted(unknown)}")
    return [n for n in STEP_ORDER if n in wanted]


async def run_cycle(
    steps: Mapping[str, Step],
    names: Iterable[str],
    *,
    clock: Clock,
    dry_run: bool = False,
    keep_going: Callable[[], bool] = lambda: True,
    on_start: Callable[[str], object] | None = None,
    on_end: Callable[[StepResult], Awaitable[None] | None] | None = None,
    into: CycleResult | None = None,
) -> CycleResult:
    """Run ``names`` (in cycle order) and return every step's result; cancellation propagates, and
    leaves in ``into`` what ran, the step it cut short (``cancelled``) and the steps it kept from running."""
    cycle = into if into is not None else CycleResult()
    order = [n for n in ordered(names) if n in steps]
    for i, name in enumerate(order):
        if not keep_going():
            cycle.not_run = order[i:]
            break
        step = steps[name]
        if on_start is not None:
            on_start(name)
        started_at, t0 = clock.now(), time.perf_counter()
        try:
            result = await run_step(name, step, clock=clock, dry_run=dry_run)
        except asyncio.CancelledError:
            duration_s = time.perf_counter() - t0
            cancelled = StepResult(
                name, StepOutcome.CANCELLED, started_at, clock.now(), duration_s, None, INTERRUPTED
            )
            cycle.results.append(cancelled)
            cycle.not_run = order[i + 1 :]
            log.warning("step_cancelled", step=name, duration_s=round(duration_s, 3))
            raise
        cycle.results.append(result)
        if on_end is not None:
            maybe = on_end(result)
            if maybe is not None:
                await maybe
        if result.store_down:
            break
    return cycle


async def run_step(name: str, step: Step, *, clock: Clock, dry_run: bool) -> StepResult:
    started_at = clock.now()
    t0 = time.perf_counter()
    outcome = StepOutcome.OK
    error: str | None = None
    report: object = None
    store_down = False
    log.info("step_started", step=name, dry_run=dry_run)
    try:
        report = await step(dry_run=dry_run)
        if isinstance(report, Skipped):
            outcome = StepOutcome.SKIPPED
        elif (failure := declared_failure(report)) is not None:
            outcome, error = StepOutcome.FAILED, failure
    except LLMUnreachable as exc:  # not a pause the API asked for: the address is wrong or down
        outcome, error = StepOutcome.FAILED, str(exc)
    except LLMUnavailable as exc:
        outcome, error = StepOutcome.DEFERRED, f"model API unavailable: {exc}"
    except LeaseLost as exc:
        outcome, error = StepOutcome.FAILED, f"lease lost: {exc}"
    except StoreError as exc:
        outcome, error, store_down = StepOutcome.FAILED, f"state store: {exc}", True
    except MemdError as exc:  # the step could not work (no API key, a broken repository): say why
        outcome, error = StepOutcome.FAILED, str(exc)
    except Exception as exc:  # a step's bug must not take the daemon down; it is logged in full
        outcome, error = StepOutcome.FAILED, f"{type(exc).__name__}: {exc}"
        log.exception("step_crashed", step=name)
    duration_s = time.perf_counter() - t0
    log.info(
        "step_finished",
        step=name,
        outcome=outcome,
        duration_s=round(duration_s, 3),
        error=error,
        **spend_of(report),
    )
    return StepResult(name, outcome, started_at, clock.now(), duration_s, report, error, store_down)


def spend_of(report: object) -> dict[str, Any]:
    """A model-calling step's tokens and cost (its report's ``spend``), for the log line; nothing for
    a step that calls no model."""
    spend = report.spend if isinstance(report, StepReport) else None
    if spend is None:
        return {}
    tokens, cost = spend
    return {"tokens": tokens, "cost_usd": round(float(cost), 4)}


def declared_failure(report: object) -> str | None:
    """What a report says went wrong although the step ran to its end (its ``failure``), or None."""
    return (report.failure or None) if isinstance(report, StepReport) else None


def jsonable(value: object, depth: int = 0) -> Any:
    """A report as JSON-safe data: dataclasses and mappings to objects, lists capped, the rest as text."""
    if depth > 6:
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return jsonable(value.value, depth + 1)
    if isinstance(value, PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: jsonable(getattr(value, f.name), depth + 1)
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        out = [jsonable(v, depth + 1) for v in items[:MAX_LIST_ITEMS]]
        if len(items) > MAX_LIST_ITEMS:
            out.append(f"... {len(items) - MAX_LIST_ITEMS} more")
        return out
    return str(value)


def compact(report: object) -> Any:
    """A report as recorded for `memd status`: a ``StepReport``'s ``summary()``, else its fields."""
    if isinstance(report, StepReport):
        try:
            return jsonable(report.summary())
        except Exception:
            pass
    return jsonable(report)
