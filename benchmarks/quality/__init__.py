"""Memory-quality scenarios for ``benchmarks/quality_bench.py`` (issue 27).

Each module named in ``SCENARIOS`` replays fixed scenario sessions through memd's own pipeline
(phase 1 and phase 2 with scripted model answers from a loopback fake of the Messages API) and
exposes ``NAME: str`` and ``run(workdir: Path, *, tiny: bool) -> list[Figure]``: every figure is
computed from what the pipeline did in that run, beside a baseline measured in the same run. A
scenario whose outcome depends on the model also runs against the real API: it exposes
``live(workdir: Path, *, tiny: bool) -> list[Figure]`` (``quality_bench.py --live``, its tokens and
cost from ``spend.py``); every other one exposes ``NO_LIVE: str``, why its outcome does not.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One measured figure: memd's value, the baseline's, the target, and whether memd met it."""

    name: str
    memd: str
    baseline: str
    target: str = ""
    met: bool | None = None
    """None when the figure has no target (it is reported, not judged)."""


SCENARIOS: list[str] = [
    "phase1_user_turns",
    "nothing_changed",
    "newer_wins",
    "planted_facts",
    "no_duplicates",
    "stale_marked",
    "global_scope",
    "agent_cut",
]
"""Scenario module names in ``benchmarks/quality/``, in the order the bench runs them."""
