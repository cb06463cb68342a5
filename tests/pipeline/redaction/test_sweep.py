"""The redaction sweep, sampled: for each fixed-prefix family, the first 300 tokens of its random
stream in five contexts (bare, env assignment, JSON string, URL, HTTP header); not one may survive.

The families, the contexts and the check live in benchmarks/redaction_sweep_bench.py, which sweeps
20,000 tokens per family (too long for the suite); the seed is fixed, so every run draws the same
tokens, and these are the first of the benchmark's.
"""

from __future__ import annotations

import pytest

from benchmarks.redaction_sweep_bench import FAMILIES, PER_FAMILY, survivors, tokens
from pipeline.redaction import Redactor

SAMPLE = 300


def test_sweep_covers_enough_families() -> None:
    assert len(FAMILIES) >= 25


def test_the_sample_is_the_start_of_the_benchmark_stream() -> None:
    assert SAMPLE < PER_FAMILY
    assert tokens("ghp_", SAMPLE) == tokens("ghp_", SAMPLE + 50)[:SAMPLE]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_random_token_survives(redactor: Redactor, family: str) -> None:
    found = survivors(redactor, family, SAMPLE)
    assert {context: missed[:5] for context, missed in found.items()} == {}
