"""The gate: rate-limit share, backoff and daily budget close it until their reset; prices."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.llm.pricing import Usage, cost_usd, price_for
from pipeline.llm.ratelimit import (
    gate_state,
    parse_headers,
    record_backoff,
    record_snapshot,
    retry_after_s,
)
from pipeline.store import Store
from pipeline.store import llm_calls as calls
from tests.fakes import anthropic_api as fa
from tests.pipeline.extract.support import make_settings


def test_parse_headers_reads_every_family(clock: FakeClock) -> None:
    reset = clock.now() + timedelta(seconds=30)
    headers = {
        k.upper(): v for k, v in fa.ratelimit_headers(output_tokens=(20_000, 2_000), reset=reset).items()
    }
    snap = parse_headers(headers, clock.now())
    assert snap is not None
    assert set(snap.families) == {"requests", "input_tokens", "output_tokens"}
    assert snap.remaining_percent == pytest.approx(10.0)
    assert snap.families["output_tokens"].reset == reset.replace(microsecond=0)
    assert parse_headers({"content-type": "application/json"}, clock.now()) is None


def test_retry_after_forms(clock: FakeClock) -> None:
    now = clock.now()
    assert retry_after_s({"retry-after-ms": "1500", "retry-after": "9"}, now) == 1.5
    assert retry_after_s({"Retry-After": "9"}, now) == 9
    http_date = (now + timedelta(seconds=90)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert retry_after_s({"retry-after": http_date}, now) == 90
    assert retry_after_s({}, now) is None


async def test_low_share_gates_until_the_reset(tmp_path: Path, store: Store, clock: FakeClock) -> None:
    settings = make_settings(tmp_path, memories={"min_rate_limit_remaining_percent": 25})
    reset = clock.now() + timedelta(minutes=2)
    ok = parse_headers(fa.ratelimit_headers(requests=(100, 30), reset=reset), clock.now())
    assert ok is not None
    await record_snapshot(store, ok)
    gate = await gate_state(store, settings, clock.now())
    assert not gate.gated
    assert gate.remaining_percent == pytest.approx(30.0)

    low = parse_headers(fa.ratelimit_headers(requests=(100, 20), reset=reset), clock.now())
    assert low is not None
    await record_snapshot(store, low)
    gate = await gate_state(store, settings, clock.now())
    assert gate.gated
    assert gate.reset_at == reset.replace(microsecond=0)
    assert "requests 20%" in (gate.reason or "")

    clock.advance(timedelta(minutes=2, seconds=1))
    assert not (await gate_state(store, settings, clock.now())).gated


async def test_backoff_never_moves_earlier(tmp_path: Path, store: Store, clock: FakeClock) -> None:
    settings = make_settings(tmp_path)
    later = clock.now() + timedelta(minutes=10)
    await record_backoff(store, later, "429", now=clock.now())
    await record_backoff(store, clock.now() + timedelta(minutes=1), "529", now=clock.now())
    gate = await gate_state(store, settings, clock.now())
    assert gate.gated
    assert gate.reset_at == later


async def test_daily_budget_gates_until_utc_midnight(tmp_path: Path, store: Store) -> None:
    clock = FakeClock(datetime(2026, 11, 1, 22, 30, tzinfo=UTC))
    settings = make_settings(tmp_path, llm={"daily_token_budget": 10_000})
    yesterday = calls.CallRecord(
        at=clock.now() - timedelta(days=1), phase="extract", model="m", outcome="ok", input_tokens=50_000
    )
    await calls.record(store, yesterday)
    today = calls.CallRecord(
        at=clock.now() - timedelta(hours=1),
        phase="extract",
        model="m",
        outcome="ok",
        input_tokens=6_000,
        output_tokens=1_000,
        cache_read_tokens=2_000,
    )
    await calls.record(store, today)
    gate = await gate_state(store, settings, clock.now())
    assert not gate.gated
    assert gate.budget_used_today == 9_000

    await calls.record(
        store, calls.CallRecord(at=clock.now(), phase="extract", model="m", outcome="ok", input_tokens=1_000)
    )
    gate = await gate_state(store, settings, clock.now())
    assert gate.gated
    assert gate.reset_at == datetime(2026, 11, 2, tzinfo=UTC)
    assert "daily token budget" in (gate.reason or "")
    clock.advance(timedelta(hours=2))
    assert not (await gate_state(store, settings, clock.now())).gated


def test_prices_by_family_batch_half_price() -> None:
    usage = Usage(
        input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=1_000_000, cache_write_tokens=0
    )
    haiku = cost_usd("claude-haiku-5-5", usage)
    assert haiku == pytest.approx(1.0 + 0.5 + 0.1)
    assert cost_usd("claude-haiku-5-5", usage, batch=True) == pytest.approx(haiku / 2)
    assert price_for("claude-sonnet-5-5-20261101").input_per_mtok == 3.0
    assert price_for("some-unknown-model").input_per_mtok >= price_for("claude-opus-5-5").input_per_mtok


async def test_a_dollar_budget_is_on_by_default_and_gates_until_utc_midnight(
    tmp_path: Path, store: Store
) -> None:
    """Issue 36: five dollars a UTC day unless the user says otherwise, reached with a clear message."""
    clock = FakeClock(datetime(2026, 11, 1, 22, 30, tzinfo=UTC))
    settings = make_settings(tmp_path)
    assert settings.llm.daily_budget_usd == 5.0
    spent = calls.CallRecord(at=clock.now(), phase="phase2", model="m", outcome="ok", cost_usd=4.99)
    await calls.record(store, spent)
    assert not (await gate_state(store, settings, clock.now())).gated
    await calls.record(
        store, calls.CallRecord(at=clock.now(), phase="extract", model="m", outcome="ok", cost_usd=0.02)
    )
    gate = await gate_state(store, settings, clock.now())
    assert gate.gated
    assert gate.reset_at == datetime(2026, 11, 2, tzinfo=UTC)
    assert gate.reason == (
        "daily budget reached: $5.01 of $5.00 spent today (UTC); no new model call until 00:00 UTC "
        "(raise [llm] daily_budget_usd to spend more)"
    )
    clock.advance(timedelta(hours=2))
    assert not (await gate_state(store, settings, clock.now())).gated
    unlimited = make_settings(tmp_path, llm={"daily_budget_usd": 0})  # 0: no budget
    assert not (await gate_state(store, unlimited, clock.now() - timedelta(hours=2))).gated
