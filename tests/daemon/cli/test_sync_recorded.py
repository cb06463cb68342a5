"""`memd sync` records its result where `memd status` reads it: under this machine's id."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli


def _config(tmp_path: Path, remote: Path) -> Path:
    config = tmp_path / "memd.toml"
    config.write_text(
        "[paths]\n"
        f'memory_dir = "{tmp_path / "memory"}"\n'
        f'state_db = "sqlite:///{tmp_path / "state" / "state.db"}"\n'
        f'state_dir = "{tmp_path / "state"}"\n'
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "claude"}"\n'
        f'[sync]\nremote = "{remote}"\n'
    )
    return config


def test_status_shows_the_sync_that_memd_sync_recorded(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    base = ["--config", str(_config(tmp_path, remote))]
    runner = CliRunner()

    # Any earlier command names this machine (creates its id): here `memd publish`.
    assert runner.invoke(cli, [*base, "publish"]).exit_code == 0

    synced = runner.invoke(cli, [*base, "sync"], env={"ANTHROPIC_API_KEY": ""})
    assert synced.exit_code == 0, synced.output

    shown = json.loads(runner.invoke(cli, [*base, "status", "--json"]).stdout)["sync"]
    assert shown["last_fetch_at"] is not None, shown
    assert shown["last_error"] is None
