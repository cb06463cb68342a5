"""Why a session file cannot be read, in words a user can act on."""

from __future__ import annotations

import errno
from pathlib import Path

from pipeline.errors import TranscriptUnreadable
from pipeline.safefile import UnsafeFile


def describe_os_error(path: Path, exc: OSError) -> TranscriptUnreadable:
    """A human-readable reason for a file that cannot be opened or read."""
    if isinstance(exc, UnsafeFile):  # a FIFO, a device, a directory: what was opened, not a transcript
        return TranscriptUnreadable(exc.reason.removeprefix("is "))
    if exc.errno == errno.ELOOP:
        return TranscriptUnreadable("a symlink loop (the path points back to itself)")
    if isinstance(exc, FileNotFoundError):
        if path.is_symlink():
            return TranscriptUnreadable("a dangling symlink (its target does not exist)")
        return TranscriptUnreadable("the file disappeared (renamed or deleted)", retryable=True)
    if isinstance(exc, PermissionError):
        return TranscriptUnreadable("permission denied")
    if isinstance(exc, IsADirectoryError):
        return TranscriptUnreadable("a directory, not a file")
    return TranscriptUnreadable(f"cannot read the file: {exc.strerror or exc}")
