"""Walking a source root safely: no exceptions, no symlink loops, bounded depth."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import structlog

from pipeline.errors import TranscriptUnreadable

log = structlog.get_logger(__name__)

MAX_DEPTH = 12


def walk_files(
    root: Path,
    want: Callable[[str], bool],
    *,
    prune: Callable[[str, int], bool] = lambda _name, _depth: False,
    max_depth: int = MAX_DEPTH,
) -> Iterator[Path]:
    """``walk_paths`` as ``Path`` objects."""
    return map(Path, walk_paths(root, want, prune=prune, max_depth=max_depth))


def walk_paths(
    root: Path,
    want: Callable[[str], bool],
    *,
    prune: Callable[[str, int], bool] = lambda _name, _depth: False,
    max_depth: int = MAX_DEPTH,
) -> Iterator[str]:
    """Files under ``root`` whose name ``want`` accepts, depth first, sorted by name, as strings
    (a scan of tens of thousands of files should not pay for a ``Path`` object per file).

    Symlinked directories are followed once (a directory already visited, by device and inode, is
    skipped, so a symlink loop ends). A matching name that is a symlink to nothing or to itself is
    still yielded: parsing it reports why it cannot be read. Unreadable directories are skipped.
    """
    visited: set[tuple[int, int]] = set()

    def visit(directory: str, depth: int) -> Iterator[str]:
        try:
            info = os.stat(directory)
        except OSError:
            return
        key = (info.st_dev, info.st_ino)
        if key in visited or depth > max_depth:
            return
        visited.add(key)
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            log.debug("source_dir_unreadable", path=str(directory), error=type(exc).__name__)
            return
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not prune(entry.name, depth + 1):
                    yield from visit(entry.path, depth + 1)
                continue
            if not want(entry.name):
                continue
            try:
                usable = entry.is_symlink() or entry.is_file()
            except OSError:
                usable = False
            if usable:
                yield entry.path

    yield from visit(str(root), 0)


def drop_twins(paths: list[Path], drop_suffix: str, keep_suffix: str) -> list[Path]:
    """Drop ``x<drop_suffix>`` when ``x<keep_suffix>`` is in the same directory (a Codex
    ``.jsonl.zst`` next to its ``.jsonl``, a Gemini ``.json`` next to its resumed ``.jsonl``)."""
    present = {str(p) for p in paths}
    return [
        path
        for path in paths
        if not (str(path).endswith(drop_suffix) and str(path)[: -len(drop_suffix)] + keep_suffix in present)
    ]


def describe_os_error(path: Path, exc: OSError) -> TranscriptUnreadable:
    """A human-readable reason for a file that cannot be opened or read."""
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
