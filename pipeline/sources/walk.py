"""Finding session files under a source root, without parsing anything.

Every scan walks every root, and `memd scan` with nothing changed does little else, so this module
uses the standard library only (no adapter, no logging set-up, no pydantic): the quick check in
``pipeline.scan.probe`` imports it without the rest of memd. Each source's entry in
``pipeline.sources.registry`` names its function below; the adapters' ``discover_paths`` are the
same functions. Walking never raises: symlink loops end, unreadable directories are skipped.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pipeline.gcpause import gc_paused

MAX_DEPTH = 12

StatKey = tuple[int, int, int, int]  # dev, ino, size, mtime_ns
Walked = tuple[str, StatKey | None, str | None]  # path, stat key, why it could not be used


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


# -- one function per source: the files each agent writes sessions to ---------------------------

CLAUDE_PRUNED_DIRS = frozenset({"tool-results", "memory", "remote-agents", "mcp-tasks", "file-history"})


def claude_code(root: Path) -> Iterator[str]:
    """``<root>/<encoded cwd>/<session>.jsonl``, sub-agent siblings and ``<session>/subagents/``."""
    return walk_paths(
        root,
        lambda name: name.endswith(".jsonl") and name != "journal.jsonl",
        prune=lambda name, _depth: name in CLAUDE_PRUNED_DIRS,
    )


def codex(root: Path) -> Iterator[str]:
    """``rollout-*.jsonl`` (or ``.jsonl.zst``, dropped beside its ``.jsonl``) under ``sessions/``
    and ``archived_sessions/``; ``root`` may be ``$CODEX_HOME`` or its ``sessions``."""
    if (root / "sessions").is_dir():
        roots = [root / "sessions", root / "archived_sessions"]
    else:
        roots = [root, root.parent / "archived_sessions"] if root.name == "sessions" else [root]
    paths: list[Path] = []
    for base in roots:
        paths.extend(
            walk_files(base, lambda n: n.startswith("rollout-") and n.endswith((".jsonl", ".jsonl.zst")))
        )
    return (str(p) for p in drop_twins(paths, ".jsonl.zst", ".jsonl"))


def gemini_cli(root: Path) -> Iterator[str]:
    """``<root>/<project>/chats/session-*.json[l]`` and sub-agent ``.jsonl`` one level down; a
    legacy ``.json`` is dropped beside the ``.jsonl`` it was resumed into."""
    paths: list[Path] = []
    try:
        projects = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        projects = []
    for project in projects:
        chats = project / "chats"
        for path in walk_files(chats, lambda n: n.endswith((".json", ".jsonl")), max_depth=2):
            top = path.parent == chats
            if (top and path.name.startswith("session-")) or (not top and path.name.endswith(".jsonl")):
                paths.append(path)
    return (str(p) for p in drop_twins(paths, ".json", ".jsonl"))


def pi(root: Path) -> Iterator[str]:
    """``<root>/<encoded cwd>/<time>_<session>.jsonl``."""
    return walk_paths(root, lambda name: name.endswith(".jsonl"))


def opencode(root: Path) -> Iterator[str]:
    """``<root>/opencode.db`` (``opencode-<channel>.db``): one ``<database>#<session id>`` per
    session (``pipeline.sources.opencode_db``, imported on first use)."""
    from pipeline.sources import opencode_db

    return opencode_db.discover(root)


def opencode_sessions(root: Path) -> list[Walked]:
    """``opencode`` with each session's change key: what the scan and its quick check compare."""
    from pipeline.sources import opencode_db

    return opencode_db.walk(root)


def copilot_cli(root: Path) -> Iterator[str]:
    """``<root>/<session id>/events.jsonl`` (``root`` is ``$COPILOT_HOME/session-state``)."""
    return walk_paths(
        root,
        lambda name: name == "events.jsonl",
        prune=lambda name, _depth: name.startswith("."),
        max_depth=1,
    )


def qwen_code(root: Path) -> Iterator[str]:
    """``<root>/<encoded cwd>/chats/<session>.jsonl`` and sub-agents'
    ``<root>/<encoded cwd>/subagents/<parent>/agent-*.jsonl`` (``root`` is ``~/.qwen/projects``)."""
    for path in walk_paths(
        root,
        lambda name: name.endswith(".jsonl"),
        prune=lambda name, depth: depth == 2 and name not in ("chats", "subagents"),
        max_depth=3,
    ):
        parts = path.rsplit("/", 3)
        if len(parts) == 4 and (
            parts[2] == "chats" or (parts[1] == "subagents" and parts[3].startswith("agent-"))
        ):
            yield path
