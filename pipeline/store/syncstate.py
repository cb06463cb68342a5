"""What sync needs of the state store: which sessions are this machine's, marking a merged scope
for a new consolidation, and moving a scope to a new key (``pipeline.consolidate.rekey``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update

from pipeline.memory.layout import GLOBAL_SCOPE
from pipeline.store.engine import Store
from pipeline.store.schema import (
    consolidation_runs,
    memory_uses,
    publications,
    scope_snapshots,
    scopes,
    stage1_outputs,
)


async def known_sessions(store: Store, scope: str) -> set[str]:
    """Every session this machine has (or had: forgotten, expired) an extract of in ``scope``; for
    global, every session (each may feed it)."""
    stmt = select(stage1_outputs.c.session_id).distinct()
    if scope != GLOBAL_SCOPE:
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
    in them (the scope needs a run, cooldown or not), and the run's diff starts at ``commit``."""
    values: dict[str, Any] = {
        "watermark": {"inputs": [], "landed": []},
        "last_commit": commit,
        "retry_at": None,
    }
    stmt = store.insert(scopes).values(key=scope, updated_at=now, **values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[scopes.c.key], set_={**values, "last_success_at": None, "updated_at": now}
    )
    async with store.write() as conn:
        await conn.execute(stmt)


async def project_scopes(store: Store) -> list[tuple[str, str]]:
    """``(project, scope)`` of every project's extracts, as recorded."""
    stmt = (
        select(stage1_outputs.c.project, stage1_outputs.c.scope)
        .where(stage1_outputs.c.project.is_not(None))
        .distinct()
    )
    async with store.read() as conn:
        return [(str(p), str(s)) for p, s in (await conn.execute(stmt)).all()]


async def rename_scope(
    store: Store, *, project: str, old: str, new: str, merged: bool, now: datetime
) -> None:
    """Move ``project``'s extracts from scope ``old`` to ``new``, with the scope's record, runs,
    publications and memory uses; ``merged``: ``new`` already had memory, so it needs a new run."""
    async with store.write() as conn:
        had = (await conn.execute(select(stage1_outputs.c.id).where(stage1_outputs.c.scope == old))).first()
        if had is None:
            return  # moved already (another machine sharing the store): only a folder was left to move
        await conn.execute(
            update(stage1_outputs)
            .where(stage1_outputs.c.scope == old, stage1_outputs.c.project == project)
            .values(scope=new)
        )
        left = (await conn.execute(select(stage1_outputs.c.id).where(stage1_outputs.c.scope == old))).first()
        if left is not None:
            return  # another project still has extracts under the old key
        has_new = (await conn.execute(select(scopes.c.key).where(scopes.c.key == new))).first() is not None
        if has_new or merged:
            await conn.execute(delete(scopes).where(scopes.c.key == old))
            await conn.execute(
                update(scopes)
                .where(scopes.c.key == new)
                .values(watermark={"inputs": [], "landed": []}, last_success_at=None, updated_at=now)
            )
        else:
            await conn.execute(update(scopes).where(scopes.c.key == old).values(key=new, updated_at=now))
        await conn.execute(
            update(consolidation_runs).where(consolidation_runs.c.scope == old).values(scope=new)
        )
        taken = (
            await conn.execute(
                select(publications.c.machine, publications.c.target).where(publications.c.scope == new)
            )
        ).all()
        for machine, target in taken:  # each machine's copy under the new key wins over the old one
            await conn.execute(
                delete(publications).where(
                    publications.c.scope == old,
                    publications.c.machine == machine,
                    publications.c.target == target,
                )
            )
        await conn.execute(update(publications).where(publications.c.scope == old).values(scope=new))
        has_snapshot = (
            await conn.execute(select(scope_snapshots.c.scope).where(scope_snapshots.c.scope == new))
        ).first() is not None
        if has_snapshot or has_new or merged:
            await conn.execute(delete(scope_snapshots).where(scope_snapshots.c.scope == old))
        else:
            await conn.execute(
                update(scope_snapshots).where(scope_snapshots.c.scope == old).values(scope=new)
            )
        await conn.execute(update(memory_uses).where(memory_uses.c.scope == old).values(scope=new))
