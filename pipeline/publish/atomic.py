"""Atomic file writes that stay where memd means them to: a temporary file in the same folder,
fsync, rename, fsync of the folder.

A reader sees the old file or the new one, never a half-written one. Every write and removal
names the folder it must stay in (``within``: the project for its ``AGENTS.md``, the agent's home
for its memory folder): each folder below it is opened without following a symlink (missing ones
are created as real folders), so a path whose real path leaves it is refused, not written. The
final name is never written through either, except for a user-level file (``follow_link``: the
global ``CLAUDE.md`` and the like, kept in a dotfiles repository) whose link leads to a regular file
the same user owns. The temporary file is created exclusively, never through a link, and the final
name is checked again right before the rename. Every refusal is one ``UnsafeTarget`` with its reason.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

DEFAULT_MODE = 0o600
"""A new file is the user's alone; an existing file keeps its mode."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class UnsafeTarget(OSError):
    """A path memd will not write or remove: it leads through a symlink, or out of where it belongs."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason


def check_target(path: Path, within: Path | None = None, *, follow_link: bool = False) -> Path:
    """The file a write to ``path`` would replace (see the module's docstring); ``UnsafeTarget``
    when memd must not write there. Creates nothing."""
    folder = _open_folder(path, within, create=False)
    if folder is None:
        return path  # a folder on the way is missing: it will be created as a real one
    fd, name, where = folder
    try:
        fd, name, where, _ = _final(fd, name, where, path, follow_link)
        return where / name
    finally:
        os.close(fd)


def atomic_write_bytes(
    path: Path, data: bytes, *, mode: int | None = None, within: Path | None = None, follow_link: bool = False
) -> Path:
    """Write ``data`` to ``path`` atomically, staying inside ``within`` (default: ``path``'s own
    folder, created if need be); keep an existing file's permissions. Returns the path written."""
    folder = _open_folder(path, within, create=True)
    assert folder is not None
    fd, name, where = folder
    try:
        fd, name, where, current = _final(fd, name, where, path, follow_link)
        if mode is None:
            mode = stat.S_IMODE(current.st_mode) if current is not None else DEFAULT_MODE
        tmp = f".{name}.{secrets.token_hex(4)}.memd-tmp"
        tfd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd
        )
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(tfd, view) :]
                os.fsync(tfd)
                os.fchmod(tfd, mode)
            finally:
                os.close(tfd)
            # Checked again right before the rename: a symlink swapped in meanwhile is not replaced.
            _final(fd, name, where, path, follow_link=False, reopen=False)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(fd)
        return where / name
    finally:
        os.close(fd)


def atomic_write_text(
    path: Path, text: str, *, mode: int | None = None, within: Path | None = None, follow_link: bool = False
) -> Path:
    return atomic_write_bytes(path, encode(text), mode=mode, within=within, follow_link=follow_link)


def remove_file(path: Path, *, within: Path | None = None) -> bool:
    """Remove a file (not a folder, not through a symlinked folder); True when something was removed."""
    folder = _open_folder(path, within, create=False)
    if folder is None:
        return False
    fd, name, _ = folder
    try:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(info.st_mode):
            raise UnsafeTarget(path, "is a folder, not a file memd wrote")
        os.unlink(name, dir_fd=fd)
        with contextlib.suppress(OSError):
            os.fsync(fd)
        return True
    finally:
        os.close(fd)


def _open_folder(path: Path, within: Path | None, *, create: bool) -> tuple[int, str, Path] | None:
    """A descriptor of ``path``'s folder reached from ``within`` without following a symlink, the
    final name, and the folder's path; None when a folder on the way is missing and not created."""
    base = path.parent if within is None else within
    try:
        parts = path.parent.relative_to(base).parts
    except ValueError:
        raise UnsafeTarget(path, f"is not inside {base}, where memd writes it") from None
    if ".." in parts or path.name in {"", ".", ".."}:
        raise UnsafeTarget(path, f"is not inside {base}, where memd writes it")
    if create:
        base.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(base, _DIR_FLAGS)
    except FileNotFoundError:
        if create:
            raise
        return None
    where = base
    try:
        for part in parts:
            where = where / part
            try:
                child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in {errno.ELOOP, errno.ENOTDIR}:
                    raise UnsafeTarget(where, _not_a_folder(fd, part, base)) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd, path.name, where


def _final(
    fd: int, name: str, where: Path, path: Path, follow_link: bool, *, reopen: bool = True
) -> tuple[int, str, Path, os.stat_result | None]:
    """The final name checked: absent or a regular file; a symlink only when ``follow_link`` allows
    it, then (with ``reopen``) the descriptor, name and folder of the file it leads to."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return fd, name, where, None
    if stat.S_ISREG(info.st_mode):
        return fd, name, where, info
    if not stat.S_ISLNK(info.st_mode):
        raise UnsafeTarget(where / name, f"is not a regular file ({_kind(info.st_mode)})")
    if not follow_link:
        raise UnsafeTarget(where / name, "is a symbolic link; memd does not write through it here")
    real = Path(os.path.realpath(where / name))
    try:
        target = os.stat(real, follow_symlinks=False)
    except OSError:
        raise UnsafeTarget(where / name, f"is a symbolic link to {real}, which does not exist") from None
    if not stat.S_ISREG(target.st_mode):
        raise UnsafeTarget(where / name, f"is a symbolic link to {real}, not to a regular file")
    if target.st_uid != os.getuid():
        raise UnsafeTarget(where / name, f"is a symbolic link to {real}, which another user owns")
    if not reopen:  # pragma: no cover - the re-check never follows
        return fd, name, where, target
    real_fd = os.open(real.parent, _DIR_FLAGS)
    os.close(fd)
    return real_fd, real.name, real.parent, target


def _not_a_folder(fd: int, part: str, base: Path) -> str:
    try:
        info = os.stat(part, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return "cannot be opened as a folder"
    if stat.S_ISLNK(info.st_mode):
        return f"is a symbolic link; memd writes only in real folders under {base}"
    return f"is not a folder ({_kind(info.st_mode)})"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a file"
    return "a special file"


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


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")
