"""A snapshot of what the last scan saw of every file, kept beside the state store.

An unchanged re-scan must cost about one ``stat`` per file. Reading every transcript row back from
the store costs as much again as the walk itself, so the scanner keeps this index (like git's
index file): the stat key and the few facts a scan needs per file, written after every scan that
changed something, and trusted only while the store's ``transcripts`` table is exactly as it was
then (its row count, highest id and latest ``updated_at``: the "generation"). Anything unusual
(a missing, truncated, foreign or stale file) means the store is read instead, so the index is a
cache and never a source of truth.

The index also records the roots that scan walked and a ``key`` naming the settings it judged
with (``daemon.config_layers.inputs_key``: memd's version, the config file's bytes and the
environment the settings derive from). With both, ``pipeline.scan.probe`` can tell that nothing
changed without loading the settings model or the store layer. Standard library only (its
types come from the store's read model, ``pipeline.store.read``).
"""

from __future__ import annotations

import marshal
import os
from dataclasses import field
from pathlib import Path

from pipeline.frozen import frozen_by_position
from pipeline.gcpause import gc_paused
from pipeline.store.read.sessions import Generation, Seen

FORMAT = "memd-scan-index-2"  # one marshalled tuple: (FORMAT, generation, key, roots, entries)
FILE_NAME = "scan-index.bin"

# Each entry is a ``Seen`` tuple (``pipeline.store.read``, where the store layer reads it
# too); the generation is ``pipeline.store.read.sessions.GENERATION_SQL``'s answer.


@frozen_by_position
class Index:
    generation: Generation
    entries: dict[str, Seen]
    key: str | None = None
    """The settings the scan that wrote it judged with (None: not known)."""
    roots: dict[str, str] = field(default_factory=dict)
    """The roots that scan walked, by source."""


def index_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def load(path: Path) -> Index | None:
    """The index at ``path``, or None when there is none or it is not one memd wrote."""
    try:
        raw = path.read_bytes()
        with gc_paused():
            data = marshal.loads(raw)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, tuple) or len(data) != 5 or data[0] != FORMAT:
        return None
    _, generation, key, roots, entries = data
    if not (
        isinstance(generation, tuple)
        and len(generation) == 3
        and isinstance(roots, dict)
        and isinstance(entries, dict)
        and (key is None or isinstance(key, str))
    ):
        return None
    return Index(generation=generation, entries=entries, key=key, roots=roots)


def save(path: Path, index: Index) -> None:
    """Write the index atomically (a reader sees the old or the new one, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # only when writing: the quick check only reads the index

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".scan-index-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(
                marshal.dumps((FORMAT, index.generation, index.key, dict(index.roots), dict(index.entries)))
            )
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
