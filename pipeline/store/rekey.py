"""Moving a project's records to a new scope key (``pipeline.projects.rekey``): which scope each
project's extracts are recorded under, and the move of the extracts with the scope's record, runs,
publications, memory uses, and the notes and verdicts agents handed memd (``pipeline.store.notes``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update

from pipeline.store.engine import Store
from pipeline.store.schema import (
    consolidation_runs,
    memory_feedback,
    memory_notes,
    memory_uses,
    publications,
    scopes,
    stage1_outputs,
)


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
        await conn.execute(  # the notes agents handed memd about the project (`memd mcp`)
            update(memory_notes)
            .where(memory_notes.c.scope == old, memory_notes.c.project == project)
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
        await conn.execute(update(memory_uses).where(memory_uses.c.scope == old).values(scope=new))
        await conn.execute(update(memory_feedback).where(memory_feedback.c.scope == old).values(scope=new))
