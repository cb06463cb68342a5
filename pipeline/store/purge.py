"""Removing forgotten text from the state store, down to the database file.

A forgotten extract keeps its ids (row, transcript, session, scope) and ``forgotten_at``; its summary,
raw notes, slug and candidate memories are overwritten with empty values (``FORGOTTEN_TEXT``).

SQLite keeps deleted or overwritten bytes in free space and free pages of the file, and earlier
versions of a page in the WAL file: the purge's transaction runs with ``PRAGMA secure_delete`` (SQLite
zeroes the space it frees), and the WAL is then checkpointed into the database and truncated
(``wal_checkpoint(TRUNCATE)``; should a reader hold it open, the truncation happens at a later
checkpoint, the file's own pages are clean already). PostgreSQL keeps an updated row's old version
as a dead tuple until VACUUM, and plain VACUUM (or autovacuum) only marks that space reusable without
overwriting it; ``VACUUM FULL stage1_outputs`` rewrites the table, but the write-ahead log segments,
replicas and backups keep what they hold until they are recycled: memd cannot reach those.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from pipeline.store.engine import Store

FORGOTTEN_TEXT: dict[str, Any] = {"rollout_summary": "", "raw_memory": "", "rollout_slug": "", "memories": []}
"""The values a forgotten extract's text columns take."""


@asynccontextmanager
async def purging(store: Store) -> AsyncIterator[AsyncConnection]:
    """A write transaction whose overwritten text leaves the database file (see the module docstring)."""
    sqlite = store.dialect == "sqlite"
    async with store.write() as conn:
        if sqlite:
            await conn.exec_driver_sql("PRAGMA secure_delete = ON")
        yield conn
    if sqlite:
        async with store.engine.connect() as conn:
            await conn.run_sync(_checkpoint)


def _checkpoint(sync_conn: Any) -> None:
    # On the driver's cursor, outside any transaction (SQLAlchemy would begin one first).
    cursor = sync_conn.connection.dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.fetchall()
        cursor.execute("PRAGMA secure_delete = OFF")
    finally:
        cursor.close()
