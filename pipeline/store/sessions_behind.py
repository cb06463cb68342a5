"""The sessions behind a memory, as the state store knows them: each one's agent, project and dates
(every machine's, on a team's store), for ``memd memories why``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from pipeline.store.engine import Store
from pipeline.store.schema import transcripts as t

BATCH = 500


@dataclass(frozen=True)
class SessionBehind:
    session_id: str
    source: str
    project: str | None
    started_at: datetime | None
    last_activity: datetime | None
    machine: str


async def sessions_behind(store: Store, session_ids: Iterable[str]) -> dict[str, SessionBehind]:
    """Session id -> its transcript's row (the most recently active one when several machines have it)."""
    wanted = sorted(set(session_ids))
    found: dict[str, SessionBehind] = {}
    async with store.read() as conn:
        for i in range(0, len(wanted), BATCH):
            rows = (
                await conn.execute(
                    select(
                        t.c.session_id,
                        t.c.source,
                        t.c.project,
                        t.c.started_at,
                        t.c.last_activity,
                        t.c.machine,
                    )
                    .where(t.c.session_id.in_(wanted[i : i + BATCH]))
                    .order_by(t.c.last_activity.is_(None), t.c.last_activity)
                )
            ).all()
            for r in rows:
                found[r.session_id] = SessionBehind(
                    r.session_id, r.source, r.project, r.started_at, r.last_activity, r.machine
                )
    return found
