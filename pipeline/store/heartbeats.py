"""The running daemon's heartbeat row, so `memd status` can tell a live daemon from a dead one.

One row per daemon instance (keyed by its owner token), naming its machine: every machine sharing
a store beats in it, and `memd status` lists them all. A running daemon updates ``beat_at``
every few seconds with a small JSON status; a clean stop sets ``stopped_at``; a daemon found dead
by its successor is marked stopped with the state ``crashed``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import delete, update

from pipeline.store.engine import Store
from pipeline.store.read.rows import on_store
from pipeline.store.read.runs import Heartbeat as Heartbeat
from pipeline.store.read.runs import newest_heartbeats
from pipeline.store.schema import heartbeats


def _status_text(status: dict[str, Any]) -> str:
    return json.dumps(status, sort_keys=True, default=str)


async def beat(
    store: Store,
    *,
    instance: str,
    host: str,
    pid: int,
    version: str,
    started_at: datetime,
    now: datetime,
    status: dict[str, Any],
) -> None:
    """Insert or refresh ``instance``'s row."""
    values = {
        "instance": instance,
        "host": host,
        "pid": pid,
        "version": version,
        "started_at": started_at,
        "beat_at": now,
        "status": _status_text(status),
        "stopped_at": None,
        "machine": store.machine,
    }
    stmt = store.insert(heartbeats).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[heartbeats.c.instance],
        set_={"beat_at": now, "status": values["status"], "stopped_at": None},
    )
    async with store.write() as conn:
        await conn.execute(stmt)


async def stopped(store: Store, *, instance: str, now: datetime, status: dict[str, Any]) -> None:
    """Record that ``instance`` stopped (cleanly, or found dead by its successor)."""
    stmt = (
        update(heartbeats)
        .where(heartbeats.c.instance == instance, heartbeats.c.stopped_at.is_(None))
        .values(stopped_at=now, status=_status_text(status))
    )
    async with store.write() as conn:
        await conn.execute(stmt)


async def prune(store: Store, *, before: datetime) -> int:
    """Forget instances that stopped before ``before``."""
    stmt = delete(heartbeats).where(heartbeats.c.stopped_at.is_not(None), heartbeats.c.stopped_at < before)
    async with store.write() as conn:
        result = await conn.execute(stmt)
    return int(result.rowcount)


async def latest(store: Store) -> Heartbeat | None:
    """The most recent heartbeat of any instance."""
    newest = await on_store(store, newest_heartbeats)
    return newest[0] if newest else None
