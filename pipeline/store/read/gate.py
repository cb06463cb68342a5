"""The model-call gate as the store holds it, read once for every reader: phases 1 and 2
(``pipeline.llm.ratelimit.gate_state``, on an open ``Store``) and `memd status` (on ``sqlite3``) read
the same kv values and today's spend here and decide by the one rule (``pipeline.ratelimit_rule``),
so they close the gate for the same reasons, in the same words.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from pipeline import ratelimit_rule as rule
from pipeline.clock import parse_time
from pipeline.store.read.keys import kv_value
from pipeline.store.read.rows import Rows
from pipeline.store.read.runs import spend


class GateState(NamedTuple):
    """Whether a new model call may start now, and why not."""

    gated: bool
    reason: str | None
    reset_at: datetime | None
    remaining_percent: float | None
    budget_used_today: int
    daily_token_budget: int | None = None
    observed_at: datetime | None = None
    """When the rate-limit headers it read were recorded (None: none recorded)."""


def gate(
    rows: Rows,
    *,
    threshold: float,
    daily_token_budget: int | None,
    daily_budget_usd: float | None,
    now: datetime,
) -> GateState:
    """The gate as of ``now``: closed by the rate-limit share, a backoff, or a daily budget
    (``daily_budget_usd`` 0 or None: no dollar budget)."""
    snapshot = kv_value(rows, rule.KV_RATE_LIMIT)
    today = spend(rows, rule.utc_day_start(now))
    decision = rule.decide(
        rule.families_from_json(snapshot),
        threshold=threshold,
        backoff=rule.backoff_from_json(kv_value(rows, rule.KV_BACKOFF)),
        used_today=today.tokens,
        budget=daily_token_budget,
        now=now,
        spent_today_usd=today.cost_usd,
        budget_usd=daily_budget_usd or None,
    )
    observed = parse_time(snapshot.get("observed_at")) if isinstance(snapshot, dict) else None
    return GateState(
        gated=decision.gated,
        reason=decision.reason,
        reset_at=decision.reset_at,
        remaining_percent=decision.remaining_percent,
        budget_used_today=today.tokens,
        daily_token_budget=daily_token_budget,
        observed_at=observed,
    )
