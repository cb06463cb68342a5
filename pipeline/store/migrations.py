"""Versioned schema migrations, run at start.

Each migration is a function of the connection; one that alters existing tables gets alembic's
``Operations`` from ``operations(conn)`` (batch mode on SQLite). So alembic (and the Mako and
Pygments lexers it imports) is loaded only when such a migration runs: a fresh store is created
without it, and the daemon that created it does not carry it for the rest of its life. The version
the database is at lives in ``memd_schema``; a database at a newer version than this code knows is
refused, never touched.

Until memd's first release, version 1 is the schema in ``schema.py`` as a whole. After it, every
change is a new function appended to ``MIGRATIONS``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, insert, inspect, select, update

from pipeline import __version__
from pipeline.errors import SchemaTooNew, StoreError
from pipeline.store import schema
from pipeline.store.engine import Store

if TYPE_CHECKING:
    from alembic.operations import Operations


def operations(conn: Connection) -> Operations:
    """alembic's operations on ``conn`` (batch mode on SQLite), for a migration that alters tables."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    ctx = MigrationContext.configure(conn, opts={"render_as_batch": conn.dialect.name == "sqlite"})
    return Operations(ctx)


def _v1(conn: Connection) -> None:
    schema.metadata.create_all(
        conn, tables=[t for t in schema.metadata.sorted_tables if t.name != "memd_schema"]
    )


MIGRATIONS: list[Callable[[Connection], None]] = [_v1]
LATEST = len(MIGRATIONS)


def _current(conn: Connection) -> int:
    if not inspect(conn).has_table("memd_schema"):
        return 0
    row = conn.execute(select(schema.schema_version.c.version).where(schema.schema_version.c.id == 1)).first()
    return int(row[0]) if row else 0


def _run(conn: Connection) -> int:
    found = _current(conn)
    if found > LATEST:
        raise SchemaTooNew(found, LATEST)
    if found == LATEST:
        return found
    schema.schema_version.create(conn, checkfirst=True)
    for version in range(found + 1, LATEST + 1):
        MIGRATIONS[version - 1](conn)
    now = datetime.now(UTC)
    values = {"version": LATEST, "migrated_at": now, "memd_version": __version__}
    if found == 0 and conn.execute(select(schema.schema_version.c.id)).first() is None:
        conn.execute(insert(schema.schema_version).values(id=1, **values))
    else:
        conn.execute(update(schema.schema_version).where(schema.schema_version.c.id == 1).values(**values))
    return LATEST


async def upgrade(store: Store) -> int:
    """Bring the schema up to ``LATEST``; returns the version. Concurrent starts serialize on the write lock."""
    async with store.write() as conn:
        if store.dialect == "postgresql":
            from sqlalchemy import text

            await conn.execute(text("SELECT pg_advisory_xact_lock(7438201)"))
        return await conn.run_sync(_run)


async def check_schema(store: Store) -> int:
    """The schema version, refusing a newer one and an empty database (read-only)."""
    async with store.read() as conn:
        found = await conn.run_sync(_current)
    if found > LATEST:
        raise SchemaTooNew(found, LATEST)
    if found == 0:
        raise StoreError("the state store is empty: run `memd scan` or `memd run` first")
    return found
