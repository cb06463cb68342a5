"""The rate-limit decision: one pure rule, which the model client's gate and `memd status` both apply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline import ratelimit_rule as rule
from pipeline.clock import FakeClock
from pipeline.llm.ratelimit import gate_state, record_backoff, record_snapshot
from pipeline.ratelimit_rule import Backoff, Decision, Family, decide
from pipeline.store import Store
from pipeline.store import llm_calls as calls
from tests.pipeline.extract.support import make_settings
from tests.pipeline.status.test_read import read_report

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def test_an_open_gate() -> None:
    d = decide(
        {"tokens": Family(100, 80, NOW)}, threshold=25, backoff=None, used_today=0, budget=None, now=NOW
    )
    assert d == Decision(gated=False, reason=None, reset_at=None, remaining_percent=80.0)


def test_each_reason_closes_it_until_the_last_lifts() -> None:
    families = {
        "requests": Family(100, 10, NOW + timedelta(minutes=5)),
        "tokens": Family(100, 90, NOW + timedelta(minutes=1)),
        "empty": Family(0, 0, None),  # no limit: not a share
    }
    d = decide(
        families,
        threshold=25,
        backoff=Backoff(NOW + timedelta(minutes=20), "429"),
        used_today=5_000,
        budget=4_000,
        now=NOW,
    )
    assert d.gated
    assert d.reason == (
        "rate limit below 25% (requests 10% remaining); backing off: 429; daily token budget used (5000 of 4000)"
    )
    assert d.reset_at == datetime(2026, 11, 2, tzinfo=UTC)
    assert d.remaining_percent == 10.0


def test_a_reset_or_backoff_in_the_past_does_not_close_it() -> None:
    d = decide(
        {"requests": Family(100, 10, NOW - timedelta(seconds=1))},
        threshold=25,
        backoff=Backoff(NOW, None),
        used_today=0,
        budget=1,
        now=NOW,
    )
    assert not d.gated


def test_the_kv_values_are_read_leniently() -> None:
    assert rule.families_from_json(None) == {}
    assert rule.families_from_json(
        {"families": {"t": {"limit": 10, "remaining": 1, "reset": "2026-11-01T12:00:00Z"}}}
    ) == {"t": Family(10, 1, NOW)}
    assert rule.backoff_from_json({"until": "2026-11-01T12:00:00+00:00"}) == Backoff(NOW, None)
    assert rule.backoff_from_json({"until": "soon"}) is None


async def _gated_store(store: Store, clock: FakeClock) -> None:
    now = clock.now()
    snapshot = rule.families_from_json(
        {
            "families": {
                "tokens": {"limit": 100, "remaining": 10, "reset": (now + timedelta(minutes=30)).isoformat()}
            }
        }
    )
    from pipeline.llm.ratelimit import RateLimitSnapshot

    await record_snapshot(store, RateLimitSnapshot(now, snapshot))
    await record_backoff(store, now + timedelta(minutes=10), "529 overloaded", now=now)
    await calls.record(
        store,
        calls.CallRecord(
            at=now - timedelta(hours=1), phase="extract", model="m", outcome="ok", input_tokens=4_000
        ),
    )


async def test_memd_status_and_the_model_client_gate_alike(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await _gated_store(store, clock)
    settings = make_settings(tmp_path, llm={"daily_token_budget": 3500})
    gate = await gate_state(store, settings, clock.now())
    status = (await read_report(store, clock, tmp_path))["rate_limit"]  # budget 3500, threshold 25
    assert gate.gated
    assert status["gated"]
    assert status["reason"] == gate.reason
    assert "rate limit below 25% (tokens 10% remaining)" in status["reason"]
    assert "daily token budget used (4000 of 3500)" in status["reason"]
    assert status["reset_at"] == (gate.reset_at.isoformat() if gate.reset_at else None)
    assert status["remaining_percent"] == gate.remaining_percent == 10.0


async def test_both_call_the_one_rule(
    store: Store, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _gated_store(store, clock)
    seen: list[tuple[int, int | None]] = []

    def stub(families: object, **kw: object) -> Decision:
        seen.append((kw["used_today"], kw["budget"]))  # type: ignore[arg-type]
        return Decision(gated=True, reason="the stub says so", reset_at=NOW, remaining_percent=42.0)

    monkeypatch.setattr(rule, "decide", stub)
    gate = await gate_state(store, make_settings(tmp_path, llm={"daily_token_budget": 3500}), clock.now())
    status = (await read_report(store, clock, tmp_path))["rate_limit"]
    assert (gate.reason, gate.remaining_percent) == ("the stub says so", 42.0)
    assert (status["reason"], status["remaining_percent"]) == ("the stub says so", 42.0)
    assert seen == [(4000, 3500), (4000, 3500)]  # the same inputs from both paths
