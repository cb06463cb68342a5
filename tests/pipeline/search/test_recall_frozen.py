"""The search's recall on the labelled fixture may not fall below the figures committed here
(``benchmarks/search_eval_bench.py`` prints them beside a plain BM25)."""

from __future__ import annotations

from benchmarks.search_eval_bench import TARGETS, run

FROZEN = {
    "recall_at_5": 1.0,
    "top_1": 0.99,
    "no_result_precision": 1.0,
    "no_result_recall": 1.0,
}
"""memd's figures when they were frozen (raise them when a change improves them)."""


def test_memd_s_search_keeps_its_frozen_figures_and_beats_plain_bm25() -> None:
    figures = run()
    memd, plain = figures["memd"], figures["plain BM25"]
    for key, frozen in FROZEN.items():
        assert getattr(memd, key) >= frozen, (key, getattr(memd, key), memd.misses)
    for key, target in TARGETS.items():
        assert getattr(memd, key) >= target
    assert memd.superseded_offered == 0
    assert memd.leaked == 0, memd.misses
    assert memd.recall_at_5 > plain.recall_at_5
    assert memd.top_1 > plain.top_1
    assert memd.no_result_recall > plain.no_result_recall
