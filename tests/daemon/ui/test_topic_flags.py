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


def test_a_topic_resting_on_tool_output_says_so_on_its_page(fresh: Prepared, open_page: Opener) -> None:
    _, client = open_page(fresh)
    params = {"scope": fresh.acme, "file": "testing.md"}
    assert 'id="from-tools"' not in client.get("/memory/topic", params=params).text
    path = fresh.settings.paths.memory_dir.joinpath(*fresh.acme.split("/"), "testing.md")
    text = path.read_text()
    path.write_text(text.replace("\n---\n", "\nevidence: tool\n---\n", 1))
    html = client.get("/memory/topic", params=params).text
    assert 'id="from-tools"' in html
    assert "from tool output only" in html.split('id="from-tools"', 1)[1]


def test_helped_and_misled_show_beside_the_hit_rate_and_on_the_topic_page(
    fresh: Prepared, open_page: Opener
) -> None:
    _, client = open_page(fresh)
    params = {"scope": fresh.acme, "file": "testing.md"}
    for verdict in ("helped", "helped", "misled", "wrong"):
        asyncio.run(_flag(fresh, verdict, ""))
    use = client.get("/memory/topic", params=params).text.split('id="topic-use"', 1)[1].split("</p>", 1)[0]
    assert "2 helped, 1 misled" in use
    usage = client.get("/usage").text
    [row] = [r for r in usage.split("<tr>") if fresh.acme in r and "hit rate" not in r]
    assert '<td class="n helped">2</td>' in row
    assert '<td class="n misled">1</td>' in row
