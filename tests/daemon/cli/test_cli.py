from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from daemon.cli import COMMANDS
from pipeline import __version__
from tests.daemon.cli.startup import imported
from tests.daemon.memd_inprocess import Ran, memd


def _env(env: dict[str, str] | None) -> dict[str, str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    full_env.update(env or {})
    return full_env


def _process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`memd ARGS` as a whole process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args], capture_output=True, text=True, env=_env(env), timeout=60
    )


HELP_NEVER_LOADS = (
    "sqlalchemy",
    "structlog",
    "anthropic",
    "pipeline.llm",
    "pipeline.consolidate",
    "pipeline.redaction",
    "pipeline.memory.steer",
    "rich",
)
"""What listing the commands never needs: each command's module is imported for its help line, and
what it runs with (the store, logging, the model client, the consolidation, the redaction engine,
the steering, the terminal renderer) is imported when it runs (issue 34)."""


def test_help_lists_every_command_and_imports_none_of_what_they_run_with() -> None:
    done = imported(["--help"], {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")})
    assert done.loaded(HELP_NEVER_LOADS) == []
    for name in COMMANDS:
        assert re.search(rf"^  {name}\b", done.stdout, re.M), name


def _memd(*args: str, env: dict[str, str] | None = None) -> Ran:
    """`memd ARGS` through its entry point in this process (no process start per call)."""
    return memd(_env(env), *args)


def test_version() -> None:
    done = _process("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"memd {__version__}"


def test_bad_config_exits_2_with_one_line_naming_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[memories]\nmax_rollouts_per_run = 0\n")
    done = _memd("--config", str(path), "config", "validate")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"{path}: memories.max_rollouts_per_run" in done.stderr


def test_config_init_writes_a_valid_commented_file_and_show_reports_origins(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    done = _memd("config", "init", env=env)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "cfg" / "memd" / "config.toml"
    assert written.exists()
    assert _memd("config", "init", env=env).returncode == 1  # refuses to overwrite
    assert _memd("config", "validate", env=env).returncode == 0
    written.write_text("[schedule]\nscan_interval_minutes = 3\n")
    show = _memd("config", "show", env={**env, "MEMD_LLM__MAX_CONCURRENCY": "2"})
    assert show.returncode == 0, show.stderr
    assert re.search(rf"scan_interval_minutes *= 3.0  # file {re.escape(str(written))}", show.stdout)
    assert re.search(r"max_concurrency *= 2  # env MEMD_LLM__MAX_CONCURRENCY", show.stdout)
    assert "# default" in show.stdout
