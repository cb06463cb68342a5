"""A snapshot of what the last scan saw of every file, kept beside the state store.

An unchanged re-scan must cost about one ``stat`` per file. Reading every transcript row back from
the store costs as much again as the walk itself, so the scanner keeps this index (like git's
index file): the stat key and the few facts a scan needs per file, written after every scan that
changed something, and trusted only while the store's ``transcripts`` table is exactly as it was
then (its row count, highest id and latest ``updated_at``: the "generation"). Anything unusual
(a missing, truncated, foreign or stale file) means the store is read instead, so the index is a
cache and never a source of truth.
"""

from __future__ import annotations

import marshal
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.gcpause import gc_paused
from pipeline.store.transcripts import Seen

FORMAT = "memd-scan-index-1"
FILE_NAME = "scan-index.bin"


def index_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def load(path: Path, generation: tuple[Any, ...]) -> dict[str, Seen] | None:
    """The index at ``path`` if it was written at ``generation``; None otherwise (read the store)."""
    try:
        with path.open("rb") as f:
            raw = f.read()
    except OSError:
        return None
    try:
        with gc_paused():
            data = marshal.loads(raw)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, tuple) or len(data) != 3 or data[0] != FORMAT or data[1] != generation:
        return None
    entries = data[2]
    if not isinstance(entries, dict):
        return None
    return entries


def save(path: Path, generation: tuple[Any, ...], entries: Mapping[str, Seen]) -> None:
    """Write the index atomically (a reader sees the old or the new one, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".scan-index-")
    try:
        with os.fdopen(fd, "wb") as f:
            marshal.dump((FORMAT, generation, dict(entries)), f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def drop(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
