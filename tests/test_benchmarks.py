"""Every benchmark script still runs to its verdict on a tiny corpus.

The figures themselves are the scripts' business (they print them beside a baseline measured in the
same run); this only keeps the scripts from rotting: a benchmark that crashed on a settings field
added since, or on a changed constructor, went unnoticed until someone needed its figures.
A tiny corpus may miss a target (exit 1, with the figures printed); a crash is a traceback. So no
benchmark's verdict is checked here, nor anywhere in CI: run the scripts with their defaults for that.
Each runs as a whole process, as a developer runs it (several time whole processes themselves).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"

TINY: dict[str, list[str]] = {
    "aider_walk_bench": ["--projects", "20", "--histories", "3", "--repeat", "1"],
    "cost_bench": ["--tiny"],
    "generalise_bench": ["--tiny"],
    "idle_bench": ["--seconds", "1", "--settle", "0", "--baseline", "none"],
    "mcp_bench": ["--repeat", "1", "--scopes", "3", "--topics", "3", "--searches", "3", "--baseline", "none"],
    "opencode_bench": ["--sessions", "40", "--changed", "2", "--repeat", "1"],
    "opencode_bomb_bench": ["--size", "1000000", "--huge-mb", "17", "--repeat", "1"],
    "phase2_bench": [
        "--repeat",
        "1",
        "--scopes",
        "2",
        "--topics",
        "3",
        "--inputs",
        "2",
        "--tool-calls",
        "10",
    ],
    "quality_bench": ["--tiny"],
    "recall_bench": ["--repeat", "1", "--topics", "4"],
    "redaction_bench": ["--repeat", "1", "--rounds", "1", "--sample", "100"],
    "redaction_corpus_bench": ["--repeat", "1", "--rounds", "1", "--sample", "200"],
    "redaction_sweep_bench": ["--per-family", "20"],
    "render_bench": ["--samples", "{samples}"],
    "scan_bench": ["--files", "100", "--repeat", "1", "--append-max-mb", "1", "--sizes", "100"],
    "search_eval_bench": [],
    "sources_bench": ["--sizes-mb", "0.1", "--repeat", "1"],
    "status_bench": ["--runs", "2", "--sessions", "40"],
    "tombstones_bench": ["--tombstones", "100", "--repeat", "1"],
    "tool_marks_bench": ["--topics", "8"],
    "ui_bench": ["--runs", "1", "--sessions", "40", "--scopes", "2", "--topics", "2"],
}


def samples(tmp_path: Path) -> Path:
    """The fixture transcripts laid out as render_bench's samples folder (one folder per agent)."""
    root = tmp_path / "samples"
    root.mkdir()
    for agent in ("claude_code", "codex", "gemini_cli", "pi"):
        (root / agent.replace("_", "-")).symlink_to(FIXTURES / agent)
    return root


def test_every_benchmark_script_is_listed() -> None:
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*_bench.py")}
    assert scripts == set(TINY)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(TINY))
def test_the_benchmark_runs_to_its_verdict(name: str, tmp_path: Path) -> None:
    args = [arg.format(samples=samples(tmp_path)) if arg == "{samples}" else arg for arg in TINY[name]]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    assert done.returncode in (0, 1), (done.returncode, done.stderr[-3000:])
    assert done.stdout.strip(), "the benchmark printed no figures"
