"""Newer wins, by rule, through whole cycles: a value the user changed twice across three sessions
(one cycle each) is published as the last one, although the consolidation model appends every
session's value: memd marks the changed value, flags the topic that keeps a superseded one, and the
repair turn removes it. Without the check the same model publishes all three (the scenario of
``benchmarks/quality/newer_wins.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.quality.newer_wins import VALUES, replay, stated

pytestmark = [pytest.mark.timeout(180)]


def test_the_published_topic_states_only_the_newest_value(tmp_path: Path) -> None:
    published, repairs = asyncio.run(replay(tmp_path, checked=True))
    assert stated(published) == [VALUES[-1]]
    assert repairs == 2  # the second and the third session's runs each needed the repair turn


def test_without_the_check_the_same_model_publishes_every_value(tmp_path: Path) -> None:
    published, repairs = asyncio.run(replay(tmp_path, checked=False))
    assert stated(published) == list(VALUES)
    assert repairs == 0
