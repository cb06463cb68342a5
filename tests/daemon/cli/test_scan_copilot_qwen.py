"""`memd scan` and `memd run --once --dry-run` over the real GitHub Copilot CLI and Qwen Code samples."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.daemon.memd_inprocess import Ran, memd

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
COPILOT_MAIN = "3fd7c126-5204-45fe-bfba-e296d37a14d4"
QWEN_MAIN = "9a6fb558-84a3-408a-bc55-62d5c09b94c1"
QWEN_WITH_SUB_AGENT = "541f0786-a632-49d3-9104-b2507d38fada"


def _memd(home: Path, *args: str, **extra: str) -> Ran:
    """`memd ARGS` through its entry point in this process (no process start per call)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "COPILOT_", "QWEN_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(
        {
            "HOME": str(home),
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
            "MEMD_LOG_LEVEL": "WARNING",
            "COLUMNS": "200",
            **extra,
        }
    )
    return memd(env, *args)


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "copilot_cli" / "session-state", home / ".copilot" / "session-state")
    shutil.copytree(FIXTURES / "qwen_code" / "projects", home / ".qwen" / "projects")
    return home


def test_scan_lists_copilot_and_qwen_sessions_with_their_agent_and_project(tmp_path: Path) -> None:
    done = _memd(_home(tmp_path), "scan", "--json")
    assert done.returncode == 0, done.stderr
    sessions = {s["session_id"]: s for s in json.loads(done.stdout)}
    assert {s["source"] for s in sessions.values()} == {"copilot_cli", "qwen_code"}
    copilot = sessions[COPILOT_MAIN]
    assert (copilot["source"], copilot["project"]) == ("copilot_cli", "/home/dev/ag/work/repo")
    # `copilot -p` is headless: left out unless include_non_interactive says otherwise.
    assert copilot["state"] == "skipped"
    assert "non-interactive" in copilot["reason"]
    qwen = sessions[QWEN_MAIN]
    assert (qwen["source"], qwen["project"], qwen["state"]) == (
        "qwen_code",
        "/home/dev/ag/work/repo/sub",
        "eligible",
    )
    sub = sessions["agent-general-purpose-call_3a25911d2e97493aadf4"]
    assert (sub["subagent"], sub["state"]) == (True, "skipped")
    assert sub["reason"].startswith("sub-agent session")
    assert sessions[QWEN_WITH_SUB_AGENT]["state"] == "eligible"


def test_run_once_dry_run_counts_them(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _memd(home, "run", "--once", "--dry-run", MEMD_MEMORIES__INCLUDE_NON_INTERACTIVE="true")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "would extract" in out
    for session in (COPILOT_MAIN, QWEN_MAIN, QWEN_WITH_SUB_AGENT):
        assert session in out
    assert "agent-general-purpose" not in out  # the sub-agent is part of its parent's work
