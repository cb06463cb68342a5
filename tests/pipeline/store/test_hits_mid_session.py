"""A use `memd mcp` records mid-session has no transcript: recorded every time, bumping the extracts
behind the topic, and read back as the topic's use count (on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from pipeline.store import Store
from pipeline.store.hits import Use, record_uses
from pipeline.store.read.rows import on_store
from pipeline.store.read.uses import topic_uses
from pipeline.store.schema import memory_uses, stage1_outputs
from tests.pipeline.publish.support import add_transcript

AT = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


async def test_uses_without_a_transcript_add_up_and_bump_their_sources(store: Store) -> None:
    origin = await add_transcript(store, project="/p", last_activity=AT, session_id="sess-A")
    async with store.write() as conn:
        await conn.execute(
            stage1_outputs.insert().values(
                transcript_id=origin,
                source="claude_code",
                session_id="sess-A",
                scope="x",
                range_start=0,
                range_end=1,
                rollout_slug="s",
                rollout_summary="s",
                raw_memory="r",
                memories=[],
                model="m",
                usage={},
                created_at=AT - timedelta(days=5),
            )
        )
    use = Use(scope="global", file="prefs.md", used_at=AT, sources=("claude-code:sess-A",))
    assert await record_uses(store, None, [use]) == 1
    assert (
        await record_uses(
            store, None, [Use(scope="global", file="prefs.md", used_at=AT + timedelta(seconds=1))]
        )
        == 1
    )
    async with store.read() as conn:
        rows = (await conn.execute(select(memory_uses.c.file, memory_uses.c.transcript_id))).all()
        counts = (await conn.execute(select(stage1_outputs.c.use_count))).scalars().all()
    assert sorted(rows) == [("prefs.md", None), ("prefs.md", None)]
    assert counts == [1]
    since = AT - timedelta(days=1)
    assert await on_store(store, lambda rows: topic_uses(rows, since)) == [("global", "prefs.md", 2)]
