"""Has anything changed since the last scan? Answered with one ``stat`` per file and nothing else.

`memd scan` asks this first. A full scan loads the settings model, the store layer and the source
parsers, which costs several times the walk itself; when nothing changed it would find nothing to
parse, nothing to re-judge and nothing to write. The probe answers "unchanged" only when all of
these hold, and otherwise says nothing (the caller then runs the full scan):

- the scan index exists and was written under the same settings (``key``, see
  ``daemon.config_layers.inputs_key``) at the store's current generation (a SQLite store, read
  with ``sqlite3`` through the store's read model; any other store is left to the full scan);
- every file under the roots that scan walked has the stat key the index recorded, and no file
  is new, unusable or gone, nor one the index says had gone;
- no active session's idle time has come (its verdict would move with the clock).

Standard library only: it imports the walk (``pipeline.sources.walk``, each source's through
``pipeline.sources.registry``), the index and the store's read model and URL
(``pipeline.store.read``, ``pipeline.store_url``), nothing else.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from pipeline.frozen import frozen_by_position
from pipeline.machine import UNNAMED
from pipeline.roster import Places
from pipeline.scan import index as scan_index
from pipeline.sources import registry
from pipeline.store.read.rows import SqliteRows, StoreUnavailable
from pipeline.store.read.sessions import Generation, generation
from pipeline.store_url import sqlite_path
from pipeline.vocabulary import TranscriptState


@frozen_by_position
class Unchanged:
    files_seen: int
    duration_s: float


def probe(
    state_db: str, index_file: Path, key: str, now: float, *, machine: str = UNNAMED
) -> Unchanged | None:
    """``Unchanged`` when a full scan on ``machine`` at epoch second ``now`` would find nothing to
    do; else None."""
    started = time.perf_counter()
    db = sqlite_path(state_db)
    if db is None or not key or not db.exists():
        return None
    index = scan_index.load(index_file)
    if index is None or index.key != key or _generation(db, machine) != index.generation:
        return None

    entries = index.entries
    seen = 0
    for source, root in index.roots.items():
        entry = registry.find(source)
        if entry is None:
            return None
        places = Places(None, index_file.parent)  # the projects the last scan named
        walked = registry.walked(entry, Path(root), places) if Path(root).is_dir() else []
        for path, stat_key, error in walked:
            prev = entries.get(path)
            if (
                error is not None
                or prev is None
                or prev[1] != source
                or prev[2] != stat_key
                or prev[4] == TranscriptState.GONE
            ):
                return None
            if prev[3] is not None and prev[3] <= now:
                return None
        seen += len(walked)
    # Every file the index knows for these sources was walked (each walked file is one of them,
    # so equal counts mean equal sets).
    expected = sum(1 for e in entries.values() if e[1] in index.roots and e[4] != TranscriptState.GONE)
    if expected != seen:
        return None
    return Unchanged(files_seen=seen, duration_s=time.perf_counter() - started)


def _generation(db: Path, machine: str) -> Generation | None:
    try:
        rows = SqliteRows(db)
        try:
            return generation(rows, machine)
        finally:
            rows.close()
    except (sqlite3.Error, StoreUnavailable):
        return None
