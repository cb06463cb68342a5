"""A `memd` subprocess with its own fake NOTIFY_SOCKET, for the lifecycle tests (not a test module)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
READY_TIMEOUT_S = 60
EXIT_TIMEOUT_S = 60


class Memd:
    """One `memd` process with its own notify socket; stderr goes to a file (never a full pipe)."""

    def __init__(
        self, tmp_path: Path, name: str, env: dict[str, str], *args: str, module: str = "daemon"
    ) -> None:
        self.socket_path = tmp_path / f"{name}.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.socket_path))
        self.sock.settimeout(READY_TIMEOUT_S)
        self.stderr_path = tmp_path / f"{name}.stderr"
        self.messages: list[str] = []
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                env={**env, "NOTIFY_SOCKET": str(self.socket_path)},
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )

    def wait_for(self, prefix: str) -> str:
        """The next notification starting with ``prefix`` (bounded by the socket's timeout)."""
        while True:
            try:
                message = self.sock.recv(4096).decode()
            except TimeoutError:
                pytest.fail(f"no {prefix} within {READY_TIMEOUT_S}s; stderr:\n{self.stderr()[-3000:]}")
            self.messages.append(message)
            if message.startswith(prefix) or f"\n{prefix}" in message:
                return message

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self) -> int:
        return self.proc.wait(timeout=EXIT_TIMEOUT_S)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=EXIT_TIMEOUT_S)
        self.sock.close()
