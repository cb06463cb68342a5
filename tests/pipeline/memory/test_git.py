"""The hardened git runner: nothing from a repository's config or hooks runs; failures carry stderr."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.memory.git import run_git, safe_env


async def test_hooks_fsmonitor_and_aliases_in_a_repository_config_never_run(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    await run_git(repo, "init", "-q")
    marker = tmp_path / "ran"
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / hook).chmod(0o755)
    with (repo / ".git" / "config").open("a") as f:
        f.write(
            f"[core]\n\tfsmonitor = touch {marker}\n\thooksPath = {hooks}\n\tpager = touch {marker}\n"
            f"[diff]\n\texternal = touch {marker}\n[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = touch {marker}\n"
        )
    (repo / "a.md").write_text("a\n")
    await run_git(repo, "add", "-A")
    await run_git(repo, "commit", "-q", "-m", "one")
    (repo / "a.md").write_text("b\n")
    await run_git(repo, "status", "--porcelain")
    await run_git(repo, "diff", "--no-ext-diff")
    await run_git(repo, "log", "-p")
    assert not marker.exists()


async def test_a_failure_raises_with_stderr(tmp_path: Path) -> None:
    with pytest.raises(MemoryRepoError) as info:
        await run_git(tmp_path, "log")
    assert "not a git repository" in info.value.stderr
    assert "not a git repository" in str(info.value)
    result = await run_git(tmp_path, "log", check=False)
    assert result.returncode != 0


async def test_a_hung_git_times_out_and_is_killed(tmp_path: Path) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    pid_file = tmp_path / "pid"
    (fake_bin / "git").write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 30\n")
    (fake_bin / "git").chmod(0o755)
    with pytest.raises(MemoryRepoError, match="timed out"):
        await run_git(tmp_path, "status", timeout_s=0.5, env={"PATH": f"{fake_bin}:/usr/bin:/bin"})
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_missing_git_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MemoryRepoError, match="git is not installed"):
        await run_git(tmp_path, "status", env={"PATH": str(tmp_path)})


def test_the_environment_git_sees_carries_nothing_of_the_users() -> None:
    env = safe_env()
    assert set(env) >= {"PATH", "HOME", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_TERMINAL_PROMPT"}
    assert env["HOME"] == "/nonexistent"
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert "ANTHROPIC_API_KEY" not in env
    assert "SSH_AUTH_SOCK" not in env
