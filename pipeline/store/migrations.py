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

from sqlalchemy import Column, Connection, MetaData, String, Table, insert, inspect, select, text, update

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


def _v1(conn: Connection, machine: str) -> None:
    schema.metadata.create_all(
        conn, tables=[t for t in schema.metadata.sorted_tables if t.name != "memd_schema"]
    )


def _v2(conn: Connection, machine: str) -> None:
    """Team mode: transcripts keyed by machine as well as path, extract jobs, leases and heartbeats
    naming their machine (and, until ``_v4_team`` dropped them, the scope snapshots). What the store holds already is this machine's
    (a store made by ``_v1`` from today's schema has all of it, and is left as it is)."""
    found = inspect(conn)
    for table in (schema.jobs, schema.leases, schema.heartbeats, schema.batches):
        if "machine" not in {c["name"] for c in found.get_columns(table.name)}:
            operations(conn).add_column(table.name, Column("machine", String(64)))
            conn.execute(update(table).values(machine=machine))
    if conn.dialect.name == "postgresql":  # one instance per machine now (daemon.service.instance)
        old_instance = schema.leases.c.name == "instance"
        conn.execute(update(schema.leases).where(old_instance).values(name=f"instance:{machine}"))
    if "machine" not in {c["name"] for c in found.get_columns("publications")}:
        _add_machine(conn, "publications", machine)
        if conn.dialect.name == "sqlite":
            _rebuild_sqlite_table(conn, schema.publications)
        else:
            ops = operations(conn)
            name = found.get_pk_constraint("publications").get("name") or "publications_pkey"
            ops.drop_constraint(name, "publications", type_="primary")
            ops.create_primary_key("publications_pkey", "publications", ["machine", "target", "scope"])
    if "machine" in {c["name"] for c in found.get_columns("transcripts")}:
        return
    _add_machine(conn, "transcripts", machine)
    for old in ("ix_transcripts_updated", "ix_transcripts_state", "ix_transcripts_source_state"):
        conn.execute(text(f"DROP INDEX IF EXISTS {old}"))  # each now leads with the machine
    if conn.dialect.name == "sqlite":
        _rebuild_sqlite_table(conn, schema.transcripts)
        return
    ops = operations(conn)
    for unique in found.get_unique_constraints("transcripts"):
        if unique["column_names"] == ["path"] and unique["name"]:
            ops.drop_constraint(unique["name"], "transcripts", type_="unique")
    ops.create_unique_constraint("uq_transcripts_machine_path", "transcripts", ["machine", "path"])
    for index in schema.transcripts.indexes:
        index.create(conn, checkfirst=True)


def _v3(conn: Connection, machine: str) -> None:
    """The indexes `memd status` reads by: the usage figures' (a scope's uses, a project's sessions)
    and the next session to become idle."""
    for index in (*schema.memory_uses.indexes, *schema.transcripts.indexes):
        index.create(conn, checkfirst=True)


def _v4_team(conn: Connection, machine: str) -> None:
    """Team mode: memory travels through the ``[sync]`` remote only, so the scope folders the store
    carried (``scope_snapshots``) go; the machines table records which host each machine id is on
    and whose person it is (``pipeline.store.machines``)."""
    conn.execute(text("DROP TABLE IF EXISTS scope_snapshots"))
    schema.machines.create(conn, checkfirst=True)


def _v5_m26notes(conn: Connection, machine: str) -> None:
    """``memd mcp``'s own records: the notes agents hand memd (``memory_remember``) and their verdicts
    on the memories they read (``memory_feedback``)."""
    for table in (schema.memory_notes, schema.memory_feedback):
        table.create(conn, checkfirst=True)
        for index in table.indexes:
            index.create(conn, checkfirst=True)


def _add_machine(conn: Connection, table: str, machine: str) -> None:
    """A ``machine`` column on ``table``, its rows this machine's (NOT NULL on PostgreSQL now; on
    SQLite with the rebuild that follows)."""
    conn.execute(text(f"ALTER TABLE {table} ADD COLUMN machine VARCHAR(64)"))
    conn.execute(text(f"UPDATE {table} SET machine = :machine"), {"machine": machine})
    if conn.dialect.name != "sqlite":
        operations(conn).alter_column(table, "machine", nullable=False, existing_type=String(64))


def _rebuild_sqlite_table(conn: Connection, table: Table) -> None:
    """Make SQLite's ``table`` exactly as ``schema.py`` has it now (its unnamed ``UNIQUE`` can only
    go with the table): a copy built beside it takes its rows and then its name. The caller turned
    foreign keys off (``upgrade``), so dropping the old table cascades nowhere; the rows that point
    at it keep their ids."""
    interim = table.to_metadata(MetaData(), name=f"{table.name}_v2")
    for index in list(interim.indexes):
        interim.indexes.discard(index)
    interim.create(conn)
    columns = ", ".join(f'"{c.name}"' for c in table.columns)
    conn.execute(text(f"INSERT INTO {interim.name} ({columns}) SELECT {columns} FROM {table.name}"))
    conn.execute(text(f"DROP TABLE {table.name}"))
    conn.execute(text(f"ALTER TABLE {interim.name} RENAME TO {table.name}"))
    for index in table.indexes:
        index.create(conn)
    broken = conn.execute(text("PRAGMA foreign_key_check")).first()
    if broken is not None:
        raise StoreError(f"the migration of {table.name} broke a reference: {tuple(broken)}")


MIGRATIONS: list[Callable[[Connection, str], None]] = [_v1, _v2, _v3, _v4_team, _v5_m26notes]
LATEST = len(MIGRATIONS)


def _current(conn: Connection) -> int:
    if not inspect(conn).has_table("memd_schema"):
        return 0
    row = conn.execute(select(schema.schema_version.c.version).where(schema.schema_version.c.id == 1)).first()
    return int(row[0]) if row else 0


def _run(conn: Connection, machine: str) -> int:
    found = _current(conn)
    if found > LATEST:
        raise SchemaTooNew(found, LATEST)
    if found == LATEST:
        return found
    schema.schema_version.create(conn, checkfirst=True)
    for version in range(found + 1, LATEST + 1):
        MIGRATIONS[version - 1](conn, machine)
    now = datetime.now(UTC)
    values = {"version": LATEST, "migrated_at": now, "memd_version": __version__}
    if found == 0 and conn.execute(select(schema.schema_version.c.id)).first() is None:
        conn.execute(insert(schema.schema_version).values(id=1, **values))
    else:
        conn.execute(update(schema.schema_version).where(schema.schema_version.c.id == 1).values(**values))
    return LATEST


async def upgrade(store: Store) -> int:
    """Bring the schema up to ``LATEST``; returns the version. Concurrent starts serialize on the
    write lock. What a migration finds is recorded as ``store.machine``'s."""
    async with store.engine.connect() as conn:
        sqlite = store.dialect == "sqlite"
        if sqlite:  # a table rebuilt on SQLite must not cascade (a no-op inside a transaction)
            await conn.run_sync(_foreign_keys, False)
        try:
            await conn.execution_options(memd_write=True)
            async with conn.begin():
                if not sqlite:
                    await conn.execute(text("SELECT pg_advisory_xact_lock(7438201)"))
                return await conn.run_sync(_run, store.machine)
        finally:
            if sqlite:
                await conn.run_sync(_foreign_keys, True)


def _foreign_keys(conn: Connection, on: bool) -> None:
    """SQLite's ``PRAGMA foreign_keys`` on the connection, outside any transaction."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")
    finally:
        cursor.close()


async def check_schema(store: Store) -> int:
    """The schema version, refusing a newer one and an empty database (read-only)."""
    async with store.read() as conn:
        found = await conn.run_sync(_current)
    if found > LATEST:
        raise SchemaTooNew(found, LATEST)
    if found == 0:
        raise StoreError("the state store is empty: run `memd scan` or `memd run` first")
    return found
