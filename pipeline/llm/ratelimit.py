"""Rate limits and budgets: what the API last said about them, and whether a new call may start.

Every response's ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
headers are recorded (kv ``rate_limit``). ``gate_state(store, settings, now)`` is what phase 1 and
phase 2 ask before a call: it reads the store and applies the one rule, ``pipeline.ratelimit_rule``
(which `memd status` applies to the same values).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from pipeline import ratelimit_rule as rule
from pipeline.ratelimit_rule import KV_BACKOFF, KV_RATE_LIMIT, Family, utc_day_start
from pipeline.settings import Settings
from pipeline.store import Store, kv
from pipeline.store import llm_calls as calls

PREFIX = "anthropic-ratelimit-"
FAMILIES = ("requests", "tokens", "input-tokens", "output-tokens")


@dataclass(frozen=True)
class RateLimitSnapshot:
    observed_at: datetime
    families: dict[str, Family]

    @property
    def remaining_percent(self) -> float | None:
        shares = [f.remaining_percent for f in self.families.values() if f.limit > 0]
        return min(shares) if shares else None

    def to_json(self) -> dict[str, Any]:
        return {
            "observed_at": self.observed_at.isoformat(),
            "families": {
                name: {
                    "limit": f.limit,
                    "remaining": f.remaining,
                    "reset": f.reset.isoformat() if f.reset else None,
                }
                for name, f in self.families.items()
            },
        }

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> RateLimitSnapshot:
        observed = rule.parse_time(value.get("observed_at")) or datetime.fromtimestamp(0, UTC)
        return RateLimitSnapshot(observed, rule.families_from_json(value))


def parse_headers(headers: Mapping[str, str], now: datetime) -> RateLimitSnapshot | None:
    """The rate-limit families present in ``headers`` (names compared lowercase), or None when none is."""
    lower = {k.lower(): v for k, v in headers.items()}
    families: dict[str, Family] = {}
    for name in FAMILIES:
        limit = lower.get(f"{PREFIX}{name}-limit")
        remaining = lower.get(f"{PREFIX}{name}-remaining")
        if limit is None or remaining is None:
            continue
        try:
            families[name.replace("-", "_")] = Family(
                int(limit), int(remaining), rule.parse_time(lower.get(f"{PREFIX}{name}-reset"))
            )
        except ValueError:
            continue
    return RateLimitSnapshot(now, families) if families else None


def retry_after_s(headers: Mapping[str, str], now: datetime) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), in seconds; None when absent."""
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, (parsedate_to_datetime(value) - now).total_seconds())
            except (TypeError, ValueError):
                return None
    return None


def exhausted_reset(snapshot: RateLimitSnapshot | None, now: datetime) -> datetime | None:
    """When the exhausted families (remaining 0) reset, the latest of them; else the earliest future reset."""
    if snapshot is None:
        return None
    future = [f for f in snapshot.families.values() if f.reset is not None and f.reset > now]
    empty = [f.reset for f in future if f.remaining <= 0 and f.reset is not None]
    if empty:
        return max(empty)
    resets = [f.reset for f in future if f.reset is not None]
    return min(resets) if resets else None


async def record_snapshot(store: Store, snapshot: RateLimitSnapshot) -> None:
    await kv.put(store, KV_RATE_LIMIT, snapshot.to_json(), now=snapshot.observed_at)


async def load_snapshot(store: Store) -> RateLimitSnapshot | None:
    value = await kv.get(store, KV_RATE_LIMIT)
    return RateLimitSnapshot.from_json(value) if isinstance(value, dict) else None


async def record_backoff(store: Store, until: datetime, reason: str, *, now: datetime) -> None:
    """No new call before ``until`` (a 429, 529, 5xx or timeout said so). Never moves an existing one earlier."""
    current = await kv.get(store, KV_BACKOFF)
    if isinstance(current, dict):
        existing = rule.parse_time(current.get("until"))
        if existing is not None and existing >= until:
            return
    await kv.put(store, KV_BACKOFF, {"until": until.isoformat(), "reason": reason}, now=now)


@dataclass(frozen=True)
class GateState:
    """Whether a new model call may start now, and why not."""

    gated: bool
    reason: str | None
    reset_at: datetime | None
    remaining_percent: float | None
    budget_used_today: int
    daily_token_budget: int | None = None
    observed_at: datetime | None = None


async def gate_state(store: Store, settings: Settings, now: datetime) -> GateState:
    """The gate as of ``now``: closed by the rate-limit share, a backoff, or the daily token budget."""
    snapshot = await load_snapshot(store)
    today = await calls.totals_since(store, utc_day_start(now))
    used = today.tokens
    budget = settings.llm.daily_token_budget
    decision = rule.decide(
        snapshot.families if snapshot else {},
        threshold=settings.memories.min_rate_limit_remaining_percent,
        backoff=rule.backoff_from_json(await kv.get(store, KV_BACKOFF)),
        used_today=used,
        budget=budget,
        now=now,
        spent_today_usd=today.cost_usd,
        budget_usd=settings.llm.daily_budget_usd or None,  # 0: no budget
    )
    return GateState(
        gated=decision.gated,
        reason=decision.reason,
        reset_at=decision.reset_at,
        remaining_percent=decision.remaining_percent,
        budget_used_today=used,
        daily_token_budget=budget,
        observed_at=snapshot.observed_at if snapshot else None,
    )
