"""The hardened git runner: nothing from a repository's config or hooks runs; failures carry stderr."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.git import run_git, safe_env


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
            f"\teditor = touch {marker}\n\tsshCommand = touch {marker}\n[commit]\n\tgpgSign = true\n"
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


async def test_a_hung_gits_whole_process_group_is_killed_with_it(tmp_path: Path) -> None:
    # git's child (ssh, git-remote-https) holding the pipes dies with git at the timeout, and
    # one that let go of them is not left behind when git ends on its own either
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    pids = tmp_path / "pids"
    mode = tmp_path / "mode"
    (fake_bin / "git").write_text(
        "#!/bin/sh\n"
        f'if [ "$(cat {mode})" = hang ]; then sleep 300 & echo $! >> {pids}; wait; fi\n'
        f"sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> {pids}\nexit 0\n"
    )
    (fake_bin / "git").chmod(0o755)
    env = {"PATH": f"{fake_bin}:/usr/bin:/bin"}
    mode.write_text("hang")
    with pytest.raises(MemoryRepoError, match="timed out"):
        await run_git(tmp_path, "fetch", timeout_s=0.5, env=env)
    mode.write_text("exit")
    await run_git(tmp_path, "fetch", env=env)
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 2
    for pid in started:
        assert _dies(pid)


def _dies(pid: int) -> bool:
    """The process is gone or a zombie (killed, not yet reaped by its new parent) within a while: a
    signal is delivered after ``kill`` returns."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


async def test_a_timeout_and_a_failure_name_the_git_subcommand_not_its_options(tmp_path: Path) -> None:
    # A remote's call starts with `-c key=value` pairs: the message still says which git command it was.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection and never answers: git waits
    url = f"git://127.0.0.1:{listener.getsockname()[1]}/memory.git"
    try:
        with pytest.raises(MemoryRepoError) as timed_out:
            await run_git(
                tmp_path, "-c", "protocol.allow=always", "-c", "a.b=c", "ls-remote", url, timeout_s=0.5
            )
    finally:
        listener.close()
    assert str(timed_out.value).startswith("git ls-remote timed out after 0.5 s")
    with pytest.raises(MemoryRepoError) as failed:
        await run_git(tmp_path, "-c", "protocol.allow=never", "-C", str(tmp_path), "log", "-1")
    assert str(failed.value).startswith("git log -1 failed (exit 128)")


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


# -- every way a repository's configuration could make git run a program --------------------------

VECTORS = {
    # name: (.git/config text, .git/info/attributes text); ``{m}`` is the marker command.
    "filter clean and smudge": (
        '[filter "x"]\n\tclean = {m}\n\tsmudge = {m}\n\trequired = true\n',
        "* filter=x\n",
    ),
    "filter process": ('[filter "x"]\n\tprocess = {m}\n', "* filter=x\n"),
    "textconv": ('[diff "x"]\n\ttextconv = {m}\n', "* diff=x\n"),
    "diff driver command": ('[diff "x"]\n\tcommand = {m}\n', "* diff=x\n"),
    "external diff": ("[diff]\n\texternal = {m}\n", ""),
    "merge driver": ('[merge "x"]\n\tdriver = {m}\n', "* merge=x\n"),
    "ssh command": ("[core]\n\tsshCommand = {m}\n", ""),
    "credential helper": ("[credential]\n\thelper = !{m}\n", ""),
    "alternate refs command": ("[core]\n\talternateRefsCommand = {m}\n", ""),
    "pack objects hook": ("[uploadpack]\n\tpackObjectsHook = {m}\n", ""),
    "fsmonitor": ("[core]\n\tfsmonitor = {m}\n", ""),
    "gpg program": ("[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {m}\n", ""),
    "per-command pager": ("[pager]\n\tlog = {m}\n", ""),
    "legacy subsection filter": ("[filter.x]\n\tclean = {m}\n\tsmudge = {m}\n", "* filter=x\n"),
    "hooks path": ("[core]\n\thooksPath = {hooks}\n", ""),
    "include": ("[include]\n\tpath = {inc}\n", "* filter=x\n"),
    "conditional include": ('[includeIf "gitdir:/"]\n\tpath = {inc}\n', "* filter=x\n"),
}


async def _plant(tmp_path: Path, vector: str) -> tuple[Path, Path]:
    repo = tmp_path / "r"
    repo.mkdir()
    await run_git(repo, "init", "-q")
    (repo / "a.md").write_text("a\n")
    await run_git(repo, "add", "-A")
    await run_git(repo, "commit", "-q", "-m", "one")
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-commit", "post-checkout", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / hook).chmod(0o755)
    inc = tmp_path / "included.gitconfig"
    inc.write_text(f'[filter "x"]\n\tclean = {script}\n\tsmudge = {script}\n')
    config, attributes = VECTORS[vector]
    with (repo / ".git" / "config").open("a") as f:
        f.write(config.format(m=script, hooks=hooks, inc=inc))
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text(attributes)
    return repo, marker


@pytest.mark.parametrize("vector", sorted(VECTORS))
async def test_nothing_a_repository_config_names_ever_runs(tmp_path: Path, vector: str) -> None:
    repo, marker = await _plant(tmp_path, vector)
    (repo / "a.md").write_text("b\n")
    operations = [
        ("status", "--porcelain"),
        ("add", "-A"),
        ("diff", "--cached"),
        ("commit", "-q", "-m", "two"),
        ("log", "-p"),
        ("show", "HEAD"),
        ("checkout", "-q", "HEAD~1", "--", "a.md"),
        ("merge", "-q", "HEAD"),
        ("clone", "-q", "--shared", str(repo), str(tmp_path / "clone")),
    ]
    refusals: list[str] = []
    for args in operations:
        try:
            await run_git(repo, *args, check=False)
        except MemoryRepoError as exc:
            refusals.append(str(exc))
    refused = len(refusals)
    assert all("could run a program" in why for why in refusals)
    assert not marker.exists(), f"{vector}: a program from the repository's configuration ran"
    if vector not in {"fsmonitor", "hooks path", "ssh command"}:  # overridden on every call instead
        assert refused == len(operations), "git ran in a repository whose configuration names a program"


async def test_the_refusal_names_the_key_and_how_to_go_on(tmp_path: Path) -> None:
    repo, _ = await _plant(tmp_path, "filter clean and smudge")
    with pytest.raises(MemoryRepoError) as info:
        await run_git(repo, "status")
    assert "filter.x.clean" in str(info.value)
    assert "git config --unset" in str(info.value)


async def test_a_hostile_config_file_is_refused_without_hanging(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    await run_git(repo, "init", "-q")
    config = repo / ".git" / "config"
    config.unlink()
    os.mkfifo(config)
    with pytest.raises(MemoryRepoError, match="FIFO"):
        await run_git(repo, "status")


async def test_a_plain_repository_config_is_accepted(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    await run_git(repo, "init", "-q")
    await run_git(repo, "remote", "add", "origin", str(tmp_path / "elsewhere"))
    with (repo / ".git" / "config").open("a") as f:
        f.write('[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n# a comment\n; another\n')
    assert (await run_git(repo, "status", "--porcelain")).returncode == 0


async def test_a_worktree_config_is_checked_like_the_config(tmp_path: Path) -> None:
    repo, marker = await _plant(tmp_path, "fsmonitor")
    (repo / ".git" / "config").write_text(
        "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n"
    )
    script = tmp_path / "evil.sh"
    (repo / ".git" / "config.worktree").write_text(f'[filter "x"]\n\tclean = {script}\n')
    (repo / ".git" / "info" / "attributes").write_text("* filter=x\n")
    (repo / "a.md").write_text("c\n")
    with pytest.raises(MemoryRepoError, match=r"filter\.x\.clean"):
        await run_git(repo, "add", "-A")
    assert not marker.exists()
