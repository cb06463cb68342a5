"""The daemon syncs: `memd run --once` (in process) extracts, consolidates and pushes to the remote (served by
`git daemon` on 127.0.0.1); a running `memd run` fetches and merges what another machine pushed, on
``[sync] interval_minutes``, with no consolidation of its own to trigger it."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pipeline.defaults import state_dir
from tests.daemon.memd_inprocess import memd
from tests.daemon.memd_process import Memd
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, json_message
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.extract.support import extract_output
from tests.pipeline.sync.support import agent, bare_remote, git, git_daemon, signing_as

pytestmark = [pytest.mark.timeout(300)]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts" / "claude_code" / "projects"


def responder(body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
    if body.get("tools"):
        return agent(body, headers)
    return json_message(extract_output())


def _env(home: Path, api: FakeAnthropicAPI, remote: str, **extra: str) -> dict[str, str]:
    root = home / ".claude" / "projects"
    for src in FIXTURES.rglob("*"):
        if src.is_file():
            dest = root / src.relative_to(FIXTURES)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "MEMD_LLM__BASE_URL": api.base_url,
            "MEMD_LLM__BATCH": "off",
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
            "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(root),
            "MEMD_SOURCES__CODEX__ROOT": str(home / "none"),
            "MEMD_SOURCES__GEMINI_CLI__ROOT": str(home / "none"),
            "MEMD_SOURCES__PI__ROOT": str(home / "none"),
            "MEMD_SYNC__REMOTE": remote,
            **extra,
        }
    )
    return env


def test_run_once_pushes_and_a_running_daemon_merges_what_another_machine_pushed(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    fake_api.responder = responder
    served = bare_remote(tmp_path)
    with git_daemon(served.parent) as url:
        env = _env(tmp_path / "laptop", fake_api, url, MEMD_SYNC__INTERVAL_MINUTES="0.02")
        once = memd(env, "run", "--once")
        assert once.returncode == 0, once.stdout + once.stderr[-3000:]
        assert "sync" in once.stdout
        pushed = git(served, "rev-parse", "main").strip()
        assert any(
            p.endswith("/MEMORY.md") for p in git(served, "ls-tree", "-r", "--name-only", "main").split()
        )

        # Another machine, paired with the first (`memd sync key` there, `memd sync trust` here), adds
        # a commit to the remote, signed with its key.
        devbox = _env(tmp_path / "devbox", fake_api, url)
        key = memd(devbox, "sync", "key")
        assert key.returncode == 0, key.stderr
        trusted = memd(env, "sync", "trust", key.stdout.strip())
        assert trusted.returncode == 0, trusted.stdout + trusted.stderr[-3000:]
        pushed = git(served, "rev-parse", "main").strip()
        other = tmp_path / "devbox-memory"
        git(tmp_path, "clone", "-q", str(served), str(other))
        (other / "tombstones").mkdir()
        (other / "tombstones" / ("0" * 32)).write_text(
            "forgotten by memd: this session's memory must not come back\n"
        )
        git(other, "add", "tombstones")
        git(
            other,
            *signing_as(state_dir(devbox) / "signing-key"),
            "commit",
            "-qm",
            "memd: a forget on the devbox",
        )
        git(other, "push", "-q", "origin", "HEAD:main")
        theirs = git(other, "rev-parse", "HEAD").strip()
        assert theirs != pushed

        memory = tmp_path / "laptop" / ".local" / "share" / "memd" / "memory"
        daemon = Memd(tmp_path, "daemon", env, "run")
        try:
            daemon.wait_for("READY=1")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                merged = subprocess.run(
                    ["git", "-C", str(memory), "merge-base", "--is-ancestor", theirs, "HEAD"],
                    capture_output=True,
                )
                if merged.returncode == 0:
                    break
                time.sleep(0.2)
            else:
                pytest.fail("the daemon did not merge the remote's commit: " + daemon.stderr()[-3000:])
        finally:
            daemon.signal(15)
            daemon.wait()
            daemon.close()
        assert (memory / "tombstones" / ("0" * 32)).is_file()
        assert git(memory, "status", "--porcelain") == ""


@contextmanager
def silent_remote() -> Iterator[str]:
    """A git:// URL whose server accepts the connection and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield f"git://127.0.0.1:{listener.getsockname()[1]}/memory.git"
    finally:
        listener.close()


def test_a_silent_remote_holds_up_neither_consolidation_nor_publishing(
    tmp_path: Path, fake_api: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The remote accepts the connection and never answers, and [sync] timeout_s is long: the fetch
    # before the consolidation gives up at DAEMON_GIT_TIMEOUT_S, the consolidation and the publishing
    # go on, and the cycle's sync reports that failure instead of waiting for the remote again.
    import daemon.app

    monkeypatch.setattr(daemon.app, "DAEMON_GIT_TIMEOUT_S", 1.0)
    fake_api.responder = responder
    home = tmp_path / "laptop"
    with silent_remote() as url:
        once = memd(_env(home, fake_api, url, MEMD_SYNC__TIMEOUT_S="3600"), "run", "--once")
    out = once.stdout + once.stderr[-3000:]
    assert "consolidate ok" in out
    assert "publish ok" in out
    assert "sync failed" in out
    assert "timed out after 1 s" in out
    memory = home / ".local" / "share" / "memd" / "memory"
    assert any(p.endswith("/MEMORY.md") for p in git(memory, "ls-files").split())


def test_a_silent_remote_holds_up_no_publishing_when_nothing_is_consolidated(
    tmp_path: Path, fake_api: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing to consolidate, so no fetch before it: the cycle's own sync step meets the silent
    # remote, gives up at DAEMON_GIT_TIMEOUT_S whatever [sync] timeout_s says, and publishing goes on.
    import daemon.app

    monkeypatch.setattr(daemon.app, "DAEMON_GIT_TIMEOUT_S", 1.0)
    home = tmp_path / "laptop"
    nothing = {"MEMD_SYNC__TIMEOUT_S": "3600", "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(home / "none")}
    with silent_remote() as url:
        once = memd(_env(home, fake_api, url, **nothing), "run", "--once")
    out = once.stdout + once.stderr[-3000:]
    assert "consolidate skipped" in out
    assert "sync failed" in out
    assert "timed out after 1 s" in out
    assert "publish ok" in out
    assert fake_api.message_requests() == []
