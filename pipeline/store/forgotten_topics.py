"""The topics a person forgot one by one (``memd memories forget``), per scope, so phase 2 keeps them
forgotten: ``kv["forgotten_topics:<scope>"]`` (``global``'s this machine's own on a team's store), a list of ``ForgottenTopic`` records (a file, its name
and description, and the hashed shingles of its body, never its text: ``pipeline.memory.likeness``,
which the caller hands in as ``read``, its reader of one stored record; the store keeps their JSON)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import select, update

from pipeline.store.consolidation import scope_key
from pipeline.store.engine import Store
from pipeline.store.schema import kv, scopes


class Forgotten(Protocol):
    """A forgotten topic as the store keeps it: its scope, its file, and its record as JSON."""

    @property
    def scope(self) -> str: ...

    @property
    def file(self) -> str: ...

    def as_json(self) -> dict[str, Any]: ...


T = TypeVar("T", bound=Forgotten)

PREFIX = "forgotten_topics:"
KEY_MAX = 200


def key_of(store: Store, scope: str) -> str:
    """The kv key of ``scope``'s list: on a team's shared store, ``global`` is this machine's own
    (``scope_key``), since every person has their own ``global/``."""
    key = f"{PREFIX}{scope_key(store, scope)}"
    if len(key) <= KEY_MAX:
        return key
    return f"{PREFIX}sha256:{hashlib.sha256(key.encode()).hexdigest()}"


async def of_scope(store: Store, scope: str, read: Callable[[object], T | None]) -> list[T]:
    """What was forgotten of ``scope``, oldest first (each stored record read by ``read``)."""
    async with store.read() as conn:
        row = (await conn.execute(select(kv.c.value).where(kv.c.key == key_of(store, scope)))).first()
    values = row[0] if row is not None and isinstance(row[0], list) else []
    return [t for t in (read(v) for v in values) if t is not None and t.scope == scope]


async def record(store: Store, topic: T, read: Callable[[object], T | None], *, now: datetime) -> T | None:
    """Add ``topic`` to its scope's list (a record of the same file is replaced: returned, read by
    ``read``, for ``take_back``)."""
    replaced: list[T | None] = [None]

    def put(values: list[object]) -> list[object]:
        for v in values:
            if isinstance(v, dict) and v.get("file") == topic.file:
                replaced[0] = read(v)
        return [*_without(values, topic.file), topic.as_json()]

    await _change(store, topic.scope, put, now=now)
    return replaced[0]


async def take_back(store: Store, topic: Forgotten, replaced: Forgotten | None, *, now: datetime) -> None:
    """Undo ``record(topic)`` when the forget did not land: its record goes, and the one it replaced
    (``record``'s answer) comes back; a forget that changed nothing leaves nothing behind."""

    def put(values: list[object]) -> list[object]:
        kept = _without(values, topic.file)
        return [*kept, replaced.as_json()] if replaced is not None else kept

    await _change(store, topic.scope, put, now=now)


def _without(values: list[object], file: str) -> list[object]:
    return [v for v in values if not (isinstance(v, dict) and v.get("file") == file)]


async def _change(
    store: Store, scope: str, put: Callable[[list[object]], list[object]], *, now: datetime
) -> None:
    key = key_of(store, scope)
    async with store.write() as conn:
        row = (await conn.execute(select(kv.c.value).where(kv.c.key == key))).first()
        values = row[0] if row is not None and isinstance(row[0], list) else []
        value = put(list(values))
        stmt = store.insert(kv).values(key=key, value=value, updated_at=now)
        stmt = stmt.on_conflict_do_update(index_elements=[kv.c.key], set_={"value": value, "updated_at": now})
        await conn.execute(stmt)


async def mark_rebuild(store: Store, scope: str, *, now: datetime) -> bool:
    """After a forget: the scope's next run comes without waiting for new inputs or the cooldown, so
    the digest is written again without what was forgotten (False: memd never consolidated the scope
    here, nothing to mark)."""
    key = scope_key(store, scope)
    async with store.write() as conn:
        row = (await conn.execute(select(scopes.c.watermark).where(scopes.c.key == key))).first()
        if row is None:
            return False
        watermark = dict(row[0]) if isinstance(row[0], dict) else {}
        watermark["rebuild"] = True
        await conn.execute(
            update(scopes).where(scopes.c.key == key).values(watermark=watermark, updated_at=now)
        )
    return True
