"""What talking to a remote may do on this machine: no program of the remote runs (a path remote is
data), and every git call against a remote ends within its timeout with its whole process group.
Real git, real path remotes, real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.sync import incoming
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sync.support import (
    bare_remote,
    close,
    git,
    machine,
    pair,
    refused_because,
    signing_as,
    synced_once,
    writer_repo,
)

pytestmark = [pytest.mark.timeout(120)]

HOOKS = (
    "pre-receive",
    "update",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "proc-receive",
    "pre-auto-gc",
    "post-checkout",
)


def _marker_script(path: Path, marker: Path, name: str) -> Path:
    path.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
    path.chmod(0o755)
    return path


def _armed_remote(tmp_path: Path, marker: Path) -> Path:
    """A bare remote whose every hook, in its own hooks folder and in one its config names, and whose
    config's program-running keys memd overrides, write to ``marker`` when they run."""
    served = bare_remote(tmp_path)
    other_hooks = tmp_path / "other-hooks"
    other_hooks.mkdir()
    for hook in HOOKS:
        _marker_script(served / "hooks" / hook, marker, hook)
        _marker_script(other_hooks / hook, marker, f"hooksPath {hook}")
    fsmonitor = _marker_script(tmp_path / "fsmonitor", marker, "fsmonitor")
    with (served / "config").open("a") as f:
        f.write(f"[core]\n\thooksPath = {other_hooks}\n\tfsmonitor = {fsmonitor}\n\tpager = {fsmonitor}\n")
    return served


def _url(served: Path, form: str) -> str:
    return f"file://{served}" if form == "file" else str(served)


@pytest.mark.parametrize("form", ["path", "file"])
async def test_a_path_remote_runs_none_of_its_hooks_at_fetch_and_push(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock, form: str
) -> None:
    marker = tmp_path / "ran"
    served = _armed_remote(tmp_path, marker)
    a = await machine("a", tmp_path, fake_api, _url(served, form), clock)
    b = await machine("b", tmp_path, fake_api, _url(served, form), clock)
    try:
        first = await a.sync()  # a push to an empty remote
        await pair(a, b)  # a fetch and a push from a
        second = await b.sync()  # a fetch
        memory = b.settings.paths.memory_dir
        (memory / "README.md").write_text("b's README\n")
        git(memory, *signing_as(b.signing_key), "commit", "-qam", "b")
        third = await b.sync()  # a fetch and a push
        fourth = await a.sync()  # a fetch and a fast-forward
    finally:
        await close(a, b)
    assert not marker.exists(), marker.read_text()
    for report in (first, second, third, fourth):
        assert report.outcome == SyncOutcome.SYNCED, report.reason
    assert first.pushed is not None
    assert third.pushed is not None
    assert fourth.landed is not None


@pytest.mark.parametrize(
    "config",
    [
        "[core]\n\talternateRefsCommand = {script}\n",
        '[filter "x"]\n\tclean = {script}\n\tsmudge = {script}\n',
        "[include]\n\tpath = {script}\n",
        "[receive]\n\tdenyCurrentBranch = updateInstead\n",
    ],
)
async def test_a_path_remote_whose_config_could_run_a_program_is_refused_and_left_alone(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock, config: str
) -> None:
    marker = tmp_path / "ran"
    served = bare_remote(tmp_path)
    script = _marker_script(tmp_path / "script", marker, "config")
    # alternates make git ask core.alternateRefsCommand for the refs of the other repository
    elsewhere = tmp_path / "elsewhere.git"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "--bare")
    (served / "objects" / "info" / "alternates").write_text(f"{elsewhere / 'objects'}\n")
    with (served / "config").open("a") as f:
        f.write(config.format(script=script))
    _, report = await synced_once(tmp_path, fake_api, str(served), clock)
    assert not marker.exists()
    reason = refused_because(report, SyncOutcome.STOPPED)
    assert "could run a program" in reason
    assert str(served) in reason
    assert not list((served / "refs" / "heads").iterdir())  # nothing was pushed
    assert not (served / "packed-refs").exists()


def _has_object(repo: Path, sha: str) -> bool:
    done = subprocess.run(
        ["git", "cat-file", "-e", sha], cwd=repo, capture_output=True, env={"PATH": os.environ["PATH"]}
    )
    return done.returncode == 0


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (killed, waiting for its parent to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def test_a_silent_ssh_remote_ends_failed_at_the_timeout_with_ssh_and_its_children_killed(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ssh that connects and never answers; it leaves a child holding git's pipes, as ssh's own
    # helpers (a ProxyCommand, a control master) would
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    pids = tmp_path / "pids"
    args = tmp_path / "args"
    (fake_bin / "ssh").write_text(
        f'#!/bin/sh\necho "$@" > {args}\nsleep 300 &\necho $! >> {pids}\necho $$ >> {pids}\nwait\n'
    )
    (fake_bin / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    _, report = await synced_once(
        tmp_path, fake_api, "ssh://memd@127.0.0.1:2222/memory.git", clock, timeout_s=1
    )
    assert "timed out" in refused_because(report, SyncOutcome.FAILED)
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2
    assert not [pid for pid in started if _alive(pid)]
    said = args.read_text()  # ssh is told to give up on a dead connection and never to prompt
    for option in ("BatchMode=yes", "ConnectTimeout=", "ServerAliveInterval=", "ServerAliveCountMax="):
        assert option in said


@contextmanager
def _silent_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


def _processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmdline and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def test_a_silent_https_remote_ends_failed_at_the_timeout_with_its_https_helper_killed(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    with _silent_server() as port:
        url = f"https://127.0.0.1:{port}/memory.git"
        _, report = await synced_once(tmp_path, fake_api, url, clock, timeout_s=1)
        assert "timed out" in refused_because(report, SyncOutcome.FAILED)
        assert _processes_naming(f"127.0.0.1:{port}") == []


async def test_a_history_bomb_is_refused_by_size_before_it_is_read_and_leaves_nothing_here(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    # 64 MiB of zeros (a few hundred KiB on the wire) in an intermediate commit, gone again at the
    # tip: the tip looks sound, the history is not
    served = bare_remote(tmp_path)
    writer = writer_repo(tmp_path)
    (writer / "README.md").write_text("# memory\n")
    git(writer, "add", "README.md")
    git(writer, "commit", "-qm", "one")
    bomb = writer / "global" / "raw_memories.md"
    bomb.parent.mkdir()
    with bomb.open("wb") as f:
        f.truncate(64 * 1024 * 1024)
    git(writer, "add", "-A")
    git(writer, "commit", "-qm", "bomb")
    bomb_sha = git(writer, "rev-parse", "HEAD:global/raw_memories.md").strip()
    git(writer, "rm", "-q", "-r", "global")
    git(writer, "commit", "-qm", "gone again")
    git(writer, "push", "-q", str(served), "main")
    a, report = await synced_once(tmp_path, fake_api, str(served), clock)
    reason = refused_because(report, SyncOutcome.STOPPED)
    assert f"global/raw_memories.md (blob {bomb_sha[:12]}) is {64 * 1024 * 1024} bytes" in reason
    memory = a.settings.paths.memory_dir
    assert not _has_object(memory, bomb_sha)
    assert git(memory, "rev-parse", "-q", "--verify", "refs/memd/remote/main", check=False) == ""
    packed = sum(p.stat().st_size for p in (memory / ".git" / "objects").rglob("*") if p.is_file())
    assert packed < 1024 * 1024  # nothing of the bomb's pack stayed
    scratch = a.settings.paths.state_dir / "sync-scratch"
    assert not scratch.exists() or not list(scratch.iterdir())  # the quarantine is gone
    assert git(served, "rev-parse", "refs/heads/main").strip() == git(writer, "rev-parse", "HEAD").strip()


async def test_a_remote_sending_more_objects_than_one_sync_takes_is_refused_before_they_are_listed(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(incoming, "MAX_INCOMING_OBJECTS", 5)
    served = bare_remote(tmp_path)
    writer = writer_repo(tmp_path)
    for n in range(4):
        (writer / "README.md").write_text(f"# memory {n}\n")
        git(writer, "commit", "-qm", f"c{n}", "--allow-empty")
        git(writer, "add", "README.md")
        git(writer, "commit", "-qm", f"readme {n}")
    git(writer, "push", "-q", str(served), "main")
    a, report = await synced_once(tmp_path, fake_api, str(served), clock)
    reason = refused_because(report, SyncOutcome.STOPPED)
    assert "the remote sent" in reason
    assert "over the cap of 5 in one sync" in reason
    head = git(writer, "rev-parse", "HEAD").strip()
    assert not _has_object(a.settings.paths.memory_dir, head)
