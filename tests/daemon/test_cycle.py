from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from daemon.service.cycle import (
    STEP_ORDER,
    CycleResult,
    Skipped,
    StepReport,
    StepResult,
    compact,
    jsonable,
    ordered,
    run_cycle,
)
from pipeline.clock import FakeClock
from pipeline.errors import LLMUnavailable, NoAPIKey, StoreError


def _step(calls: list[str], name: str, result: object = None, exc: BaseException | None = None) -> Any:
    async def step(*, dry_run: bool) -> object:
        calls.append(f"{name}{' dry' if dry_run else ''}")
        if exc is not None:
            raise exc
        return result

    return step


async def test_steps_run_in_cycle_order_and_are_reported(clock: FakeClock) -> None:
    calls: list[str] = []
    steps = {name: _step(calls, name, result={"n": 1}) for name in STEP_ORDER}
    ended: list[StepResult] = []
    result = await run_cycle(steps, ["publish", "scan", "extract"], clock=clock, on_end=ended.append)
    assert calls == ["scan", "extract", "publish"]
    assert [r.outcome for r in result.results] == ["ok", "ok", "ok"]
    assert ended == result.results
    assert result.summary() == "scan ok, extract ok, publish ok"


async def test_a_failing_step_does_not_stop_the_next_and_says_why(clock: FakeClock) -> None:
    calls: list[str] = []
    steps = {
        "scan": _step(calls, "scan", exc=RuntimeError("boom")),
        "extract": _step(calls, "extract", exc=NoAPIKey("ANTHROPIC_API_KEY")),
        "consolidate": _step(calls, "consolidate", exc=LLMUnavailable("429")),
        "publish": _step(calls, "publish", result=Skipped("nothing")),
    }
    result = await run_cycle(steps, STEP_ORDER, clock=clock, dry_run=True)
    assert calls == ["scan dry", "extract dry", "consolidate dry", "publish dry"]
    outcomes = {r.name: (r.outcome, r.error) for r in result.results}
    assert outcomes["scan"] == ("failed", "RuntimeError: boom")
    assert outcomes["extract"][0] == "failed"
    assert "set ANTHROPIC_API_KEY" in (outcomes["extract"][1] or "")
    assert outcomes["consolidate"][0] == "deferred"  # a bad day of the API is not memd failing
    assert outcomes["publish"] == ("skipped", None)
    assert [f.name for f in result.failures] == ["scan", "extract"]


async def test_a_failing_store_ends_the_cycle(clock: FakeClock) -> None:
    calls: list[str] = []
    steps = {
        "scan": _step(calls, "scan", exc=StoreError("disk I/O error")),
        "extract": _step(calls, "extract"),
    }
    result = await run_cycle(steps, STEP_ORDER, clock=clock)
    assert calls == ["scan"]
    assert result.results[0].store_down


async def test_keep_going_stops_before_the_next_step(clock: FakeClock) -> None:
    calls: list[str] = []
    steps = {name: _step(calls, name) for name in STEP_ORDER}
    await run_cycle(steps, STEP_ORDER, clock=clock, keep_going=lambda: len(calls) < 2)
    assert calls == ["scan", "extract"]


def test_ordered_rejects_unknown_steps() -> None:
    assert ordered({"publish", "scan"}) == ["scan", "publish"]
    with pytest.raises(ValueError, match="unknown"):
        ordered(["nap"])


class Color(Enum):
    red = "r"


@dataclass
class Inner:
    when: datetime
    path: Path
    color: Color


@dataclass
class Report:
    count: int
    inner: Inner
    items: list[int] = field(default_factory=list)
    tags: set[str] = field(default_factory=set)
    _private: int = 0


def test_reports_become_json_safe_with_lists_capped() -> None:
    when = datetime(2026, 11, 1, tzinfo=UTC)
    data = jsonable(Report(3, Inner(when, Path("/x"), Color.red), items=list(range(150)), tags={"a"}))
    assert data["inner"] == {"when": when.isoformat(), "path": "/x", "color": "r"}
    assert len(data["items"]) == 101
    assert data["items"][-1] == "... 50 more"
    assert data["tags"] == ["a"]
    assert "_private" not in data


def test_compact_prefers_a_step_reports_own_summary() -> None:
    class WithSummary:
        failure = None
        spend = None

        def summary(self) -> dict[str, Any]:
            return {"extracted": 2}

    class WithoutSpend:  # not a StepReport: recorded as what it is
        def summary(self) -> dict[str, Any]:
            return {"extracted": 2}

    assert isinstance(WithSummary(), StepReport)
    assert compact(WithSummary()) == {"extracted": 2}
    assert compact(Skipped("idle")) == {"reason": "idle"}
    assert compact(WithoutSpend()).startswith("<")


def test_every_step_report_is_a_step_report() -> None:
    """The cycle reads failure, spend and summary() of each phase's report through one protocol."""
    from datetime import UTC, datetime

    from pipeline.consolidate.dry import DryConsolidation
    from pipeline.consolidate.run import Phase2Report
    from pipeline.extract.report import Phase1Report
    from pipeline.publish.run import PublishReport
    from pipeline.scan.view import ScanSummary
    from pipeline.sync.run import SyncReport
    from pipeline.vocabulary import SyncOutcome

    now = datetime(2026, 11, 1, tzinfo=UTC)
    reports = [
        ScanSummary(1, 1, 10, 0, {}, None),
        Phase1Report(now),
        Phase2Report(),
        DryConsolidation([], []),
        SyncReport(SyncOutcome.SYNCED),
        PublishReport(False, now, now),
        Skipped("idle"),
    ]
    for report in reports:
        assert isinstance(report, StepReport), type(report).__name__
    assert compact(PublishReport(False, now, now)) == {
        "dry_run": False,
        "started_at": now.isoformat(),
        "finished_at": now.isoformat(),
        "results": [],
        "folders": {},
    }


async def test_a_stop_names_the_steps_it_kept_from_running(clock: FakeClock) -> None:
    calls: list[str] = []
    steps = {name: _step(calls, name) for name in STEP_ORDER}
    result = await run_cycle(steps, STEP_ORDER, clock=clock, keep_going=lambda: len(calls) < 2)
    assert result.not_run == ["consolidate", "sync", "publish"]
    assert result.summary() == (
        "scan ok, extract ok, consolidate skipped: interrupted, sync skipped: interrupted, "
        "publish skipped: interrupted"
    )


async def test_a_cancelled_cycle_keeps_what_ran_and_names_the_rest(clock: FakeClock) -> None:
    calls: list[str] = []
    blocked = asyncio.Event()

    async def endless(*, dry_run: bool) -> object:
        blocked.set()
        await asyncio.Event().wait()
        return None

    steps = {name: _step(calls, name) for name in STEP_ORDER} | {"extract": endless}
    into = CycleResult()
    task = asyncio.create_task(run_cycle(steps, STEP_ORDER, clock=clock, into=into))
    await blocked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [(r.name, r.outcome, r.error) for r in into.results] == [
        ("scan", "ok", None),
        ("extract", "cancelled", "interrupted"),
    ]
    assert into.summary() == (
        "scan ok, extract cancelled, consolidate skipped: interrupted, sync skipped: interrupted, "
        "publish skipped: interrupted"
    )


async def test_a_report_that_declares_a_failure_fails_the_step_with_its_reason(clock: FakeClock) -> None:
    from pipeline.consolidate.run import Phase2Report, ScopeReport
    from pipeline.vocabulary import RunOutcome

    refused = Phase2Report(
        scopes=[
            ScopeReport("global", RunOutcome.COMMITTED),
            ScopeReport("projects/shop", RunOutcome.FAILED, reason="validation: MEMORY.md has no title"),
        ]
    )
    result = await run_cycle(
        {"consolidate": _step([], "consolidate", result=refused)}, ["consolidate"], clock=clock
    )
    [step] = result.results
    assert step.outcome == "failed"
    assert step.error is not None
    assert "projects/shop" in step.error
    assert "no title" in step.error
    assert step.report is refused  # the report is kept for `memd status`
    assert result.summary() == "consolidate failed"


def test_the_log_line_of_a_model_calling_step_gives_its_tokens_and_cost() -> None:
    """Issue 36: every run summary, the daemon's log line too, gives each phase's tokens and cost."""
    from datetime import UTC, datetime

    from daemon.service.cycle import spend_of
    from pipeline.consolidate.run import Phase2Report
    from pipeline.extract.report import Phase1Report
    from pipeline.llm.pricing import Usage

    extracted = Phase1Report(
        datetime(2026, 11, 1, tzinfo=UTC), usage=Usage(input_tokens=900, output_tokens=100), cost_usd=0.0123
    )
    assert spend_of(extracted) == {"tokens": 1000, "cost_usd": 0.0123}
    assert spend_of(Phase2Report(tokens=5000, cost_usd=0.25)) == {"tokens": 5000, "cost_usd": 0.25}
    assert spend_of(Skipped("idle")) == {}
    assert spend_of({"n": 1}) == {}
    assert spend_of(None) == {}
