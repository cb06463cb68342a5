"""Process facts: one liveness check for the daemon's instance, `memd status` and phase 2's leases."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from pipeline.proc import hostname, pid_alive


def test_this_process_is_alive_and_a_reaped_one_is_not() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)


@pytest.mark.parametrize("pid", [0, -1])
def test_no_real_process_has_a_pid_below_one(pid: int) -> None:
    assert not pid_alive(pid)


def test_a_process_we_may_not_signal_counts_as_alive() -> None:
    if os.geteuid() == 0:
        pytest.skip("root may signal every process")
    assert pid_alive(1)


def test_hostname_is_this_hosts() -> None:
    assert hostname() == socket.gethostname()
