"""Atomic file writes: a temporary file in the same folder, fsync, rename, fsync of the folder.

A reader sees the old file or the new one, never a half-written one. A symlinked target is written
through (the link's target is replaced), so a dotfile kept in another repository stays linked.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

DEFAULT_MODE = 0o600
"""A new file is the user's alone; an existing file keeps its mode."""


def real_target(path: Path) -> Path:
    """The file a write to ``path`` should replace: the symlink's target when ``path`` is a symlink."""
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` atomically; keep an existing file's permissions. Returns the path written."""
    target = real_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = DEFAULT_MODE
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".memd-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    fsync_dir(target.parent)
    return target


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> Path:
    return atomic_write_bytes(path, encode(text), mode=mode)


def remove_file(path: Path) -> bool:
    """Remove a file (not a folder); True when something was removed."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_text(path: Path) -> str | None:
    """A file's text, every byte kept (invalid UTF-8 survives a round trip); None when absent."""
    try:
        return decode(path.read_bytes())
    except FileNotFoundError:
        return None


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")
