"""Where a scan looks for Aider's history files: in every project memd knows, and in what a
bounded search of the source's root (HOME by default) found, the search run again only when the
last one is ``SEARCH_EVERY_S`` old. Standard library only.

Aider keeps no index of where it ran, and each history file sits in a repository's git root, so
memd looks where it already knows projects are: the projects of every agent's sessions and of its
scopes (Aider's own among them once one of its files was read), one ``stat`` each. A repository
only Aider was run in is found by the search of the root (``history_files``: bounded in depth,
folders, files and time, never following a symlinked folder). That search lists up to 20,000
folders: run on every scan it would make each `memd scan` (and its quick check) cost up to three
seconds on a large home folder, so what it found is kept in ``<state dir>/aider-places.json``
with its time and the projects the scan named, and searched again once it is ``SEARCH_EVERY_S``
old, or when the root moved. A new repository is thus seen at once when any other agent ran there,
else within ``SEARCH_EVERY_S``; a history file that went away is seen at once (its ``stat``
fails). The quick check, which reads no store, looks in the projects the last scan named.
"""

from __future__ import annotations

import json
import os
import stat as stat_mod
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pipeline.roster import Places

CACHE_FILE = "aider-places.json"
CACHE_MAX_BYTES = 4 << 20
SEARCH_EVERY_S = 6 * 3600.0
"""How old the last search of the root may be before a scan searches again."""
FORMAT = 1


def _load(path: Path) -> dict[str, object] | None:
    """memd's cache, when it is a regular file memd wrote (never a symlink, FIFO or garbage)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat_mod.S_ISREG(info.st_mode) or info.st_size > CACHE_MAX_BYTES:
            return None
        data = json.loads(os.read(fd, info.st_size + 1))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) and data.get("v") == FORMAT else None


def _save(path: Path, data: dict[str, object]) -> None:
    """Atomically (a temporary file renamed over it: a symlink there is replaced, never followed)."""
    import tempfile  # lazy: tempfile pulls shutil, lzma, bz2 and random into every path loading the settings

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".aider-places-")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only state folder: search again next time


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def candidates(
    root: Path, places: Places, search: Callable[[Path], Iterable[str]], history_file: str
) -> list[str]:
    """The history files to read: ``<project>/<history_file>`` of each known project that has
    one, and what the last search of ``root`` found (searched again when due)."""
    path = places.state_dir / CACHE_FILE
    cache = _load(path) or {}
    now = time.time()
    searched_at = cache.get("searched_at")
    fresh = (
        cache.get("root") == str(root)
        and isinstance(searched_at, float)
        and 0 <= now - searched_at < SEARCH_EVERY_S
    )
    found = _strings(cache.get("found")) if fresh else list(search(root))
    projects = list(places.projects) if places.projects is not None else _strings(cache.get("projects"))
    if not fresh or places.projects is not None and projects != _strings(cache.get("projects")):
        record = {
            "v": FORMAT,
            "root": str(root),
            "searched_at": searched_at if fresh else now,
            "found": found,
            "projects": projects,
        }
        _save(path, record)
    out = dict.fromkeys(p for p in found if os.path.lexists(p))  # one gone since: not read, gone
    for project in projects:
        candidate = os.path.join(project, history_file)
        if candidate not in out and os.path.lexists(candidate):
            out[candidate] = None
    return list(out)
