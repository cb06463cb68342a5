"""A dry run's phase 2: the scopes a real run would consolidate now, with tokens and cost.

Phase 2 in a dry run reports the scopes whose extracts exist (``RunOutcome.WOULD_RUN``); the
extracts a real run would make first cannot be seen, so each session phase 1 would extract adds its
project's scope and the global scope (a session's memories about the user feed ``global``).
Estimates are rough: the prompts plus a typical extract per session. ``run_cap`` is the most one
run may spend under ``[memories]``'s caps (``memd consolidate`` prints it before it runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipeline.consolidate.run import PROMPT_OVERHEAD_TOKENS, Phase2Report
from pipeline.extract.run import EXPECTED_OUTPUT_TOKENS
from pipeline.layout import GLOBAL_SCOPE
from pipeline.llm.endpoint import endpoint_for, phase_cost, price_for
from pipeline.llm.pricing import Price, Usage
from pipeline.projects import scope_for
from pipeline.settings import Settings
from pipeline.vocabulary import RunOutcome


@dataclass(frozen=True)
class WouldConsolidate:
    scope: str
    why: str
    estimated_tokens: int
    estimated_cost_usd: float


@dataclass
class DryConsolidation:
    """The scopes phase 2 would run now, and those the extracts a real run would make would add."""

    would_consolidate: list[WouldConsolidate]
    held: list[str]


_Row = Callable[[str, str, int], WouldConsolidate]


@dataclass(frozen=True)
class RunCap:
    """The most one consolidation run may spend: ``tokens`` (``consolidation_token_budget``, checked
    after each turn, so the last turn may pass it by one request), over at most ``turns`` turns
    (``consolidation_max_turns``), ``usd`` the most those tokens can cost on ``model``."""

    model: str
    tokens: int
    turns: int
    max_output_tokens: int
    usd: float
    price: Price | None = None
    """The consolidation endpoint's price when not the table's (``pipeline.llm.endpoint.price_for``)."""


def run_cap(settings: Settings, max_output_tokens: int) -> RunCap:
    """``max_output_tokens``: the most one turn writes. The dollars price the budget at its dearest:
    as many output tokens as the turns can write, the rest as cache writes (the dearest input)."""
    model = settings.llm.consolidation_model
    tokens = settings.memories.consolidation_token_budget
    turns = settings.memories.consolidation_max_turns
    output = min(tokens, turns * max_output_tokens)
    usd = phase_cost(
        settings.llm, "consolidation", model, Usage(output_tokens=output, cache_write_tokens=tokens - output)
    )
    price = price_for(settings.llm, endpoint_for(settings.llm, "consolidation"), model)
    return RunCap(model, tokens, turns, max_output_tokens, usd, price)


def first_request_usd(settings: Settings, tokens: int) -> float:
    """What a first request of ``tokens`` input tokens costs on the consolidation model."""
    return phase_cost(
        settings.llm, "consolidation", settings.llm.consolidation_model, Usage(input_tokens=tokens)
    )


def dry_consolidation(
    report: Phase2Report, would_extract: Sequence[tuple[str | None, str]], settings: Settings
) -> DryConsolidation:
    """``would_extract``: (project, session) of each session phase 1 would extract."""

    def row(scope: str, why: str, tokens: int) -> WouldConsolidate:
        return WouldConsolidate(scope, why, tokens, first_request_usd(settings, tokens))

    rows: dict[str, WouldConsolidate] = {}
    for s in report.scopes:
        if s.outcome == RunOutcome.WOULD_RUN:
            why = f"{s.inputs} inputs ({s.added} new, {s.removed} removed)"
            rows[s.scope] = row(s.scope, why, s.estimated_tokens or 0)
    sessions: dict[str, int] = {}
    for project, _session in would_extract:
        for scope in {scope_for(project), GLOBAL_SCOPE}:  # its memories about the user feed global
            sessions[scope] = sessions.get(scope, 0) + 1
    for scope, n in sessions.items():
        rows[scope] = _after_extracting(rows.get(scope), scope, n, row)
    held = [f"{s.scope}: {s.reason}" for s in report.scopes if s.outcome == RunOutcome.SKIPPED and s.reason]
    return DryConsolidation(sorted(rows.values(), key=lambda r: (r.scope != GLOBAL_SCOPE, r.scope)), held)


def _after_extracting(found: WouldConsolidate | None, scope: str, n: int, row: _Row) -> WouldConsolidate:
    extra = n * EXPECTED_OUTPUT_TOKENS
    if found is not None:
        return row(scope, f"{found.why}, and {_sessions(n)} to extract first", found.estimated_tokens + extra)
    return row(scope, f"after extracting {_sessions(n)}", PROMPT_OVERHEAD_TOKENS + extra)


def _sessions(n: int) -> str:
    return f"{n} session" if n == 1 else f"{n} sessions"
