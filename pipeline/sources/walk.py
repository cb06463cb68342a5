"""Finding session files under a source root, without parsing anything.

Every scan walks every root, and `memd scan` with nothing changed does little else, so this module
uses the standard library only (no adapter, no logging set-up, no pydantic): the quick check in
``pipeline.scan.probe`` imports it without the rest of memd. Each agent's folder
(``pipeline/agents/<name>/``) builds its discovery on these functions; its adapter's
``discover_paths`` is the same function. Walking never raises: symlink loops end, unreadable directories are skipped.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pipeline.gcpause import gc_paused
from pipeline.roster import StatKey, Walked

MAX_DEPTH = 12


__all__ = ["MAX_DEPTH", "StatKey", "Walked", "drop_twins", "stat_paths", "walk_files", "walk_paths"]


def stat_paths(paths: Iterable[str]) -> list[Walked]:
    """One ``stat`` per path, as plain tuples (this runs over every file on every scan); a file
    that cannot be used carries the reason instead of a key. Never raises for one bad file."""
    out: list[Walked] = []
    append = out.append
    with gc_paused():
        for spath in paths:
            try:
                info = os.stat(spath)
            except OSError as exc:
                append((spath, None, f"cannot stat: {exc.strerror or exc}"))
                continue
            if stat_mod.S_ISREG(info.st_mode):
                append((spath, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns), None))
            else:
                append((spath, None, "not a regular file"))
    return out


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
            _log_unreadable(directory, exc)
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


def _log_unreadable(directory: str, exc: OSError) -> None:
    import structlog  # only on this rare path: the quick scan never loads logging

    structlog.get_logger(__name__).debug("source_dir_unreadable", path=directory, error=type(exc).__name__)
