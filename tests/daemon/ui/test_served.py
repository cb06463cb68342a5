"""Who serves the page: the daemon with ``[ui] enabled`` (and `memd ui` then points at it), or
`memd ui` alone; a taken port is said plainly, and a daemon without the page loads no web stack."""

from __future__ import annotations

import http.cookiejar
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from tests.daemon.cli.test_inbox import ENV
from tests.daemon.memd_process import Memd
from tests.daemon.ui.support import Prepared

WEB_STACK = ("starlette", "uvicorn", "jinja2", "markdown_it", "daemon.ui.app")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def memd_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_"))}
    return {**env, "HOME": str(tmp_path / "home"), **ENV, **extra}


def healthz(port: int) -> dict[str, str] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            found: dict[str, str] = json.loads(response.read())
            return found
    except OSError:
        return None


def test_the_daemon_serves_the_page_and_memd_ui_points_at_it(tmp_path: Path, prepared_here: Prepared) -> None:
    port = free_port()
    env = memd_env(tmp_path, MEMD_UI__ENABLED="true", MEMD_UI__PORT=str(port))
    daemon = Memd(tmp_path, "daemon", env, "--config", str(prepared_here.config), "run")
    try:
        daemon.wait_for("READY=1")
        deadline = time.monotonic() + 30
        while healthz(port) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert healthz(port) is not None, daemon.stderr()[-3000:]
        told = subprocess.run(
            [sys.executable, "-m", "daemon", "--config", str(prepared_here.config), "ui"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert told.returncode == 0, told.stderr
        assert (
            f"another process serves this installation's page: open http://127.0.0.1:{port}/?token="
            in told.stdout
        )
        address = told.stdout.split("open ", 1)[1].strip()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with browser.open(address, timeout=10) as response:
            html = response.read().decode()
        assert 'id="daemon-state">running<' in html  # the daemon's own page sees it running
        with browser.open(f"http://127.0.0.1:{port}/inbox", timeout=10) as response:
            assert prepared_here.accept_run in response.read().decode()
        daemon.signal(signal.SIGTERM)
        assert daemon.wait() == 0
        assert healthz(port) is None  # the page stopped with the daemon
    finally:
        daemon.close()


def test_a_taken_port_leaves_the_daemon_running_without_the_page(
    tmp_path: Path, prepared_here: Prepared
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = memd_env(tmp_path, MEMD_UI__ENABLED="true", MEMD_UI__PORT=str(port))
        daemon = Memd(tmp_path, "daemon", env, "--config", str(prepared_here.config), "run")
        try:
            daemon.wait_for("READY=1")
            deadline = time.monotonic() + 30
            while "ui_unavailable" not in daemon.stderr() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert "ui_unavailable" in daemon.stderr()
            assert "Address already in use" in daemon.stderr()
            assert daemon.proc.poll() is None
            daemon.signal(signal.SIGTERM)
            assert daemon.wait() == 0
        finally:
            daemon.close()


def test_memd_ui_says_when_its_port_is_taken(fresh: Prepared) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["--config", str(fresh.config), "ui", "--port", str(port)], env=ENV)
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "--port" in result.output


def test_a_daemon_loads_the_web_stack_only_when_the_page_is_enabled(tmp_path: Path) -> None:
    probe = textwrap.dedent(
        """
        import asyncio, sys
        from daemon.app import build
        from daemon.config import load_settings
        from daemon.service.once import run_once

        daemon = build(load_settings(None).settings, watch=False)
        asyncio.run(run_once(daemon, install_signals=False))
        print(sorted(m for m in sys.argv[1:] if m in sys.modules))
        """
    )
    env = memd_env(tmp_path, MEMD_SOURCES__CLAUDE_CODE__ROOT=str(tmp_path / "claude"))
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-c", probe, *WEB_STACK], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
