"""Stored values as the read side sees them on either backend: times, JSON columns, the read-only SQLite connection, a SQL ``IN`` list of vocabulary values."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.clock import parse_time


def connect_sqlite(path: Path, *, timeout: float = 2.0) -> sqlite3.Connection:
    """The store file opened read-only (WAL lets it read beside the daemon's writes; a missing
    file is an error, never created)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)


def in_list(values: frozenset[str] | tuple[str, ...]) -> str:
    """A SQL ``IN`` list of vocabulary values (fixed strings, never user input)."""
    return ", ".join(f"'{v}'" for v in sorted(values))


def sqlite_time(value: datetime) -> str:
    """A moment as SQLAlchemy stores a UTC datetime on SQLite (naive UTC text), to compare with
    what is stored."""
    return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def iso(value: Any) -> str | None:
    moment = parse_time(value)
    return moment.isoformat() if moment else None


def json_value(value: Any) -> Any:
    """A JSON column: SQLite hands back its text, PostgreSQL the decoded value."""
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
