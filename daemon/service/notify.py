"""systemd's notification protocol (sd_notify) without a dependency; silent outside systemd.

The socket and watchdog settings come from the environment systemd gives the service
(``NOTIFY_SOCKET``, ``WATCHDOG_USEC``, ``WATCHDOG_PID``); the composition root passes that mapping
in, so this module reads no environment itself and a test can point it at its own socket. Sending
never raises and never blocks: the socket is non-blocking, so a service manager that stopped reading
(its queue full) costs a dropped message, logged (a warning for the first of a run of drops), and
never the daemon's loop or its heartbeat.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

import structlog

log = structlog.get_logger(__name__)


class Notifier:
    """Sends ``READY=1``, ``STATUS=...``, ``WATCHDOG=1`` and ``STOPPING=1`` to systemd, when there is one."""

    def __init__(self, address: str | None, *, watchdog_usec: int | None = None) -> None:
        self._address = _socket_address(address)
        self._dropping = False
        self.watchdog_interval_s: float | None = watchdog_usec / 2e6 if watchdog_usec else None
        """How often to send ``WATCHDOG=1``: half the watchdog interval, or None without a watchdog."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, pid: int | None = None) -> Notifier:
        """The notifier systemd asked for through ``env`` (a disabled one outside systemd)."""
        pid = os.getpid() if pid is None else pid
        watchdog_usec: int | None = None
        raw_usec = env.get("WATCHDOG_USEC", "")
        watchdog_pid = env.get("WATCHDOG_PID", "")
        if raw_usec.isdigit() and int(raw_usec) > 0 and (not watchdog_pid or watchdog_pid == str(pid)):
            watchdog_usec = int(raw_usec)
        return cls(env.get("NOTIFY_SOCKET"), watchdog_usec=watchdog_usec)

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def notify(self, *lines: str) -> bool:
        """Send one datagram of ``KEY=value`` lines; True when it was sent."""
        if self._address is None:
            return False
        payload = "\n".join(line.replace("\n", " ") for line in lines).encode("utf-8", "replace")
        try:
            with socket.socket(
                socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
            ) as sock:
                sock.connect(self._address)
                sock.send(payload)
        except BlockingIOError:
            if not self._dropping:
                log.warning("sd_notify_dropped", reason="the service manager's socket is full")
            else:
                log.debug("sd_notify_dropped", reason="the service manager's socket is full")
            self._dropping = True
            return False
        except OSError as exc:
            log.debug("sd_notify_failed", error=str(exc))
            return False
        self._dropping = False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1", f"STATUS={status}")


def _socket_address(value: str | None) -> str | None:
    """A path socket as is; an abstract one (``@name``) with its leading NUL; anything else disabled."""
    if not value:
        return None
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None
