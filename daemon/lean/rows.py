"""Reading the state store for `memd status`: SQLite with the standard library, PostgreSQL through SQLAlchemy.

The default SQLite store is opened read-only with ``sqlite3`` (no SQLAlchemy, no migration, no
write, and a missing file is reported, not created); a PostgreSQL store goes through
SQLAlchemy, imported only then. Both answer the same SQL, the store's read model
(``pipeline.store.readmodel``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pipeline.store.readmodel import connect_sqlite, sqlite_time
from pipeline.store_url import backend, describe, sqlite_path

__all__ = ["PostgresRows", "Rows", "SqliteRows", "StoreUnavailable", "describe", "open_rows"]


class StoreUnavailable(Exception):
    """The state store cannot be read; the message says why."""


class Rows(Protocol):
    def all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...

    def time(self, value: datetime) -> Any: ...

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


def open_rows(url: str, *, pg_schema: str | None = None) -> Rows:
    """A reader for the store at ``url`` (``pg_schema``: a PostgreSQL schema other than the default)."""
    if backend(url) == "sqlite":
        path = sqlite_path(url)
        if path is None:
            raise StoreUnavailable(f"cannot read the state store {url}")
        return SqliteRows(path)
    return PostgresRows(url, pg_schema=pg_schema)
