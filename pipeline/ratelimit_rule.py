"""Whether a new model call may start: the one rule, as a pure function of what the store holds.

The gate closes when:

- the smallest remaining share of any family falls below ``memories.min_rate_limit_remaining_percent``
  (until the latest reset among the families below it);
- a 429/529/5xx put memd in backoff (kv ``llm_backoff``, until its ``until``);
- ``llm.daily_token_budget`` is set and today's (UTC) calls used it up (until the next UTC midnight);
- ``llm.daily_budget_usd`` is set and today's (UTC) calls cost that much (until the next UTC midnight).

Phases 1 and 2 and `memd status` read the kv values through one reader (``pipeline.store.read.gate``)
with ``families_from_json`` and ``backoff_from_json`` and call ``decide``, so they close the gate for
the same reasons, in the same words. Standard library only: `memd status`
imports it without the model client.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pipeline.clock import parse_time
from pipeline.frozen import frozen_by_position

KV_RATE_LIMIT = "rate_limit"
"""kv: the rate-limit headers of the last response (``RateLimitSnapshot.to_json``)."""
KV_BACKOFF = "llm_backoff"
"""kv: ``{"until": iso, "reason": text}``, no new call before ``until``."""


@frozen_by_position
class Family:
    """One rate-limit family (requests, tokens, input tokens, output tokens) as the API last said."""

    limit: int
    remaining: int
    reset: datetime | None

    @property
    def remaining_percent(self) -> float:
        return 100.0 * self.remaining / self.limit if self.limit > 0 else 100.0


@frozen_by_position
class Backoff:
    until: datetime
    reason: str | None


@frozen_by_position
class Decision:
    gated: bool
    reason: str | None
    """Every reason the gate is closed, joined by ``; ``."""
    reset_at: datetime | None
    """When the last of them lifts."""
    remaining_percent: float | None
    """The smallest remaining share of the families with a limit; None when none has one."""


def families_from_json(value: Any) -> dict[str, Family]:
    """The families of a ``rate_limit`` kv value (anything else: none)."""
    families = value.get("families") if isinstance(value, Mapping) else None
    if not isinstance(families, Mapping):
        return {}
    return {
        str(name): Family(int(f.get("limit", 0)), int(f.get("remaining", 0)), parse_time(f.get("reset")))
        for name, f in families.items()
        if isinstance(f, Mapping)
    }


def backoff_from_json(value: Any) -> Backoff | None:
    """The backoff of an ``llm_backoff`` kv value, or None."""
    if not isinstance(value, Mapping):
        return None
    until = parse_time(value.get("until"))
    if until is None:
        return None
    reason = value.get("reason")
    return Backoff(until, str(reason) if reason else None)


def budget_usd_reason(spent: float, budget: float) -> str:
    """Why the dollar budget closed the gate, and what to do about it."""
    return (
        f"daily budget reached: ${spent:.2f} of ${budget:.2f} spent today (UTC); no new model call "
        "until 00:00 UTC (raise [llm] daily_budget_usd to spend more)"
    )


def utc_day_start(now: datetime) -> datetime:
    now = now.astimezone(UTC)
    return datetime(now.year, now.month, now.day, tzinfo=UTC)


def decide(
    families: Mapping[str, Family],
    *,
    threshold: float,
    backoff: Backoff | None,
    used_today: int,
    budget: int | None,
    now: datetime,
    spent_today_usd: float = 0.0,
    budget_usd: float | None = None,
) -> Decision:
    """The gate as of ``now``: closed by a low rate-limit share, a backoff, or the daily token budget."""
    shares = [f.remaining_percent for f in families.values() if f.limit > 0]
    closed: list[tuple[datetime, str]] = []
    low = [
        (name, f)
        for name, f in families.items()
        if f.limit > 0 and f.remaining_percent < threshold and f.reset is not None and f.reset > now
    ]
    if low:
        reset = max(f.reset for _, f in low if f.reset is not None)
        names = ", ".join(f"{name} {f.remaining_percent:.0f}%" for name, f in low)
        closed.append((reset, f"rate limit below {threshold:g}% ({names} remaining)"))
    if backoff is not None and backoff.until > now:
        closed.append((backoff.until, f"backing off: {backoff.reason or 'the API asked to wait'}"))
    if budget is not None and used_today >= budget:
        closed.append(
            (utc_day_start(now) + timedelta(days=1), f"daily token budget used ({used_today} of {budget})")
        )
    if budget_usd is not None and spent_today_usd >= budget_usd:
        closed.append(
            (utc_day_start(now) + timedelta(days=1), budget_usd_reason(spent_today_usd, budget_usd))
        )
    return Decision(
        gated=bool(closed),
        reason="; ".join(r for _, r in closed) or None,
        reset_at=max(at for at, _ in closed) if closed else None,
        remaining_percent=min(shares) if shares else None,
    )
