"""Named leases: who holds a scope's consolidation, or the instance, with an owner token and an expiry.

A lease is taken over when it has expired, or at once when ``owner_gone`` says its holder is dead
(its process is gone on this machine, or the instance lock it held is free). Each lease names the
machine of its holder (``pipeline.machine``): a pid means something only on that machine, so the
holder on another machine sharing the store keeps its lease until it expires (``on_this_machine``).
Renewal and release are fenced by the owner token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update

from pipeline.errors import LeaseLost
from pipeline.store.engine import Store
from pipeline.store.read.rows import on_store
from pipeline.store.read.runs import Holder as Holder
from pipeline.store.read.runs import holders as read_holders
from pipeline.store.schema import leases


@dataclass(frozen=True)
class Acquired:
    name: str
    owner: str
    took_over: Holder | None = None


def _holder(row: object) -> Holder:
    return Holder(
        name=row.name,  # type: ignore[attr-defined]
        owner=row.owner,  # type: ignore[attr-defined]
        host=row.host,  # type: ignore[attr-defined]
        pid=row.pid,  # type: ignore[attr-defined]
        acquired_at=row.acquired_at,  # type: ignore[attr-defined]
        heartbeat_at=row.heartbeat_at,  # type: ignore[attr-defined]
        expires_at=row.expires_at,  # type: ignore[attr-defined]
        machine=row.machine,  # type: ignore[attr-defined]
    )


async def acquire(
    store: Store,
    name: str,
    *,
    owner: str,
    host: str,
    pid: int,
    now: datetime,
    ttl: timedelta,
    owner_gone: Callable[[Holder], bool] = lambda _h: False,
) -> Acquired | Holder:
    """Take lease ``name`` for ``owner`` (a process of ``store.machine``). Returns ``Acquired``, or
    the live ``Holder`` that keeps it."""
    values = {
        "name": name,
        "owner": owner,
        "host": host,
        "pid": pid,
        "machine": store.machine,
        "acquired_at": now,
        "heartbeat_at": now,
        "expires_at": now + ttl,
    }
    async with store.write() as conn:
        await conn.execute(
            store.insert(leases).values(**values).on_conflict_do_nothing(index_elements=[leases.c.name])
        )
        row = (await conn.execute(select(leases).where(leases.c.name == name).with_for_update())).first()
        assert row is not None
        current = _holder(row)
        if current.owner == owner and current.acquired_at == now:
            return Acquired(name, owner)
        if current.owner != owner and current.expires_at > now and not owner_gone(current):
            return current
        await conn.execute(update(leases).where(leases.c.name == name).values(**values))
    return Acquired(name, owner, took_over=None if current.owner == owner else current)


async def renew(store: Store, name: str, *, owner: str, now: datetime, ttl: timedelta) -> None:
    stmt = (
        update(leases)
        .where(leases.c.name == name, leases.c.owner == owner)
        .values(heartbeat_at=now, expires_at=now + ttl)
    )
    async with store.write() as conn:
        result = await conn.execute(stmt)
    if result.rowcount != 1:
        raise LeaseLost(f"lease {name} is no longer held by {owner}")


async def release(store: Store, name: str, *, owner: str) -> bool:
    async with store.write() as conn:
        result = await conn.execute(delete(leases).where(leases.c.name == name, leases.c.owner == owner))
    return bool(result.rowcount)


async def release_all(store: Store, *, owner: str) -> int:
    async with store.write() as conn:
        result = await conn.execute(delete(leases).where(leases.c.owner == owner))
    return int(result.rowcount)


async def holders(store: Store) -> list[Holder]:
    return await on_store(store, read_holders)
