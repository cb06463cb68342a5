"""What sync needs of the state store: which sessions this store has extracts of, and marking a
merged scope for a new consolidation."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from pipeline.layout import GLOBAL_SCOPE
from pipeline.store.consolidation import scope_key
from pipeline.store.engine import Store
from pipeline.store.schema import scopes, stage1_outputs


async def known_sessions(store: Store, scope: str | None) -> set[str]:
    """Every session this store has (or had: forgotten, expired) an extract of in ``scope``; with
    ``scope`` None, every session of every scope."""
    stmt = select(stage1_outputs.c.session_id).distinct()
    if scope is not None:
        stmt = stmt.where(stage1_outputs.c.scope == scope)
    async with store.read() as conn:
        return set((await conn.execute(stmt)).scalars().all())


async def live_sessions(store: Store) -> set[str]:
    """Sessions with an extract not forgotten yet."""
    stmt = select(stage1_outputs.c.session_id).where(stage1_outputs.c.forgotten_at.is_(None)).distinct()
    async with store.read() as conn:
        return set((await conn.execute(stmt)).scalars().all())


async def mark_merged(store: Store, scope: str, *, commit: str, now: datetime) -> None:
    """A merge took the remote's topic files of ``scope``: none of this machine's inputs is consolidated
    in them (the scope needs a run, cooldown or not, even with no input of this machine's: it is
    rebuilt from the inputs the branch holds), and the run's diff starts at ``commit``."""
    values: dict[str, Any] = {
        "watermark": {"inputs": [], "landed": [], "rebuild": True},
        "last_commit": commit,
        "retry_at": None,
    }
    stmt = store.insert(scopes).values(key=scope_key(store, scope), updated_at=now, **values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[scopes.c.key], set_={**values, "last_success_at": None, "updated_at": now}
    )
    async with store.write() as conn:
        await conn.execute(stmt)


async def drop_from_watermarks(store: Store, session_id: str, *, now: datetime) -> None:
    """The extracts of ``session_id`` leave every scope's watermark (consumed and landed): a merged
    tombstone already took their inputs and what they taught out of the memory, so their being
    forgotten here is no change for phase 2 to consolidate again."""
    async with store.read() as conn:
        ids = set(
            (await conn.execute(select(stage1_outputs.c.id).where(stage1_outputs.c.session_id == session_id)))
            .scalars()
            .all()
        )
        rows = (await conn.execute(select(scopes.c.key, scopes.c.watermark))).all()
    if not ids:
        return
    for key, watermark in rows:
        raw = dict(watermark or {})
        consumed = [int(i) for i in raw.get("inputs", [])]
        landed = [int(i) for i in raw.get("landed", consumed)]
        if not ids & (set(consumed) | set(landed)):
            continue
        raw["inputs"] = sorted(set(consumed) - ids)
        raw["landed"] = sorted(set(landed) - ids)
        async with store.write() as conn:
            await conn.execute(
                update(scopes).where(scopes.c.key == key).values(watermark=raw, updated_at=now)
            )


def own_global_key(store: Store) -> str:
    """The key of this machine's own record of ``global`` (its commits never leave this machine)."""
    return scope_key(store, GLOBAL_SCOPE)


async def last_commits(store: Store) -> dict[str, str]:
    """Every scope record's last landed commit, by the record's key."""
    stmt = select(scopes.c.key, scopes.c.last_commit).where(scopes.c.last_commit.is_not(None))
    async with store.read() as conn:
        return {str(k): str(c) for k, c in (await conn.execute(stmt)).all()}


async def relay_commit(store: Store, key: str, *, old: str, new: str, now: datetime) -> None:
    """Record ``key``'s last commit as ``new`` (the commit that carries ``old`` to the other machines),
    unless another run landed for it meanwhile."""
    stmt = (
        update(scopes)
        .where(scopes.c.key == key, scopes.c.last_commit == old)
        .values(last_commit=new, updated_at=now)
    )
    async with store.write() as conn:
        await conn.execute(stmt)
