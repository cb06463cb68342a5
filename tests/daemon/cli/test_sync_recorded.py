"""`memd sync` records its result where `memd status` reads it: under this machine's id."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from tests.configs import write_config


def _config(tmp_path: Path, remote: Path) -> Path:
    return write_config(
        tmp_path,
        f'[sources.claude_code]\nroot = "{tmp_path / "claude"}"\n[sync]\nremote = "{remote}"\n',
        state_db=tmp_path / "state" / "state.db",
    )


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


def test_memd_sync_with_an_unwritable_memory_repository_fails_before_fetching(tmp_path: Path) -> None:
    from pipeline.gitrepo.repository import LOCK_FILE

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    base = ["--config", str(_config(tmp_path, remote))]
    runner = CliRunner()
    assert runner.invoke(cli, [*base, "sync"], env={"ANTHROPIC_API_KEY": ""}).exit_code == 0
    before = json.loads(runner.invoke(cli, [*base, "status", "--json"]).stdout)["sync"]
    lock = tmp_path / "memory" / ".git" / LOCK_FILE
    lock.unlink(missing_ok=True)
    lock.mkdir()  # the lock cannot be opened (as an unwritable .git would do)

    failed = runner.invoke(cli, [*base, "sync"], env={"ANTHROPIC_API_KEY": ""})
    assert failed.exit_code == 1, failed.output
    assert f"sync with {remote}: failed" in failed.output
    assert f"the memory repository {tmp_path / 'memory'} cannot be written: {lock}" in failed.output

    shown = json.loads(runner.invoke(cli, [*base, "status", "--json"]).stdout)["sync"]
    assert shown["outcome"] == "failed", shown
    assert "cannot be written" in shown["last_error"]
    assert shown["last_fetch_at"] == before["last_fetch_at"]  # nothing was fetched
