"""Code a memory rests on: a topic's ``cites`` (``src/app.py:3-5``), checked against the project.

A cite is a path relative to the project root, a colon and a line or a range of lines
(``src/app.py:12``, ``src/app.py:3-5``). What the lines held is a SHA-256 of their text
(``fingerprint``); a topic whose cited lines no longer hash the same, or whose file is gone, is
stale (``pipeline.publish.stale``).

The project's files were not written by memd: a cite is read as hostile input. Its path must stay
inside the project (no absolute path, no ``..``, no component that is a symlink: a link out of the
project is never followed), the file must be a regular file (a FIFO or a device is refused without
blocking) of at most ``FILE_MAX_BYTES``. Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path, PurePosixPath

from pipeline.frozen import frozen_by_position
from pipeline.safefile import UnsafeFile, read_capped

FILE_MAX_BYTES = 2_000_000
"""The largest file memd reads to check a cite."""
CITES_MAX = 20
"""The most code citations one topic may carry."""
RANGE_MAX_LINES = 500
"""The most lines one cite may span."""
_CITE = re.compile(r"^(?P<path>[^:\n]+):(?P<first>\d{1,7})(?:-(?P<last>\d{1,7}))?$")


class BadCite(ValueError):
    """Not ``<relative path>:<line>[-<line>]`` inside the project."""


@frozen_by_position
class Cite:
    path: str
    first: int
    last: int

    def __str__(self) -> str:
        return f"{self.path}:{self.first}" + (f"-{self.last}" if self.last != self.first else "")


def parse(text: str) -> Cite:
    match = _CITE.match(text.strip())
    if match is None:
        raise BadCite(f"cite {text[:80]!r} is not '<path>:<line>' or '<path>:<first>-<last>'")
    path = match.group("path").strip()
    parts = PurePosixPath(path).parts
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or ".." in parts or "\\" in path:
        raise BadCite(f"cite {text[:80]!r} must be a path relative to the project root, inside it")
    first = int(match.group("first"))
    last = int(match.group("last") or first)
    if first < 1 or last < first or last - first >= RANGE_MAX_LINES:
        raise BadCite(f"cite {text[:80]!r}: lines must run from 1 up, at most {RANGE_MAX_LINES} of them")
    return Cite(path, first, last)


def problems(cites: tuple[str, ...]) -> list[str]:
    """What is wrong with a topic's ``cites``, as short sentences (empty when they are sound)."""
    out = []
    if len(cites) > CITES_MAX:
        out.append(f"'cites' holds {len(cites)} entries, more than {CITES_MAX}: cite the lines that matter")
    for text in cites:
        try:
            parse(text)
        except BadCite as exc:
            out.append(str(exc))
    return out


class Gone(Exception):
    """The cited file is not there (or not a file memd reads): the reason says which."""


def _inside(root: Path, rel: str) -> Path:
    """``root/rel`` reached without a symlink in any component; ``Gone`` otherwise."""
    current = root
    for part in PurePosixPath(rel).parts:
        if part in ("", "."):
            continue
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            raise Gone("is gone") from None
        except OSError as exc:
            raise Gone(f"cannot be read ({exc.strerror or exc})") from None
        if stat.S_ISLNK(mode):
            raise Gone("is a symbolic link, which memd does not follow out of the project")
    return current


def _lines(root: Path, rel: str) -> list[bytes]:
    path = _inside(root, rel)
    try:
        data = read_capped(path, FILE_MAX_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        raise Gone("is gone") from None
    except UnsafeFile as exc:
        raise Gone(exc.reason) from None
    lines = data.split(b"\n")
    return lines[:-1] if data.endswith(b"\n") else lines


def fingerprint(root: Path, cite: Cite, cache: dict[str, list[bytes] | Gone] | None = None) -> str:
    """The SHA-256 of the cited lines as they are now; ``Gone`` when the file is not there, is not a
    regular file inside the project, is too big, or ends before the cited lines. ``cache`` keeps
    each file read once (by its path) across the cites of one check."""
    cache = {} if cache is None else cache
    if cite.path not in cache:
        try:
            cache[cite.path] = _lines(root, cite.path)
        except Gone as gone:
            cache[cite.path] = gone
    lines = cache[cite.path]
    if isinstance(lines, Gone):
        raise Gone(str(lines))
    if cite.last > len(lines):
        raise Gone(f"has {len(lines)} lines, fewer than the cited {cite}")
    chosen = b"\n".join(line.rstrip(b"\r") for line in lines[cite.first - 1 : cite.last])
    return hashlib.sha256(chosen).hexdigest()
