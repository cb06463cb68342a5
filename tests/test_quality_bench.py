"""``benchmarks/quality_bench.py``: its table, and a live run that never starts without a key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks.quality import SCENARIOS, Figure

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from quality_bench import table  # noqa: E402


def test_every_scenario_module_exposes_its_name_and_run() -> None:
    import importlib

    for name in SCENARIOS:
        module = importlib.import_module(f"benchmarks.quality.{name}")
        assert isinstance(module.NAME, str)
        assert callable(module.run)


def test_the_table_groups_figures_by_scenario_and_says_whether_each_target_was_met() -> None:
    lines = table(
        [
            ("a", Figure("kept", "12/12", "3/12", "12/12", True)),
            ("a", Figure("size", "1", "2")),
            ("b", Figure("x", "0", "1", "0", False)),
        ]
    )
    assert lines[2] == "[a]"
    assert lines[3].split() == ["kept", "12/12", "3/12", "12/12", "yes"]
    assert lines[4].split() == ["size", "1", "2"]
    assert lines[5] == "[b]"
    assert lines[6].split()[-1] == "NO"


def test_a_live_run_without_a_key_says_so_and_calls_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "quality_bench.py"), "--live"],
        cwd=ROOT,
        env={**env, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--live skipped: ANTHROPIC_API_KEY is not set" in done.stdout
