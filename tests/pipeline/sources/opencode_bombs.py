"""Hostile OpenCode databases, built for real from the CLI's own (``opencode_support.sample_db``):
a column that computes a huge value on every read, a view or a virtual table where a table should
be, and a real row bigger than memd reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.pipeline.sources.opencode_support import SAMPLE_SESSION, sample_db

PART_COLUMNS = "id, message_id, session_id, time_created, time_updated"


def _rebuild_part(db: Path, data_column: str) -> None:
    """``part`` made again with ``data_column`` as its ``data``, every row kept (their ``data``
    left to the new column)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(
        f"""
        BEGIN;
        CREATE TABLE part_new (
          id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
          time_created integer NOT NULL, time_updated integer NOT NULL, {data_column});
        INSERT INTO part_new ({PART_COLUMNS}) SELECT {PART_COLUMNS} FROM part;
        DROP TABLE part;
        ALTER TABLE part_new RENAME TO part;
        CREATE INDEX part_session_idx ON part (session_id);
        CREATE INDEX part_message_id_id_idx ON part (message_id, id);
        COMMIT;
        """
    )
    conn.close()


def generated_bomb(folder: Path, *, size: int = 700_000_000, kind: str = "VIRTUAL") -> Path:
    """The issue's bomb: ``part.data`` a generated column of ``zeroblob(size)`` (``kind`` VIRTUAL:
    computed on every read, the file stays small)."""
    db = sample_db(folder)
    _rebuild_part(db, f"data text GENERATED ALWAYS AS (zeroblob({size})) {kind}")
    return db


def stored_generated(folder: Path) -> Path:
    """``part.data`` a STORED generated column (a small value, written once): not OpenCode's schema."""
    db = sample_db(folder)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("ALTER TABLE part RENAME COLUMN data TO raw")
    conn.close()
    _rebuild_part(db, "raw text, data text GENERATED ALWAYS AS (raw) STORED")
    return db


def view_in_place(folder: Path, table: str, *, endless: bool = False) -> Path:
    """``table`` replaced by a view: one that computes a 300 MB value per row, or (``endless``) one
    that never ends."""
    db = sample_db(folder)
    conn = sqlite3.connect(db, isolation_level=None)
    columns = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    conn.execute(f"ALTER TABLE {table} RENAME TO {table}_real")
    if endless:
        select = (
            f"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
            f"SELECT t.* FROM {table}_real t, r WHERE r.n < 0"
        )
    else:
        huge = ("data", "worktree", "directory")
        others = ", ".join(c for c in sorted(columns) if c not in huge)
        extra = ", ".join(f"zeroblob(300000000) AS {c}" for c in huge if c in columns)
        select = f"SELECT {others}, {extra} FROM {table}_real"
    conn.execute(f"CREATE VIEW {table} AS {select}")
    conn.close()
    return db


def virtual_part(folder: Path) -> Path:
    """``part`` an FTS5 virtual table holding the same rows."""
    db = sample_db(folder)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("ALTER TABLE part RENAME TO part_real")
    conn.execute(f"CREATE VIRTUAL TABLE part USING fts5({PART_COLUMNS}, data)")
    conn.execute(f"INSERT INTO part SELECT {PART_COLUMNS}, data FROM part_real")
    conn.close()
    return db


def huge_row(folder: Path, size: int) -> Path:
    """A real part of ``size`` bytes (text, stored in the file) added to the sample session."""
    db = sample_db(folder)
    conn = sqlite3.connect(db, isolation_level=None)
    message = conn.execute(
        "SELECT id FROM message WHERE session_id = ? ORDER BY time_created LIMIT 1", (SAMPLE_SESSION,)
    ).fetchone()[0]
    body = '{"type": "text", "text": "' + "x" * (size - 30) + '"}'
    conn.execute(
        f"INSERT INTO part ({PART_COLUMNS}, data) VALUES ('prt_zzzzhuge', ?, ?, 1, 1, ?)",
        (message, SAMPLE_SESSION, body),
    )
    conn.close()
    return db
