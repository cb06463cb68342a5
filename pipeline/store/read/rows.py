"""The reader every read of the read API runs on: ``Rows.all(sql, params)`` gives a statement's rows
as dicts by column name, ``Rows.time(moment)`` a moment as this backend compares it with what is
stored (SQLite's naive UTC text, PostgreSQL's datetime).

Three ways to get one, the same statements on each:

- ``open_rows(url)``: a SQLite store opened read-only with ``sqlite3`` (no SQLAlchemy, no
  migration, no write; a missing file is reported, not created), the fast paths' reader (`memd
  status`, the page, `memd mcp`, `memd recall`);
- the same on a PostgreSQL store goes through SQLAlchemy (asyncpg), imported only then;
- ``on_store(store, read)``: inside an open ``Store``'s read transaction, for the daemon and the
  pipeline, which hold one already.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pipeline.store.read.values import connect_sqlite, sqlite_time
from pipeline.store_url import backend, describe, sqlite_path

if TYPE_CHECKING:
    from pipeline.store.engine import Store

__all__ = ["OpenRows", "PostgresRows", "Rows", "SqliteRows", "StoreUnavailable", "on_store", "open_rows"]

T = TypeVar("T")


class StoreUnavailable(Exception):
    """The state store cannot be read; the message says why."""


class Rows(Protocol):
    def all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...

    def time(self, value: datetime) -> Any: ...


class OpenRows(Rows, Protocol):
    """A reader ``open_rows`` opened: its caller closes it."""

    def close(self) -> None: ...


class SqliteRows:
    """Read-only ``sqlite3`` on the store file (WAL lets it read beside the daemon's writes)."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise StoreUnavailable(f"no state store at {path} (memd has not run yet)")
        try:
            self._conn = connect_sqlite(path)
            self._conn.row_factory = sqlite3.Row
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open {path}: {exc}") from None

    def all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return [dict(r) for r in self._conn.execute(sql, dict(params or {})).fetchall()]

    def time(self, value: datetime) -> Any:
        return sqlite_time(value)

    def close(self) -> None:
        self._conn.close()


class PostgresRows:
    """PostgreSQL through SQLAlchemy (asyncpg), driven from this synchronous reader."""

    def __init__(self, url: str, *, pg_schema: str | None = None) -> None:
        import asyncio

        from pipeline.store.engine import create_engine_for

        self._loop = asyncio.new_event_loop()
        self._engine = create_engine_for(url, pg_schema=pg_schema)
        try:
            self._conn: Any = self._loop.run_until_complete(self._engine.connect())
        except Exception as exc:
            self._loop.run_until_complete(self._engine.dispose())
            self._loop.close()
            raise StoreUnavailable(f"cannot reach {describe(url)}: {exc}") from None

    def all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        from pipeline.store.engine import fetch_all

        async def run() -> list[dict[str, Any]]:
            rows = await fetch_all(self._conn, sql, params)
            await self._conn.commit()
            return rows

        try:
            return self._loop.run_until_complete(run())
        except Exception:
            self._loop.run_until_complete(self._conn.rollback())
            raise

    def time(self, value: datetime) -> Any:
        return value

    def close(self) -> None:
        self._loop.run_until_complete(self._conn.close())
        self._loop.run_until_complete(self._engine.dispose())
        self._loop.close()


def open_rows(url: str, *, pg_schema: str | None = None) -> OpenRows:
    """A reader for the store at ``url`` (``pg_schema``: a PostgreSQL schema other than the default);
    the caller closes it."""
    if backend(url) == "sqlite":
        path = sqlite_path(url)
        if path is None:
            raise StoreUnavailable(f"cannot read the state store {url}")
        return SqliteRows(path)
    return PostgresRows(url, pg_schema=pg_schema)


class _ConnRows:
    """A ``Rows`` on a SQLAlchemy connection in a read transaction (``on_store``)."""

    def __init__(self, conn: Any, dialect: str) -> None:
        self._conn = conn
        self._sqlite = dialect == "sqlite"

    def all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        from sqlalchemy import text

        return [dict(row._mapping) for row in self._conn.execute(text(sql), dict(params or {}))]

    def time(self, value: datetime) -> Any:
        return sqlite_time(value) if self._sqlite else value


async def on_store(store: Store, read: Callable[[Rows], T]) -> T:
    """``read(rows)`` in one read transaction of an open ``store``: the daemon's and the pipeline's
    way to the same reads the fast paths run on ``open_rows``."""
    async with store.read() as conn:
        return await conn.run_sync(lambda sync_conn: read(_ConnRows(sync_conn, store.dialect)))
