"""Exit statuses: one table (``daemon.exits.Exit``), one meaning per code, the same in the docs' Commands page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from daemon.exits import Exit

COMMANDS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "commands.md"


def test_the_commands_page_lists_every_exit_status_and_nothing_else() -> None:
    rows = re.findall(r"^\| `(\d+)` \| `Exit\.([A-Z_]+)` \|", COMMANDS_PAGE.read_text(), flags=re.MULTILINE)
    assert {(int(code), name) for code, name in rows} == {(e.value, e.name) for e in Exit}


@pytest.mark.parametrize(
    "argv",
    [
        ["--no-such-option", "status"],
        ["no-such-command"],
        ["status", "--no-such-option"],
        ["inbox", "accept"],  # a missing argument
        ["publish", "--json", "extra"],
    ],
)
def test_a_usage_error_has_its_own_status_not_the_config_one(argv: list[str]) -> None:
    done = CliRunner().invoke(cli, argv)
    assert done.exit_code == Exit.USAGE, done.output
    assert Exit.USAGE != Exit.CONFIG


def test_conflicting_options_are_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    config = tmp_path / "memd.toml"
    config.write_text(
        f'[paths]\nstate_dir = "{tmp_path / "state"}"\nstate_db = "sqlite:///{tmp_path}/s.db"\n'
    )
    base = ["--config", str(config)]
    both = runner.invoke(cli, [*base, "forget", "--session", "x", "--project", "y"])
    assert both.exit_code == Exit.USAGE, both.output
    dry = runner.invoke(cli, [*base, "run", "--dry-run"])
    assert dry.exit_code == Exit.USAGE, dry.output
    wait = runner.invoke(cli, [*base, "run", "--wait"])
    assert wait.exit_code == Exit.USAGE, wait.output


def test_a_bad_config_is_the_config_status(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[schedule]\nscan_interval_minutes = 0\n")
    done = CliRunner().invoke(cli, ["--config", str(config), "publish"])
    assert done.exit_code == Exit.CONFIG
    assert "schedule.scan_interval_minutes" in done.output


@pytest.mark.parametrize("argv", [["--help"], ["status"], ["status", "--json"]])
def test_a_reader_that_left_ends_the_command_quietly_with_the_shell_s_status(
    tmp_path: Path, argv: list[str]
) -> None:
    """`memd status | head -1`: the reader may close the pipe before memd wrote; memd then ends as
    a command killed by SIGPIPE would (141, which no one reads as success), with nothing on stderr."""
    config = tmp_path / "memd.toml"
    config.write_text(f'[paths]\nstate_dir = "{tmp_path}"\nstate_db = "sqlite:///{tmp_path}/s.db"\n')
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "daemon", "--config", str(config), *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=COMMANDS_PAGE.parents[1],
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert done.returncode == Exit.READER_GONE == 141
    assert done.stderr == b""
