"""``benchmarks/quality_bench.py``: its table, a live run that never starts without a key, and the
live path end to end (the real ``anthropic`` client against the loopback fake of the Messages API,
through ``ANTHROPIC_BASE_URL``), whose token and cost lines must carry the API's usage figures."""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.quality import SCENARIOS, Figure, newer_wins, planted_facts
from pipeline.llm.pricing import Usage, cost_usd
from pipeline.settings import LLMSettings
from tests.daemon.cycle_support import Answers
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, usage
from tests.fakes.fixtures import FAKE_API_KEY

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from quality_bench import main, table  # noqa: E402

LIVE = [n for n in SCENARIOS if hasattr(importlib.import_module(f"benchmarks.quality.{n}"), "live")]


def test_every_scenario_module_exposes_its_name_and_run() -> None:
    import importlib

    for name in SCENARIOS:
        module = importlib.import_module(f"benchmarks.quality.{name}")
        assert isinstance(module.NAME, str)
        assert callable(module.run)


def test_every_scenario_runs_live_or_says_why_its_outcome_does_not_depend_on_the_model() -> None:
    for name in SCENARIOS:
        module = importlib.import_module(f"benchmarks.quality.{name}")
        reason = getattr(module, "NO_LIVE", None)
        assert callable(getattr(module, "live", None)) != bool(reason), name
    assert {"planted_facts", "newer_wins"} <= set(LIVE)


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


EXTRACT_USAGE = usage(1_234, 56)
CONSOLIDATE_USAGE = usage(2_000, 300, cache_read=700, cache_write=11)
SCRIPTED: dict[str, Callable[[], Answers]] = {
    "planted_facts": lambda: Answers(planted_facts.naive_extract, planted_facts.naive_consolidate),
    "newer_wins": lambda: Answers(newer_wins.extract, newer_wins.Appender()),
}
"""Each live scenario's scripted answers, standing in for the model behind the fake."""


class Priced:
    """The scripted answers, each reporting the usage the test chose, from memd's default models."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        response = self.answers(body, headers)
        consolidating = bool(body.get("tools"))
        response.json["usage"] = CONSOLIDATE_USAGE if consolidating else EXTRACT_USAGE
        models = LLMSettings()
        response.json["model"] = models.consolidation_model if consolidating else models.extract_model
        return response


def _as_usage(raw: dict[str, int], times: int = 1) -> Usage:
    return Usage(
        raw["input_tokens"] * times,
        raw["output_tokens"] * times,
        raw["cache_read_input_tokens"] * times,
        raw["cache_creation_input_tokens"] * times,
    )


def _cell(model: str, spent: Usage) -> str:
    sent = spent.input_tokens + spent.cache_read_tokens + spent.cache_write_tokens
    return f"{sent:,}/{spent.output_tokens:,}, ${cost_usd(model, spent):.4f}"


def _rows(out: str, prefix: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line) for line in out.splitlines() if line.startswith(prefix)]


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """``main`` configures the root logger for the figures; give the next tests theirs back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", LIVE)
@pytest.mark.usefixtures("logging_restored")
def test_a_live_run_prints_the_apis_tokens_and_cost_per_session_and_per_consolidation(
    name: str,
    fake_api: FakeAnthropicAPI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    fake_api.responder = Priced(SCRIPTED[name]())

    assert main(["--live", "--tiny", "--only", name]) == 0
    out = capsys.readouterr().out

    models = LLMSettings()
    requests = [r.json for r in fake_api.message_requests()]
    sessions = {
        m.group(1)
        for body in requests
        if not body.get("tools")
        for m in [re.search(r"^- Session: (\S+)$", str(body["messages"][0]["content"]), re.M)]
        if m
    }
    session_rows = _rows(out, "session ")
    assert len(session_rows) == len(sessions) > 0, out
    for row in session_rows:
        assert row[1] == _cell(models.extract_model, _as_usage(EXTRACT_USAGE)), out
        whole = re.fullmatch(r"whole session ([\d,]+) in, \$\d+\.\d{4}", row[2])
        assert whole is not None, row
        assert int(whole.group(1).replace(",", "")) > 0, row

    # one consolidation run per conversation (its first message), every turn's usage summed
    turns = Counter(json.dumps(b["messages"][0], sort_keys=True) for b in requests if b.get("tools"))
    consolidation_rows = _rows(out, "consolidation ")
    assert consolidation_rows, out
    expected = [
        _cell(models.consolidation_model, _as_usage(CONSOLIDATE_USAGE, n))
        for n in list(turns.values())[: len(consolidation_rows)]
    ]
    assert sorted(row[1] for row in consolidation_rows) == sorted(expected), out
