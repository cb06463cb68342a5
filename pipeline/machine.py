"""This installation's machine: a random id kept in the state directory (the hostname, which leases
and heartbeats record beside it, is only its label for people).

Several machines may share one PostgreSQL state store (team mode). Whatever is a machine's own
(its transcripts, its extract jobs, its daemon's instance lease and heartbeat) is keyed in the
store by this id, and a lease or a heartbeat is "on this machine" only when it carries it: two
machines may share a hostname (containers, a default image), and a pid says something only on the
machine that wrote it. The id is created once, at the first ask, as ``<state_dir>/machine-id``
(0600 in a 0700 folder); it stays the same across restarts, upgrades and a changed hostname.
Standard library only: `memd status` and `memd scan`'s quick check read it too.

A copied state directory carries its machine id along (a cloned VM, a restored backup, a copied
home), so the id alone cannot tell two installations apart. ``host_id`` is what the copy does not
share: a digest of the operating system's own id of the host (``/etc/machine-id``, which systemd
makes per installation and a prepared VM template empties; else D-Bus's copy; else the hostname),
the state directory's real path and its inode. It stays the same across restarts, reboots, a
changed hostname or network, and differs for a copy on another host (its OS id) or in another folder
of this one (path, inode). ``pipeline.store.machines`` keeps it beside the id, and gives an
installation found on a second host with the same id a machine key of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_NAME = "machine-id"
UNNAMED = "unnamed"
"""The machine of a store opened without one (tests, tools), and of `memd status` and `memd scan`'s
quick check before memd ever ran here: memd's commands always name theirs."""
ID_BYTES = 16
_HEX = frozenset("0123456789abcdef")


HOST_ID_LENGTH = 16
_OS_IDS = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


def _os_id() -> str:
    import stat

    for path in _OS_IDS:
        try:  # a regular file only (never a FIFO to block on), and never more than a line of it
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            text = (
                os.read(fd, 128).decode("ascii", "replace").strip()
                if stat.S_ISREG(os.fstat(fd).st_mode)
                else ""
            )
        except OSError:
            text = ""
        finally:
            os.close(fd)
        if text:
            return text
    return f"hostname:{os.uname().nodename}"


def host_id(state_dir: Path, *, create: bool = True) -> str | None:
    """This host's identity beside the machine id (see the module docstring): hex, stable. Without
    ``create`` (the read-only fast paths) None when the state directory does not exist yet."""
    import hashlib

    folder = Path(state_dir)
    if create:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    real = os.path.realpath(folder)
    try:
        inode = os.stat(real).st_ino
    except FileNotFoundError:
        if create:
            raise
        return None
    digest = hashlib.sha256(f"memd-host-v1\0{_os_id()}\0{real}\0{inode}".encode())
    return digest.hexdigest()[:HOST_ID_LENGTH]


def machine_path(state_dir: Path) -> Path:
    return Path(state_dir) / FILE_NAME


def read_id(state_dir: Path) -> str | None:
    """The id recorded in ``state_dir``, or None when there is none (nothing is created)."""
    try:
        text = machine_path(state_dir).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 2 * ID_BYTES and set(text) <= _HEX else None


def known_id(state_dir: Path) -> str:
    """The id recorded in ``state_dir``, else ``UNNAMED`` (for the read-only fast paths)."""
    return read_id(state_dir) or UNNAMED


def machine_id(state_dir: Path) -> str:
    """This installation's id, created at the first ask (exclusively: two processes starting at once
    agree on one id)."""
    found = read_id(state_dir)
    if found is not None:
        return found
    import secrets  # only when making one: the fast paths only read it

    path = machine_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    new = secrets.token_hex(ID_BYTES)
    tmp = path.with_name(f".{FILE_NAME}.{new}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, f"{new}\n".encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails when another process made the file first: its id wins
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    found = read_id(state_dir)
    if found is None:
        raise OSError(f"{path} is not a memd machine id: remove it and memd makes a new one")
    return found
