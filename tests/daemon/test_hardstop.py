"""The process deadline armed by a stop signal (``os._exit`` replaced by a recorder)."""

from __future__ import annotations

import threading
import time

import pytest

from daemon.exits import Exit
from daemon.service.hardstop import HardStop


class Exits:
    def __init__(self) -> None:
        self.codes: list[int] = []
        self.called = threading.Event()

    def __call__(self, code: int) -> None:
        self.codes.append(code)
        self.called.set()


def test_an_overrun_stop_ends_the_process_from_a_daemon_thread() -> None:
    exits = Exits()
    stop = HardStop(exit=exits)
    stop.what = lambda: "extract"
    stop.arm(0.05)
    assert stop._timer is not None
    assert stop._timer.daemon  # never what keeps the process alive
    assert exits.called.wait(5)
    assert exits.codes == [Exit.FAILED]


def test_the_earliest_deadline_wins() -> None:
    exits = Exits()
    stop = HardStop(exit=exits)
    stop.arm(3600)
    stop.arm(0.05)  # a second signal: sooner
    assert exits.called.wait(60)  # not after the first deadline's hour
    stop.arm(3600)  # a later deadline never postpones an earlier one
    assert stop.armed


def test_exit_now_ends_at_once_and_disarms_the_timer() -> None:
    exits = Exits()
    stop = HardStop(exit=exits)
    stop.arm(0.2)
    with pytest.raises(SystemExit):
        stop.exit_now(0)
    assert exits.codes == [0]
    time.sleep(0.4)
    assert exits.codes == [0]  # the timer did not fire as well
