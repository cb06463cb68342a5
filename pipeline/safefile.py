"""Reading a file memd did not write, as if it were hostile: it may be a symlink, a FIFO, a device
such as ``/dev/zero``, or huge.

``read_capped`` opens without blocking (``O_NONBLOCK``, so a FIFO with no writer cannot hang the
open), optionally without following a final symlink (``O_NOFOLLOW``), checks on the open descriptor
that it is a regular file (so a swap between a ``stat`` and the ``open`` changes nothing), and reads
at most ``max_bytes``: more is an error, never a partial answer taken for the whole. Standard
library only; every failure is one ``UnsafeFile`` with a reason a user can act on.
"""

from __future__ import annotations

import errno
import os
import stat


class UnsafeFile(OSError):
    """A file that is not a regular file, is too big, or cannot be opened safely."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its ``fstat``, for a reader that
    reads in pieces (the caller closes it, and reads no further than the size it means to).

    Opened without blocking (a FIFO with no writer cannot hang the open) and checked on the
    descriptor (a swap between a ``stat`` and the ``open`` changes nothing): anything but a regular
    file is ``UnsafeFile``. A failing ``open`` raises its own ``OSError`` (``FileNotFoundError``,
    ``PermissionError``, ``ELOOP``...), so a caller can word each one."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(path, f"is not a regular file ({_kind(info.st_mode)})")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_capped(path: str | os.PathLike[str], max_bytes: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` of them; ``UnsafeFile`` when
    it is anything else, larger, or cannot be read (a missing file raises ``FileNotFoundError``)."""
    try:
        fd, info = open_regular(path, follow_symlinks=follow_symlinks)
    except (FileNotFoundError, UnsafeFile):
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise UnsafeFile(path, "is a symbolic link, which memd does not follow here") from None
        raise UnsafeFile(path, f"cannot be opened: {exc.strerror or exc}") from None
    try:
        if info.st_size > max_bytes:
            raise UnsafeFile(path, f"is larger than memd reads here ({info.st_size} > {max_bytes} bytes)")
        data = read_at_most(fd, max_bytes + 1)  # one byte more tells a file that grew past the cap
        if len(data) > max_bytes:
            raise UnsafeFile(path, f"grew larger than memd reads here (> {max_bytes} bytes)")
        return data
    finally:
        os.close(fd)


def read_at_most(fd: int, max_bytes: int) -> bytes:
    """Up to ``max_bytes`` from ``fd``'s current position (fewer at the end of the file)."""
    chunks: list[bytes] = []
    left = max_bytes
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_text_capped(path: str | os.PathLike[str], max_bytes: int, *, follow_symlinks: bool = True) -> str:
    """``read_capped`` decoded as UTF-8 (undecodable bytes replaced)."""
    return read_capped(path, max_bytes, follow_symlinks=follow_symlinks).decode("utf-8", "replace")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
