"""`memd status` lists the topics agents flagged wrong or stale (`memd mcp`'s memory_feedback) until a
consolidation was given them; helped and misled are not listed."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from daemon.config import load_settings
from pipeline.clock import FakeClock
from pipeline.store import Store, open_store
from pipeline.store import notes as db
from tests.daemon.cli.test_status import beat, memd_env, status
from tests.pipeline.status.test_read import populate_usage, read_report

SCOPE = "projects/acme-1a2b3c4d"


async def flag_some(store: Store, clock: FakeClock) -> None:
    for file, verdict, note in (
        ("deploy.md", "wrong", "it is make ship now"),
        ("deploy.md", "helped", None),
        ("ci.md", "stale", None),
        ("ci.md", "misled", "old runner"),
        ("old.md", "wrong", None),
    ):
        await db.add_feedback(
            store, scope=SCOPE, file=file, verdict=verdict, note=note, session="s", now=clock.now()
        )
        clock.advance(timedelta(minutes=1))
    [*_, old] = await db.open_flags(store, SCOPE)
    await db.take(store, run_id="r1", notes=[], flags=[old.id], now=clock.now())


async def test_the_open_flags_are_read_newest_first(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    await flag_some(store, clock)
    report = await read_report(store, clock, tmp_path)
    assert [(f["id"], f["verdict"], f["note"]) for f in report["flagged"]] == [
        (f"{SCOPE}/ci.md", "stale", None),
        (f"{SCOPE}/deploy.md", "wrong", "it is make ship now"),
    ]


async def test_the_terminal_shows_the_flagged_topics(tmp_path: Path) -> None:
    env = memd_env(tmp_path)
    await beat(env, age=timedelta(seconds=3), pid=1)
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db)
    try:
        await flag_some(store, FakeClock(datetime.now(UTC)))
    finally:
        await store.close()
    done = status(env)
    assert "flagged by agents" in done.stdout, done.stderr
    rows = [re.split(r"\s{2,}", line.strip()) for line in done.stdout.splitlines()]
    assert [f"{SCOPE}/deploy.md", "wrong"] in [row[:2] for row in rows]
    assert [f"{SCOPE}/old.md", "wrong"] not in [row[:2] for row in rows]


async def test_helped_and_misled_are_counted_beside_each_scopes_hit_rate(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    shop = await populate_usage(store, clock)
    for scope, file, verdict, age in (
        (shop, "a.md", "helped", 1),
        (shop, "a.md", "helped", 2),
        (shop, "b.md", "misled", 3),
        (shop, "b.md", "wrong", 3),  # a flag: listed as flagged, not counted here
        (shop, "a.md", "helped", 40),  # outside the window
        ("global", "g.md", "misled", 1),
    ):
        await db.add_feedback(
            store,
            scope=scope,
            file=file,
            verdict=verdict,
            note=None,
            session="s",
            now=clock.now() - timedelta(days=age),
        )
    by_scope = {s["scope"]: s for s in (await read_report(store, clock, tmp_path))["usage"]["scopes"]}
    assert (by_scope[shop]["hit_rate"], by_scope[shop]["helped"], by_scope[shop]["misled"]) == (0.333, 2, 1)
    assert (by_scope["global"]["helped"], by_scope["global"]["misled"]) == (0, 1)


async def test_a_topics_uses_and_verdicts_are_read_for_its_page(store: Store, clock: FakeClock) -> None:
    """What the web page's topic page reads (``daemon.ui.data.topic_use``), on either store."""
    from daemon.ui.data import TopicUse, topic_use
    from pipeline.store.read import rows as status_rows
    from tests.pipeline.status.test_read import current_schema

    shop = await populate_usage(store, clock)
    for verdict, age in (("helped", 1), ("misled", 2), ("misled", 3), ("stale", 1), ("helped", 31)):
        await db.add_feedback(
            store,
            scope=shop,
            file="a.md",
            verdict=verdict,
            note=None,
            session="s",
            now=clock.now() - timedelta(days=age),
        )
    schema = await current_schema(store)

    def read() -> tuple[TopicUse, TopicUse]:
        rows = status_rows.open_rows(store.url, pg_schema=schema)
        try:
            return topic_use(rows, shop, "a.md", clock.now()), topic_use(rows, shop, "none.md", clock.now())
        finally:
            rows.close()

    used, unused = await asyncio.to_thread(read)
    day = timedelta(days=1)
    assert (used.uses, used.helped, used.misled) == (1, 1, 2)
    assert used.last_used_at == (clock.now() - day).isoformat()
    assert (unused.uses, unused.last_used_at, unused.helped, unused.misled) == (0, None, 0, 0)
