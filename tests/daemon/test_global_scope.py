"""Each scope holds what it is for, through a whole cycle (the scenario of
``benchmarks/quality/global_scope.py``): a consolidation model that writes a project's facts and a
tool-only memory into ``global/``, and keys memd does not know into a topic's frontmatter. memd
sends each back on the repair turn and refuses a run that keeps them; without the checks the same
model lands them and the keys vanish without a word."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.quality.global_scope import UNKNOWN, replay

pytestmark = [pytest.mark.timeout(180)]


def test_a_model_that_fixes_what_the_repair_turn_names_lands_only_the_users_preference(
    tmp_path: Path,
) -> None:
    landed = asyncio.run(replay(tmp_path, checked=True, fixes=True))
    assert landed.outcome == "committed"
    assert (landed.project_facts, landed.from_tools, landed.preferences) == (0, 0, 1)
    assert landed.keys_written == landed.keys_reported == len(UNKNOWN)
    assert (landed.keys_kept, landed.keys_silent) == (0, 0)


def test_a_model_that_keeps_them_is_refused_and_nothing_lands(tmp_path: Path) -> None:
    landed = asyncio.run(replay(tmp_path, checked=True, fixes=False))
    assert landed.outcome == "failed"
    assert (landed.project_facts, landed.from_tools, landed.preferences) == (0, 0, 0)
    assert landed.keys_reported == len(UNKNOWN)
    assert landed.keys_silent == 0


def test_without_the_checks_the_same_model_lands_them_and_loses_the_keys_in_silence(tmp_path: Path) -> None:
    landed = asyncio.run(replay(tmp_path, checked=False, fixes=True))
    assert landed.outcome == "committed"
    assert (landed.project_facts, landed.from_tools) == (2, 1)
    assert landed.keys_reported == 0
    assert landed.keys_silent == len(UNKNOWN)
