"""Queries of usage tracking: which memd memories later sessions read, and the extracts behind them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, insert, literal, select, update

from pipeline.store.engine import Store
from pipeline.store.schema import UTCDateTime, memory_uses, stage1_outputs, transcripts


@dataclass(frozen=True)
class Use:
    scope: str
    file: str
    used_at: datetime
    sources: tuple[str, ...] = ()
    """Session ids of the extracts the memory came from (their use counts are bumped)."""


async def transcript_project(store: Store, transcript_id: int) -> str | None:
    async with store.read() as conn:
        row = (
            await conn.execute(select(transcripts.c.project).where(transcripts.c.id == transcript_id))
        ).first()
    return None if row is None else row[0]


def _session_ids(sources: Iterable[str]) -> list[str]:
    """Each source as written, and without a ``<source>:`` prefix when it has one."""
    ids: set[str] = set()
    for source in sources:
        ids.add(source)
        if ":" in source:
            ids.add(source.split(":", 1)[1])
    return sorted(ids)


async def record_uses(store: Store, transcript_id: int | None, uses: Sequence[Use]) -> int:
    """Record each (scope, file) once per transcript; bump the extracts behind newly recorded ones.

    Returns how many uses were new. Recording the same transcript again adds nothing. A use with no
    transcript (``None``: a topic `memd mcp` handed an agent mid-session, whose session is not known
    to the server) is recorded every time.
    """
    async with store.write() as conn:
        seen = (
            set()
            if transcript_id is None
            else {
                (r.scope, r.file)
                for r in (
                    await conn.execute(
                        select(memory_uses.c.scope, memory_uses.c.file).where(
                            memory_uses.c.transcript_id == transcript_id
                        )
                    )
                ).all()
            }
        )
        new: list[Use] = []
        for use in sorted(uses, key=lambda u: u.used_at):
            if (use.scope, use.file) not in seen:
                seen.add((use.scope, use.file))
                new.append(use)
        for use in new:
            await conn.execute(
                insert(memory_uses).values(
                    scope=use.scope, file=use.file, transcript_id=transcript_id, used_at=use.used_at
                )
            )
            ids = _session_ids(use.sources)
            if not ids:
                continue
            last = stage1_outputs.c.last_used_at
            when = literal(use.used_at, UTCDateTime())
            await conn.execute(
                update(stage1_outputs)
                .where(stage1_outputs.c.session_id.in_(ids), stage1_outputs.c.superseded_by.is_(None))
                .values(
                    use_count=stage1_outputs.c.use_count + 1,
                    last_used_at=case((last.is_(None) | (last < when), when), else_=last),
                )
            )
    return len(new)
