"""Small named facts (the rate-limit gate, the last scan, publish notes), JSON values."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from pipeline.store.engine import Store
from pipeline.store.schema import kv


async def put(store: Store, key: str, value: Any, *, now: datetime) -> None:
    stmt = store.insert(kv).values(key=key, value=value, updated_at=now)
    stmt = stmt.on_conflict_do_update(index_elements=[kv.c.key], set_={"value": value, "updated_at": now})
    async with store.write() as conn:
        await conn.execute(stmt)


async def get(store: Store, key: str, default: Any = None) -> Any:
    async with store.read() as conn:
        row = (await conn.execute(select(kv.c.value).where(kv.c.key == key))).first()
    return default if row is None else row[0]


async def get_with_time(store: Store, key: str) -> tuple[Any, datetime] | None:
    async with store.read() as conn:
        row = (await conn.execute(select(kv.c.value, kv.c.updated_at).where(kv.c.key == key))).first()
    return None if row is None else (row[0], row[1])


async def with_prefix(store: Store, prefix: str, *, limit: int = 1000) -> dict[str, Any]:
    """key -> value of the facts whose key starts with ``prefix`` (at most ``limit``)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query = select(kv.c.key, kv.c.value).where(kv.c.key.like(f"{escaped}%", escape="\\")).limit(limit)
    async with store.read() as conn:
        return {row[0]: row[1] for row in (await conn.execute(query)).all()}
