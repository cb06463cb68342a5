"""Team mode: each scope's folder as the last run that landed it left it, and which of those this
machine's memory repository has taken over (``pipeline.team.adopt``).

Machines sharing a store share its scopes' watermarks, so a scope one machine consolidated is up
to date for all of them: the others take its folder from here instead of paying the model again.
What this machine took over (or refused, and why) is ``kv["team.adopted:<machine>:<scope>"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from pipeline.store.engine import Store
from pipeline.store.schema import kv, scope_snapshots

ADOPTED_PREFIX = "team.adopted:"


@dataclass(frozen=True)
class Snapshot:
    scope: str
    run_id: str
    machine: str
    host: str
    at: datetime
    files: dict[str, str]
    """Every file of the scope folder, by its path relative to the scope (empty: the scope was cleared)."""


@dataclass(frozen=True)
class Adopted:
    run_id: str
    refused: str | None = None


def _adopted_key(machine: str, scope: str) -> str:
    return f"{ADOPTED_PREFIX}{machine}:{scope}"


async def save(
    store: Store, scope: str, *, run_id: str, host: str, files: dict[str, str], now: datetime
) -> None:
    """Record the folder ``run_id`` of this machine landed for ``scope`` (replacing the last one).
    Only a store other machines may share keeps it: a SQLite store's memory is its one machine's."""
    if not store.shared:
        return
    values: dict[str, Any] = {
        "scope": scope,
        "run_id": run_id,
        "machine": store.machine,
        "host": host,
        "files": files,
        "at": now,
    }
    stmt = store.insert(scope_snapshots).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[scope_snapshots.c.scope], set_={k: v for k, v in values.items() if k != "scope"}
    )
    async with store.write() as conn:
        await conn.execute(stmt)


async def get(store: Store, scope: str) -> Snapshot | None:
    async with store.read() as conn:
        row = (await conn.execute(select(scope_snapshots).where(scope_snapshots.c.scope == scope))).first()
    if row is None:
        return None
    return Snapshot(row.scope, row.run_id, row.machine, row.host, row.at, dict(row.files or {}))


async def adopted(store: Store) -> dict[str, Adopted]:
    """What this machine took over (or refused), by scope."""
    prefix = _adopted_key(store.machine, "")
    async with store.read() as conn:
        rows = (await conn.execute(select(kv.c.key, kv.c.value).where(kv.c.key.startswith(prefix)))).all()
    out: dict[str, Adopted] = {}
    for key, value in rows:
        if isinstance(value, dict) and isinstance(value.get("run_id"), str):
            out[key[len(prefix) :]] = Adopted(value["run_id"], value.get("refused"))
    return out


async def record_adopted(
    store: Store, scope: str, run_id: str, *, now: datetime, refused: str | None = None
) -> None:
    from pipeline.store import kv as kv_store

    await kv_store.put(
        store, _adopted_key(store.machine, scope), {"run_id": run_id, "refused": refused}, now=now
    )


async def to_adopt(store: Store) -> list[str]:
    """The scopes whose last landed run is another machine's, and which this machine has not taken
    over (nor refused) yet."""
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(scope_snapshots.c.scope, scope_snapshots.c.run_id).where(
                    scope_snapshots.c.machine != store.machine
                )
            )
        ).all()
    if not rows:
        return []
    done = await adopted(store)
    return sorted(
        scope for scope, run_id in rows if (seen := done.get(scope)) is None or seen.run_id != run_id
    )
