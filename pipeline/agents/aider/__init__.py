"""Aider: every session appended to ``<git root>/.aider.chat.history.md``, found by a bounded search
of the user's folders; memory through the ``read:`` list of ``~/.aider.conf.yml``. No MCP.
Standard library only (the adapter, ``transcripts.py``, is imported on first use).

Aider keeps no index of where it ran and writes nothing under HOME but its caches, so a scan looks
for its history files in every project memd knows and under the source's root (HOME by default;
``[sources.aider] root`` names a projects folder instead), that search bounded in depth, folders,
files and time, never following a symlinked folder or crossing to another filesystem, skipping
hidden folders and the trees no project keeps its history in (``node_modules``...), and cached
between scans (``places``). ``$AIDER_CHAT_HISTORY_FILE``, when it names a file,
is read as well. One file holds many sessions: each starts at a ``# aider chat started at`` line,
and memd names it ``<file>#<offset of that line>`` (``walk``), the last one growing while Aider
runs.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.agents.aider import places as places_mod
from pipeline.defaults import home
from pipeline.roster import Agent, Env, LoadCut, Places, PublishKey, Walked

NAME = "aider"
LABEL = "Aider"
HISTORY_FILE = ".aider.chat.history.md"
HISTORY_ENV = "AIDER_CHAT_HISTORY_FILE"
HEADER = b"# aider chat started at "
SEPARATOR = "#"

SEARCH_MAX_DEPTH = 6
"""Folders deeper than this under the root are not searched (``~/code/org/repo`` is depth 3)."""
SEARCH_MAX_DIRS = 20_000
"""A search stops after listing this many folders."""
SEARCH_MAX_FILES = 1_000
"""At most this many history files are read."""
SEARCH_MAX_SECONDS = 3.0
"""A search stops after this long (what it found so far is used)."""
FILE_MAX_BYTES = 256 << 20
"""A history file larger than this is not read (refused, with the reason)."""
SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        "site-packages",
        "venv",
        "env",
        "target",
        "build",
        "dist",
        "vendor",
        "snap",
        "Library",
        "proc",
        "sys",
    }
)
"""Trees no project keeps its history in (besides every hidden folder)."""


def history_env_file(env: Env) -> Path | None:
    """``$AIDER_CHAT_HISTORY_FILE``, when it is an absolute path (a relative one is per cwd)."""
    value = env.get(HISTORY_ENV, "")
    path = Path(value).expanduser() if value else None
    return path if path is not None and path.is_absolute() else None


def _search(root: Path, deadline: float) -> Iterator[str]:
    """History files under ``root``, breadth first (shallow projects first), bounded."""
    try:
        root_dev = os.stat(root).st_dev
    except OSError:
        return
    queue: list[tuple[str, int]] = [(str(root), 0)]
    listed = found = 0
    while queue and listed < SEARCH_MAX_DIRS and found < SEARCH_MAX_FILES:
        if time.monotonic() > deadline:
            return
        directory, depth = queue.pop(0)
        listed += 1
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name == HISTORY_FILE:
                found += 1
                yield entry.path  # a symlink or a FIFO too: the walk says why it is not read
                continue
            if depth >= SEARCH_MAX_DEPTH or entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
                continue
            try:
                if (
                    not entry.is_dir(follow_symlinks=False)
                    or entry.stat(follow_symlinks=False).st_dev != root_dev
                ):
                    continue
            except OSError:
                continue
            queue.append((entry.path, depth + 1))


def history_files(root: Path) -> Iterator[str]:
    """Every ``.aider.chat.history.md`` under ``root`` (bounded: ``SEARCH_MAX_*``) and
    ``$AIDER_CHAT_HISTORY_FILE``; the files, not the sessions (``walk`` splits them)."""
    seen: set[str] = set()
    extra = history_env_file(os.environ)
    for path in _search(root, time.monotonic() + SEARCH_MAX_SECONDS):
        seen.add(path)
        yield path
    if extra is not None and str(extra) not in seen:
        yield str(extra)


class _Headers:
    """The header offsets of one file, as far as it was read: a scan reads only what was appended."""

    __slots__ = ("dev", "ino", "offsets", "scanned", "first")

    def __init__(self, dev: int, ino: int, first: bytes) -> None:
        self.dev, self.ino, self.first = dev, ino, first
        self.offsets: list[int] = []
        self.scanned = 0


_HEADERS: dict[str, _Headers] = {}


def _headers(path: str, fd: int, info: os.stat_result) -> list[int]:
    """The offsets of the complete ``# aider chat started at`` lines of the open file."""
    first = os.pread(fd, 64, 0)
    known = _HEADERS.get(path)
    if (
        known is None
        or (known.dev, known.ino) != (info.st_dev, info.st_ino)
        or info.st_size < known.scanned
        or not first.startswith(known.first)
    ):
        known = _HEADERS[path] = _Headers(info.st_dev, info.st_ino, first)
        if len(_HEADERS) > 4 * SEARCH_MAX_FILES:
            _HEADERS.clear()
            _HEADERS[path] = known
    at = known.scanned
    carry = b""
    while at < info.st_size:
        chunk = os.pread(fd, min(1 << 20, info.st_size - at), at)
        if not chunk:
            break
        data = carry + chunk
        base = at - len(carry)
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                break
            if data.startswith(HEADER, start):
                known.offsets.append(base + start)
            start = newline + 1
        known.scanned = base + start
        carry = data[start:]
        at += len(chunk)
    return list(known.offsets)


def walk_file(path: str) -> list[Walked]:
    """The sessions of one history file: ``<file>#<offset>`` with a change key (the last session's
    moves with the file; an earlier one's only if its bytes do), or the file with why it is not read."""
    try:
        if stat_mod.S_ISLNK(os.lstat(path).st_mode):
            return [(path, None, "a symbolic link, which memd does not follow for Aider's history")]
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        return [(path, None, f"cannot open: {exc.strerror or exc}")]
    try:
        info = os.fstat(fd)
        if not stat_mod.S_ISREG(info.st_mode):
            return [(path, None, "not a regular file")]
        if info.st_size > FILE_MAX_BYTES:
            return [(path, None, f"larger than memd reads ({info.st_size} > {FILE_MAX_BYTES} bytes)")]
        if b"\0" in os.pread(fd, 4096, 0):
            return [(path, None, "binary content, not an Aider chat history")]
        offsets = _headers(path, fd, info)
    except OSError as exc:
        return [(path, None, f"cannot read: {exc.strerror or exc}")]
    finally:
        os.close(fd)
    out: list[Walked] = []
    for i, start in enumerate(offsets):
        last = i + 1 == len(offsets)
        end = info.st_size if last else offsets[i + 1]
        mtime = info.st_mtime_ns if last else 0
        out.append((f"{path}{SEPARATOR}{start}", (info.st_dev, info.st_ino, end - start, mtime), None))
    return out


def walk(root: Path) -> list[Walked]:
    """Every session of every history file ``history_files`` finds."""
    return [walked for path in history_files(root) for walked in walk_file(path)]


def walk_places(root: Path, places: Places) -> list[Walked]:
    """Every session of the history files in the projects memd knows and of those a search of
    ``root`` found (``places.candidates``: the search is cached), and ``$AIDER_CHAT_HISTORY_FILE``."""
    paths = places_mod.candidates(
        root, places, lambda r: _search(r, time.monotonic() + SEARCH_MAX_SECONDS), HISTORY_FILE
    )
    extra = history_env_file(os.environ)
    if extra is not None and str(extra) not in paths:
        paths.append(str(extra))
    return [walked for path in paths for walked in walk_file(path)]


def discover(root: Path) -> Iterator[str]:
    """The sessions under ``root``: ``walk``'s paths."""
    return (path for path, _key, _why in walk(root))


MEMORY_FILE = "memd-memory.md"
PROJECT_FILE = ".aider.memd-memory.md"
"""The file memd writes in a project's root (``.aider*``, the pattern Aider has git ignore) and names
in that root's ``.aider.conf.yml``."""
"""The file memd writes in ``~/.aider/memd/`` and names in ``~/.aider.conf.yml``'s ``read:`` list."""

AGENT = Agent(
    NAME,
    LABEL,
    home,
    discover,
    "pipeline.agents.aider.transcripts:AiderAdapter",
    env=(HISTORY_ENV,),
    walk=walk,
    walk_places=walk_places,
    publish=(
        PublishKey(
            "aider_global",
            True,
            "The global scope in ~/.aider/memd/memd-memory.md, named in the read: list of ~/.aider.conf.yml\n"
            "(a repository's or the working folder's .aider.conf.yml with its own read: list hides it).",
            LoadCut(MEMORY_FILE),
        ),
        PublishKey(
            "aider_project",
            False,
            "Each project's memory in <project>/.aider.memd-memory.md, named (with the global file) in the\n"
            "read: list of the project's .aider.conf.yml, which memd edits (a file of your repository).",
            LoadCut(PROJECT_FILE),
        ),
    ),
    targets=("pipeline.agents.aider.publish:Aider",),
    read_tools={"read-only": ("path",), "add": ("path",)},
    shell_tools={"run": ("command",)},
    project_hint="the git root of the folder holding .aider.chat.history.md",
    watched=False,  # its root is the home folder: searched on each scan, never watched whole,
    home=lambda env: home(env) / ".aider",
)
