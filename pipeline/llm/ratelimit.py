"""Rate limits and budgets: what the API last said about them, and whether a new call may start.

Every response's ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
headers are recorded (kv ``rate_limit``). ``gate_state(store, settings, now)`` is what phase 1 and
phase 2 ask before a call: it reads the store and applies the one rule, ``pipeline.ratelimit_rule``
(which `memd status` applies to the same values).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from pipeline.clock import parse_time
from pipeline.ratelimit_rule import KV_BACKOFF, KV_RATE_LIMIT, Family
from pipeline.settings import Settings
from pipeline.store import Store, kv
from pipeline.store.read.gate import GateState, gate
from pipeline.store.read.rows import on_store

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
                int(limit), int(remaining), parse_time(lower.get(f"{PREFIX}{name}-reset"))
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


async def record_backoff(store: Store, until: datetime, reason: str, *, now: datetime) -> None:
    """No new call before ``until`` (a 429, 529, 5xx or timeout said so). Never moves an existing one earlier."""
    current = await kv.get(store, KV_BACKOFF)
    if isinstance(current, dict):
        existing = parse_time(current.get("until"))
        if existing is not None and existing >= until:
            return
    await kv.put(store, KV_BACKOFF, {"until": until.isoformat(), "reason": reason}, now=now)


async def gate_state(store: Store, settings: Settings, now: datetime) -> GateState:
    """The gate as of ``now``: closed by the rate-limit share, a backoff, or a daily budget (read by
    ``pipeline.store.read.gate``, as `memd status` reads it)."""
    return await on_store(
        store,
        lambda rows: gate(
            rows,
            threshold=settings.memories.min_rate_limit_remaining_percent,
            daily_token_budget=settings.llm.daily_token_budget,
            daily_budget_usd=settings.llm.daily_budget_usd,
            now=now,
        ),
    )
