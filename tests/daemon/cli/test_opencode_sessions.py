"""OpenCode sessions as a user meets them: `memd scan` names their agent and project, and
`memd run --once --dry-run` counts them among what it would extract (a real subprocess; the scans
through memd's entry point in this process)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.daemon.memd_inprocess import memd
from tests.daemon.memd_process import EXIT_TIMEOUT_S
from tests.pipeline.sources.opencode_support import SAMPLE_SESSION, new_session, sample_db


def _env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(
        {
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / "data"),
            "MEMD_SOURCES__CLAUDE_CODE__ENABLED": "false",
            "MEMD_SOURCES__CODEX__ENABLED": "false",
            "MEMD_SOURCES__GEMINI_CLI__ENABLED": "false",
            "MEMD_SOURCES__PI__ENABLED": "false",
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
        }
    )
    repo = tmp_path / "work" / "shop"
    (repo / "api").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    db = sample_db(home / "data" / "opencode")
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_shop", str(repo / "api"), int(time.time() * 1000) - 3_600_000, turns=2)
    conn.close()
    return env, repo


def _process(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`memd ARGS` as a whole process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_S * 3,
    )


def test_memd_scan_shows_opencode_sessions_with_their_project(tmp_path: Path) -> None:
    env, repo = _env(tmp_path)
    done = memd(env, "scan", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    sessions = {s["session_id"]: s for s in json.loads(done.stdout)}
    assert set(sessions) == {SAMPLE_SESSION, "ses_shop"}
    shop = sessions["ses_shop"]
    assert (shop["source"], shop["project"], shop["state"]) == ("opencode", str(repo), "eligible")
    assert shop["path"].endswith("opencode.db#ses_shop")
    table = memd(env, "scan", "--all")
    assert table.returncode == 0, table.stderr[-3000:]
    assert "opencode" in table.stdout


def test_run_once_dry_run_counts_them(tmp_path: Path) -> None:
    env, _ = _env(tmp_path)
    done = _process(env, "run", "--once", "--dry-run")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "would extract" in out
    assert "ses_shop" in out
    assert SAMPLE_SESSION in out
    assert out.strip().splitlines()[-1].startswith("dry run: scan ok, extract ok")
