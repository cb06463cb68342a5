"""`memd scan` end to end: the real CLI over the project's fixture transcripts of all four agents (as a
whole process where the process is the point, else through its entry point in this process)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.daemon.memd_inprocess import Ran, memd

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "claude_code" / "projects", home / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex", home / ".codex")
    shutil.copytree(FIXTURES / "gemini_cli", home / ".gemini")
    shutil.copytree(FIXTURES / "pi" / "sessions", home / ".pi" / "agent" / "sessions")
    bad = home / ".claude" / "projects" / "-home-dev-bad"
    bad.mkdir()
    for name in ("binary.jsonl", "array.jsonl", "nul_only.jsonl", "empty.jsonl", "only_partial.jsonl"):
        shutil.copy(FIXTURES / "hostile" / name, bad / name)
    day = home / ".codex" / "sessions" / "2026" / "09" / "30"
    day.mkdir(parents=True, exist_ok=True)
    shutil.copy(
        FIXTURES / "hostile" / "rollout-corrupt.jsonl.zst",
        day / "rollout-2026-09-30T10-00-00-corrupt.jsonl.zst",
    )
    return home


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "CODEX_HOME"))}
    env.update(
        {
            "HOME": str(home),
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
            "MEMD_LOG_LEVEL": "WARNING",
            "COLUMNS": "200",
        }
    )
    return env


def _process(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`memd ARGS` as a whole process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
    )


def _memd(home: Path, *args: str) -> Ran:
    """`memd ARGS` through its entry point in this process (what it prints and its status, without a
    process start per call; the whole process: ``_process``)."""
    return memd(_env(home), *args)


def test_scan_json_lists_every_session_of_every_source_with_state_and_reason(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _process(home, "scan", "--json")
    assert done.returncode == 0, done.stderr
    sessions = json.loads(done.stdout)
    assert {s["source"] for s in sessions} == {"claude_code", "codex", "gemini_cli", "pi"}
    keys = {"source", "path", "session_id", "project", "user_messages", "last_activity", "subagent"}
    keys |= {"external_context", "state", "reason"}
    for s in sessions:
        assert keys <= set(s), s
        assert isinstance(s["external_context"], list)
        assert s["state"] in {"eligible", "skipped", "unreadable", "incomplete", "active"}, s
        if s["state"] != "eligible":
            assert s["reason"], s
    assert any(s["state"] == "eligible" for s in sessions)
    bad = {
        Path(s["path"]).name: s for s in sessions if "-home-dev-bad" in s["path"] or "corrupt" in s["path"]
    }
    assert set(bad) == {
        "binary.jsonl",
        "array.jsonl",
        "nul_only.jsonl",
        "empty.jsonl",
        "only_partial.jsonl",
        "rollout-2026-09-30T10-00-00-corrupt.jsonl.zst",
    }
    assert all(s["state"] in {"unreadable", "incomplete"} and s["reason"] for s in bad.values())
    assert any(s["external_context"] for s in sessions)


def test_scan_table_summarizes_by_source_and_state_and_a_second_scan_reads_nothing_new(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    first = _memd(home, "scan")
    assert first.returncode == 0, first.stderr
    assert "Sessions (" in first.stdout
    assert "eligible" in first.stdout
    assert "Eligible, failed or changed in this scan" in first.stdout
    second = _memd(home, "scan")
    assert second.returncode == 0, second.stderr
    assert " 0 parsed" in second.stdout
    every = _memd(home, "scan", "--all")
    assert "All sessions" in every.stdout


def test_a_second_scan_with_nothing_changed_skips_the_store_layer_and_shows_the_same(tmp_path: Path) -> None:
    home = _home(tmp_path)
    assert _memd(home, "scan").returncode == 0
    # The second scan runs under -X importtime, to see what it loaded.
    second = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "daemon", "scan", "--json"],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
    )
    assert second.returncode == 0, second.stderr
    loaded = {line.split("|")[-1].strip() for line in second.stderr.splitlines() if "|" in line}
    # Neither the settings model nor the store layer nor any adapter: the walk and the index only.
    assert not {"sqlalchemy", "pydantic", "pipeline.store.engine", "pipeline.sources.base"} & loaded
    assert "pipeline.sources.walk" in loaded
    # What it shows is what a full scan of the same store shows.
    index = home / ".local" / "state" / "memd" / "scan-index.bin"
    assert index.exists()
    index.unlink()
    full = _memd(home, "scan", "--json")
    assert full.returncode == 0, full.stderr
    assert json.loads(second.stdout) == json.loads(full.stdout)


def test_a_first_scan_from_a_permissive_shell_keeps_the_state_private(tmp_path: Path) -> None:
    """The state store holds extracts: whatever the umask of the shell that first runs memd (022
    here), what memd creates is 0600 files in 0700 folders."""
    home = _home(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.umask(0o022); from daemon.cli import main; main(sys.argv[1:])",
            "scan",
        ],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    state = home / ".local" / "state" / "memd"
    created = [state, *state.rglob("*")]
    assert len(created) > 2
    for path in created:
        mode = path.stat().st_mode & 0o777
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"


def test_the_scan_table_shows_the_path_of_every_file_it_cannot_read(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _memd(home, "scan")
    assert done.returncode == 0, done.stderr
    records = json.loads(_memd(home, "scan", "--json").stdout)
    cannot_read = [r for r in records if r["state"] in ("unreadable", "failed", "incomplete")]
    assert any(Path(r["path"]).name == "empty.jsonl" for r in cannot_read)
    lines = [line.strip() for line in done.stdout.splitlines()]
    for record in cannot_read:
        assert any(line.endswith(record["path"]) for line in lines), record["path"]


def test_an_escape_sequence_in_a_path_is_shown_escaped_never_sent_to_the_terminal(tmp_path: Path) -> None:
    home = _home(tmp_path)
    hostile = home / ".claude" / "projects" / "-home-dev-\x1b]0;owned\x07\x1b[2J"
    hostile.mkdir()
    shutil.copy(FIXTURES / "hostile" / "empty.jsonl", hostile / "empty.jsonl")
    for args in (("scan",), ("scan", "--all")):  # the full scan, then the quick check with every row
        done = _memd(home, *args)
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout
        assert "\x07" not in done.stdout
        assert "-home-dev-\\x1b]0;owned\\x07\\x1b[2J" in done.stdout, done.stdout
