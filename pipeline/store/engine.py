"""The state store's engine: the URL, SQLite's pragmas and transactions (``pipeline.store.opener``
opens it and brings its schema up to date).

SQLAlchemy is imported only under ``pipeline/store``. ``sqlite:///PATH`` runs on aiosqlite (WAL,
``busy_timeout``, write transactions begun IMMEDIATE so concurrent writers queue instead of
failing on a lock upgrade); ``postgresql://...`` runs on asyncpg through the same code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, event, make_url
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from pipeline.errors import StoreError
from pipeline.machine import UNNAMED as UNNAMED_MACHINE

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite

SQLITE_BUSY_TIMEOUT_MS = 10_000


def async_url(url: str) -> URL:
    """The async driver URL for a user-facing ``sqlite:///`` or ``postgresql://`` URL."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in {"postgresql", "postgres"}:
        return parsed.set(drivername="postgresql+asyncpg")
    raise StoreError(
        f"unsupported state_db URL scheme {parsed.drivername!r}: use sqlite:/// or postgresql://"
    )


class Store:
    """The state store's engine and its transactions. Domain operations live beside it, one module each."""

    def __init__(self, engine: AsyncEngine, url: str, *, machine: str = UNNAMED_MACHINE) -> None:
        self.engine = engine
        self.url = url
        self.machine = machine
        """The machine this store was opened on (``pipeline.machine``): whose transcripts, extract
        jobs and instance it reads and writes; ``pipeline.store.machines.identify`` sets it to this
        installation's machine key."""
        self.host: str | None = None
        """This host's identity beside the machine id (``pipeline.machine.host_id``), once identified."""
        self.person: str | None = None
        """Whose ``global/`` this machine's extracts feed (``[team] person``); None: this machine's own."""
        self.person_bound: frozenset[str] | None = None
        """(team mode) The machines bound to ``person`` by their signing keys, this one's included
        (``pipeline.team.people``); None: not bound yet, so no other machine counts as that person's."""

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def shared(self) -> bool:
        """Whether other machines may share this store (team mode): PostgreSQL may be; a SQLite
        file is one machine's."""
        return self.dialect == "postgresql"

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A transaction that may write (on SQLite: ``BEGIN IMMEDIATE``)."""
        async with self.engine.connect() as conn:
            await conn.execution_options(memd_write=True)
            async with conn.begin():
                yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A read-only transaction (on SQLite: a deferred ``BEGIN``, which WAL lets run beside a writer)."""
        async with self.engine.connect() as conn, conn.begin():
            yield conn

    def insert(self, table: Table) -> postgresql.Insert | sqlite.Insert:
        """An ``INSERT`` into ``table`` in this store's dialect, so it can say ``ON CONFLICT``.
        Only that dialect's module is imported: a SQLite store never loads PostgreSQL's."""
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(table)
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)

    async def close(self) -> None:
        await self.engine.dispose()


def create_engine_for(url: str, *, pg_schema: str | None = None, **engine_kw: Any) -> AsyncEngine:
    aurl = async_url(url)
    if aurl.get_backend_name() == "sqlite":
        if aurl.database and aurl.database != ":memory:":
            Path(aurl.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(
            aurl, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **engine_kw
        )
        _sqlite_events(engine)
        return engine
    connect_args: dict[str, Any] = {"timeout": 10}
    if pg_schema:
        connect_args["server_settings"] = {"search_path": pg_schema}
    return create_async_engine(aurl, connect_args=connect_args, pool_pre_ping=True, **engine_kw)


def _sqlite_events(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from the sqlite3 module so BEGIN is ours (see _on_begin).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        for pragma in (
            "journal_mode=WAL",
            "synchronous=NORMAL",
            f"busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
            "foreign_keys=ON",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        write = conn.get_execution_options().get("memd_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


async def fetch_all(
    conn: AsyncConnection, sql: str, params: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Rows of a plain SQL query as dicts (for readers such as `memd status` that build their own SQL)."""
    from sqlalchemy import text

    result = await conn.execute(text(sql), dict(params or {}))
    return [dict(row._mapping) for row in result]
