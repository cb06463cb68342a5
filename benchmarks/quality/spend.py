"""What a live replay spent: tokens and cost per session (phase 1) and per consolidation (phase 2).

For the scenarios' ``live`` runs (``quality_bench.py --live``). The tokens are the API's own counts
(the ``usage`` each response reported, as memd stored them: a session's extract in force, a
consolidation run's report), priced by ``pipeline/llm/pricing.py``. Each session is shown beside
itself sent whole (its Codex-style JSON, ``benchmarks/codex_phase1.py``, in memd's estimate of
characters / 3.5, priced at the extraction model's input rate).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.codex_phase1 import codex_json
from benchmarks.quality import Figure
from pipeline.extract.compact import estimate_tokens
from pipeline.extract.item import parse_full
from pipeline.layout import GLOBAL_SCOPE
from pipeline.llm.pricing import Usage, cost_usd
from tests.source_names import SourceName

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def live_api() -> tuple[str | None, str]:
    """The API a live run calls: ``ANTHROPIC_BASE_URL`` if set (a gateway, or a test's loopback
    fake), else the real one (None); and ``ANTHROPIC_API_KEY`` (``quality_bench.py`` stops before a
    live run without it)."""
    return os.environ.get("ANTHROPIC_BASE_URL") or None, os.environ["ANTHROPIC_API_KEY"]


@dataclass
class Spent:
    sessions: list[tuple[str, Usage]] = field(default_factory=list)
    """(model, usage) of each session's phase 1, in the order the sessions were written."""
    whole: list[int] = field(default_factory=list)
    """Each session sent whole (its Codex-style JSON), in estimated tokens."""
    consolidations: list[tuple[str, str, Usage]] = field(default_factory=list)
    """(scope, model, usage) of each consolidation run that called the model, in the order they ran."""


def consolidations(result: object, model: str) -> list[tuple[str, str, Usage]]:
    """(scope, model, usage) of each scope the cycle's consolidate step ran the model for."""
    return [
        (s.scope, model, s.usage)
        for step in getattr(result, "results", ())
        if step.name == "consolidate"
        for s in getattr(step.report, "scopes", ())
        if s.usage.total_tokens
    ]


async def sessions(state_db: str, paths: list[Path]) -> list[tuple[str, Usage]]:
    """(model, usage) of each session's extract in force, as phase 1 stored it."""
    from pipeline.store import open_store, stage1

    store = await open_store(state_db)
    found: dict[str, tuple[str, Usage]] = {}
    try:
        tid = 1
        while (row := await stage1.get_transcript(store, tid)) is not None:
            extract = await stage1.current_output(store, tid)
            if extract is not None:
                u = extract.usage
                found[row.path] = (extract.model, Usage(*(int(u.get(f, 0)) for f in USAGE_FIELDS)))
            tid += 1
    finally:
        await store.close()
    return [found[str(p)] for p in paths if str(p) in found]


def whole_tokens(paths: list[Path], source: SourceName = SourceName.CLAUDE_CODE) -> list[int]:
    out = []
    for path in paths:
        parsed = parse_full(source, path)
        out.append(estimate_tokens(codex_json(parsed.transcript.items)) if parsed.transcript else 0)
    return out


def _tokens(usage: Usage) -> str:
    sent = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    return f"{sent:,}/{usage.output_tokens:,}"


def figures(spent: Spent) -> list[Figure]:
    """One figure per session and one per consolidation: tokens in/out and cost."""
    out: list[Figure] = []
    extract_model = spent.sessions[0][0] if spent.sessions else "claude-haiku"
    for n, ((model, usage), whole) in enumerate(zip(spent.sessions, spent.whole, strict=False), start=1):
        whole_cost = cost_usd(extract_model, Usage(input_tokens=whole))
        out.append(
            Figure(
                f"session {n}: phase-1 tokens in/out, cost",
                f"{_tokens(usage)}, ${cost_usd(model, usage):.4f}",
                f"whole session {whole:,} in, ${whole_cost:.4f}",
            )
        )
    for n, (scope, model, usage) in enumerate(spent.consolidations, start=1):
        which = "global" if scope == GLOBAL_SCOPE else "project"
        out.append(
            Figure(
                f"consolidation {n} ({which}): tokens in/out, cost",
                f"{_tokens(usage)}, ${cost_usd(model, usage):.4f}",
                "",
            )
        )
    return out
