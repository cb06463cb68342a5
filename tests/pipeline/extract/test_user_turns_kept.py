"""Phase 1 keeps every user turn of a long session, for every agent: a session ten times the phase-1
budget, with 12 short user turns spread through long shell outputs, goes through a real cycle's scan
and extract against the fake Messages API; the request the model receives carries all 12 turns and
its transcript stays within ``render_token_budget``. (The same sessions, at 1x, 3x and 10x beside
Codex's own phase 1, are ``benchmarks/quality/phase1_user_turns.py``.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.quality.phase1_user_turns import (
    TINY_BUDGET,
    TINY_OUTPUT_CHARS,
    TURNS,
    kept,
    phase1_requests,
    shown_id,
)
from pipeline.extract.compact import estimate_tokens
from tests.source_names import SourceName

pytestmark = [pytest.mark.timeout(120)]


@pytest.mark.parametrize("source", list(SourceName))
def test_a_session_ten_times_the_budget_keeps_every_user_turn_within_the_budget(
    source: SourceName, tmp_path: Path
) -> None:
    sent, _ = asyncio.run(phase1_requests(tmp_path, 10, TINY_BUDGET, TINY_OUTPUT_CHARS, sources=[source]))
    transcript = sent[shown_id(source, 10)]
    assert "items omitted" in transcript  # the session did not fit: phase 1 had to cut
    assert kept(transcript, source, 10) == TURNS
    assert estimate_tokens(transcript) <= TINY_BUDGET
