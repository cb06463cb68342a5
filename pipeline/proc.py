"""Facts about processes on this host, standard library only (``memd status`` uses them).

The daemon's instance check, ``memd status`` and phase 2's scope leases all ask ``pid_alive``, and
only of a process of this machine (``pipeline.machine``): a lease or a heartbeat that names another
machine sharing the store is judged by its expiry or its heartbeat, never by a pid, which means
nothing here (even under the same hostname).
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (one we may not signal counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def hostname() -> str:
    import socket  # with selectors: not for `memd status`, which only asks ``pid_alive``

    return socket.gethostname()
