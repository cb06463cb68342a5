"""`memd status`, `memd recall` and `memd scan` read the settings the daemon would run with, and
refuse what it refuses: exit 2 naming the file and the key (in process, through click)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli


def invoke(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, env=env)
    return result.exit_code, result.stdout, result.stderr


def test_a_lower_case_override_moves_status_where_it_moves_the_daemon(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    code, out, _ = invoke(["status", "--json"], env={"MEMD_paths__state_db": f"sqlite:///{other}"})
    assert json.loads(out)["state_db"] == f"sqlite:///{other}"
    assert code == 1  # no store there yet: down


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[llm]\ndaily_token_budget = 0\n", "llm.daily_token_budget"),
        ("[memories]\nmin_rate_limit_remaining_percent = 150\n", "memories.min_rate_limit_remaining_percent"),
        ('[schedule]\nscan_interval_minutes = "often"\n', "schedule.scan_interval_minutes"),
        ("[publish]\nclaude_code = 3\n", "publish.claude_code"),
        ("[llm]\nno_such_key = 1\n", "llm.no_such_key"),
        ("[nosection]\nkey = 1\n", "nosection"),
    ],
    ids=[
        "zero-budget",
        "percent-over-100",
        "wrong-type",
        "wrong-type-bool",
        "unknown-key",
        "unknown-section",
    ],
)
def test_status_refuses_a_bad_config_like_the_daemon(tmp_path: Path, text: str, key: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    code, out, err = invoke(["--config", str(config), "status"])
    assert code == 2, out
    assert str(config) in err
    assert key in err
    assert out == ""


def test_status_refuses_a_bad_environment_value(tmp_path: Path) -> None:
    code, _, err = invoke(["status"], env={"MEMD_llm__daily_token_budget": "0"})
    assert code == 2
    assert "MEMD_llm__daily_token_budget" in err
    assert "llm.daily_token_budget" in err


def test_recall_reads_the_memory_a_lower_case_override_names(tmp_path: Path) -> None:
    memory = tmp_path / "mem"
    (memory / "global").mkdir(parents=True)
    (memory / "global" / "memory_summary.md").write_text("Prefer tabs in the Makefile.\n")
    code, out, _ = invoke(["recall", "--cwd", str(tmp_path)], env={"MEMD_Paths__Memory_Dir": str(memory)})
    assert code == 0
    assert "Prefer tabs in the Makefile." in out
