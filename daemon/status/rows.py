"""Reading the state store for `memd status`: SQLite with the standard library, PostgreSQL through SQLAlchemy.

The default SQLite store is opened read-only with ``sqlite3`` (no SQLAlchemy, no migration, no
write, and a missing file is reported, not created); a PostgreSQL store goes through
SQLAlchemy, imported only then. Both answer the same SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol


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
            self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0)
            self._conn.row_factory = sqlite3.Row
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open {path}: {exc}") from None

    def all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return [dict(r) for r in self._conn.execute(sql, dict(params or {})).fetchall()]

    def time(self, value: datetime) -> Any:
        # The format SQLAlchemy stores UTC datetimes in on SQLite (naive, UTC).
        return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")

    def close(self) -> None:
        self._conn.close()


class PostgresRows:
    """PostgreSQL through SQLAlchemy (asyncpg), driven from this synchronous reader."""

    def __init__(self, url: str, *, pg_schema: str | None = None) -> None:
        import asyncio

        from pipeline.store.engine import create_engine_for, describe_url

        self._loop = asyncio.new_event_loop()
        self._engine = create_engine_for(url, pg_schema=pg_schema)
        try:
            self._conn: Any = self._loop.run_until_complete(self._engine.connect())
        except Exception as exc:
            self._loop.run_until_complete(self._engine.dispose())
            self._loop.close()
            raise StoreUnavailable(f"cannot reach {describe_url(url)}: {exc}") from None

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
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    if scheme == "sqlite":
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path or path == ":memory:":
            raise StoreUnavailable(f"cannot read the state store {url}")
        return SqliteRows(Path(path.split("?", 1)[0]).expanduser())
    return PostgresRows(url, pg_schema=pg_schema)


def describe(url: str) -> str:
    """The store URL with any password hidden, without importing SQLAlchemy."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else url
