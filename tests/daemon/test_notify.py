from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from daemon.service.notify import Notifier


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    yield str(path), sock
    sock.close()


def test_sends_ready_status_watchdog_and_stopping(notify_socket: tuple[str, socket.socket]) -> None:
    address, sock = notify_socket
    n = Notifier.from_env({"NOTIFY_SOCKET": address})
    assert n.enabled
    assert n.ready("started")
    assert sock.recv(4096) == b"READY=1\nSTATUS=started"
    assert n.status("idle\nsecond line")
    assert sock.recv(4096) == b"STATUS=idle second line"
    assert n.watchdog()
    assert sock.recv(4096) == b"WATCHDOG=1"
    assert n.stopping()
    assert sock.recv(4096) == b"STOPPING=1\nSTATUS=stopping"


def test_abstract_socket() -> None:
    name = f"memd-test-{id(object())}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(5)
    try:
        assert Notifier.from_env({"NOTIFY_SOCKET": "@" + name}).ready("ok")
        assert sock.recv(4096).startswith(b"READY=1")
    finally:
        sock.close()


def test_silent_outside_systemd_and_never_raises(tmp_path: Path) -> None:
    assert not Notifier.from_env({}).enabled
    assert not Notifier.from_env({}).ready("x")
    assert not Notifier.from_env({"NOTIFY_SOCKET": "relative/path"}).enabled
    gone = Notifier.from_env({"NOTIFY_SOCKET": str(tmp_path / "nobody-listens.sock")})
    assert gone.enabled
    assert not gone.ready("x")  # connect fails: logged at debug, not raised


@pytest.mark.parametrize(
    ("env", "interval"),
    [
        ({"WATCHDOG_USEC": "120000000"}, 60.0),
        ({"WATCHDOG_USEC": "120000000", "WATCHDOG_PID": "4242"}, 60.0),
        ({"WATCHDOG_USEC": "120000000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval_is_half_the_timeout(env: dict[str, str], interval: float | None) -> None:
    assert Notifier.from_env(env, pid=4242).watchdog_interval_s == interval


def test_a_manager_that_stops_reading_never_blocks_a_send(tmp_path: Path) -> None:
    """A datagram socket whose reader stopped fills up; the next send would block forever. Each
    send must return at once instead: the message is dropped, said in the log, and the daemon goes on."""
    import threading

    path = tmp_path / "stuck.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))  # bound, never read
    n = Notifier.from_env({"NOTIFY_SOCKET": str(path)})
    results: list[bool] = []

    def flood() -> None:
        for _ in range(5000):  # far beyond the kernel's queue (net.unix.max_dgram_qlen, 512 by default)
            results.append(n.watchdog())

    worker = threading.Thread(target=flood, daemon=True)
    with capture_logs() as logs:
        worker.start()
        worker.join(timeout=10)
    try:
        assert not worker.is_alive(), "a notification blocked on a full socket"
        assert results[0] is True
        assert results[-1] is False  # dropped, not waited for
        drops = [e for e in logs if e["event"] == "sd_notify_dropped"]
        assert drops
        assert drops[0]["log_level"] == "warning"
        assert [e["log_level"] for e in drops[1:]] == ["debug"] * (len(drops) - 1)
    finally:
        sock.close()
