"""The last word on stopping: the process ends when it said it would, even if a thread will not.

A step can leave a worker thread stuck in a system call that no cancellation reaches (a read of a
FIFO, a mount that went away). Python waits for such threads at exit (``asyncio.run`` shuts the
default executor down and joins its threads, then the interpreter joins every non-daemon thread),
so the process would outlive its stop by as long as the call blocks: forever.

``HardStop`` is armed by the stop signal itself (in the signal handler, so even a blocked event loop
cannot delay it): when its deadline passes, a daemon thread logs why, flushes the logs and calls
``os._exit``. A stop that finishes in time but had to abandon a step ends with ``exit_now``, the
same way, at once. Either way nothing is left half-written: the abandoned work was handed back (or
will be taken over like a crashed instance's), and git and the state store keep their own atomicity.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import NoReturn

import structlog

from daemon.exits import Exit

log = structlog.get_logger(__name__)


def _flush() -> None:
    for handler in logging.getLogger().handlers:
        try:
            handler.flush()
        except Exception:  # a closed stream: nothing left to flush
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


class HardStop:
    """A deadline for the whole process, armed once a stop is asked for; the earliest deadline wins."""

    def __init__(self, *, exit: Callable[[int], object] = os._exit) -> None:
        self._exit = exit
        self._lock = threading.RLock()  # a second signal may interrupt the first one's handler
        self._deadline: float | None = None
        self._timer: threading.Timer | None = None
        self.what: Callable[[], str | None] = lambda: None
        """What is still running (for the log line when the deadline passes)."""

    @property
    def armed(self) -> bool:
        return self._deadline is not None

    def arm(self, after_s: float) -> None:
        """End the process ``after_s`` from now unless it ends sooner (or an earlier deadline is set)."""
        with self._lock:
            deadline = time.monotonic() + after_s
            if self._deadline is not None and self._deadline <= deadline:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._deadline = deadline
            self._timer = threading.Timer(after_s, self._overran, args=(after_s,))
            self._timer.daemon = True  # never what keeps the process alive
            self._timer.start()

    def disarm(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._deadline = None, None

    def exit_now(self, code: int) -> NoReturn:
        """Flush the logs and end the process without waiting for threads stuck in abandoned work."""
        self.disarm()
        _flush()
        self._exit(code)
        raise SystemExit(code)  # only when ``exit`` was replaced (tests)

    def _overran(self, after_s: float) -> None:
        log.error(
            "shutdown_overran",
            waited_s=round(after_s, 1),
            still_running=self.what(),
            exit_code=int(Exit.FAILED),
        )
        _flush()
        self._exit(Exit.FAILED)
