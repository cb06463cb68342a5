"""Queries of the publishing step: where each scope was published, and what it knows of projects."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select

from pipeline.store.engine import Store
from pipeline.store.schema import publications, scopes, transcripts


@dataclass(frozen=True)
class Publication:
    target: str
    scope: str
    path: str
    content_sha256: str | None
    published_at: datetime | None
    outcome: str
    reason: str | None
    republished_at: datetime | None = None
    """When memd last published again after someone else changed what it had published there."""
    republish_reason: str | None = None


async def load_publications(store: Store) -> list[Publication]:
    """This machine's publications (each machine publishes into its own homes)."""
    stmt = (
        select(publications)
        .where(publications.c.machine == store.machine)
        .order_by(publications.c.target, publications.c.scope)
    )
    async with store.read() as conn:
        rows = (await conn.execute(stmt)).all()
    return [
        Publication(
            target=r.target,
            scope=r.scope,
            path=r.path,
            content_sha256=r.content_sha256,
            published_at=r.published_at,
            outcome=r.outcome,
            reason=r.reason,
            republished_at=r.republished_at,
            republish_reason=r.republish_reason,
        )
        for r in rows
    ]


async def save_publications(store: Store, rows: Iterable[Publication]) -> None:
    """Upsert one row per (target, scope) of this machine."""
    async with store.write() as conn:
        for row in rows:
            values = {
                "machine": store.machine,
                "target": row.target,
                "scope": row.scope,
                "path": row.path,
                "content_sha256": row.content_sha256,
                "published_at": row.published_at,
                "outcome": row.outcome,
                "reason": row.reason,
                "republished_at": row.republished_at,
                "republish_reason": row.republish_reason,
            }
            stmt = store.insert(publications).values(**values)
            stmt = stmt.on_conflict_do_update(
                index_elements=[publications.c.machine, publications.c.target, publications.c.scope],
                set_={k: v for k, v in values.items() if k not in {"machine", "target", "scope"}},
            )
            await conn.execute(stmt)


async def drop_publications(store: Store, keys: Iterable[tuple[str, str]]) -> None:
    async with store.write() as conn:
        for target, scope in keys:
            await conn.execute(
                delete(publications).where(
                    publications.c.machine == store.machine,
                    publications.c.target == target,
                    publications.c.scope == scope,
                )
            )


async def scope_projects(store: Store) -> dict[str, str]:
    """Scope key -> the project path recorded for it (``scopes.project``)."""
    async with store.read() as conn:
        rows = (
            await conn.execute(select(scopes.c.key, scopes.c.project).where(scopes.c.project.is_not(None)))
        ).all()
    return {r.key: r.project for r in rows}


async def known_projects(store: Store) -> list[str]:
    """Every project path the store knows: recorded for a scope, or of a session."""
    return sorted(set((await scope_projects(store)).values()) | set(await project_activity(store)))


async def project_activity(store: Store) -> dict[str, datetime]:
    """Project path -> the last activity of any of its sessions."""
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(transcripts.c.project, func.max(transcripts.c.last_activity))
                .where(transcripts.c.project.is_not(None), transcripts.c.last_activity.is_not(None))
                .group_by(transcripts.c.project)
            )
        ).all()
    return {r[0]: r[1] for r in rows if r[1] is not None}
