"""A topic's page shows what agents flagged on it (wrong, stale) until a consolidation was given it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from pipeline.store import notes as db
from pipeline.store import open_store
from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import Prepared


async def _flag(prepared: Prepared, verdict: str, note: str) -> None:
    store = await open_store(prepared.settings.paths.state_db)
    try:
        await db.add_feedback(
            store,
            scope=prepared.acme,
            file="testing.md",
            verdict=verdict,
            note=note,
            session="mcp",
            now=datetime.now(UTC),
        )
    finally:
        await store.close()


def test_the_topic_page_shows_its_open_flags_escaped(fresh: Prepared, open_page: Opener) -> None:
    _, client = open_page(fresh)
    params = {"scope": fresh.acme, "file": "testing.md"}
    assert 'id="topic-flags"' not in client.get("/memory/topic", params=params).text
    asyncio.run(_flag(fresh, "helped", "fine"))
    asyncio.run(_flag(fresh, "stale", "it is <b>tox</b> now"))
    html = client.get("/memory/topic", params=params).text
    block = html.split('id="topic-flags"', 1)[1].split("</section>", 1)[0]
    assert "stale (" in block
    assert "it is &lt;b&gt;tox&lt;/b&gt; now" in block
    assert "helped" not in block
