"""`memd status` lists the topics agents flagged wrong or stale (`memd mcp`'s memory_feedback) until a
consolidation was given them; helped and misled are not listed."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from daemon.config import load_settings
from pipeline.clock import FakeClock
from pipeline.store import Store, open_store
from pipeline.store import notes as db
from tests.daemon.cli.test_status import beat, memd_env, status
from tests.daemon.status.test_read import read_report

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
