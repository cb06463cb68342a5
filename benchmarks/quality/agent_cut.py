"""Within every agent's cut, by construction: a scope at its topic cap, published to every target.

A project scope holds ``[memories] max_topic_files`` (100) topics with long descriptions, the three
oldest pinned and five other old ones read by recent sessions (``memory_uses``); the project's own
``AGENTS.md`` already holds 31,000 bytes of the team's rules. memd publishes it to Claude Code, Qwen
Code, Codex and the project's ``AGENTS.md``. Counted from the files written: those over what their
agent loads (``pipeline.publish.targets.limits``), the pinned and the most-used topics listed in
Claude Code's cut index, and what became of the ``AGENTS.md`` memd's block would push past Codex's
32 KiB. The baseline is the same publish with the cut check off and the index cut newest first
(what memd did before): the figures of both are measured here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.quality import Figure
from pipeline.clock import FakeClock
from pipeline.publish import render
from pipeline.publish.run import publish_all
from pipeline.publish.targets import registry
from pipeline.publish.targets.limits import limits
from pipeline.store import open_store
from pipeline.store.hits import Use, record_uses
from tests.pipeline.publish.support import add_scope, add_transcript, make_env, topic_text, write_scope

NAME = "within every agent's cut"
NO_LIVE = "it publishes only; no model is called"
"""Why ``--live`` does not run it: its outcome does not depend on the model."""
PINNED = 3
USED = 5
TEAM_RULES_BYTES = 31_000


@contextmanager
def _as_before() -> Iterator[None]:
    """The baseline: no cut check, the index cut newest first."""
    enforce, keep_first = registry.enforce, render.keep_first
    registry.enforce = lambda plans: None  # type: ignore[assignment]
    render.keep_first = lambda topics: list(range(len(topics)))  # type: ignore[assignment]
    try:
        yield
    finally:
        registry.enforce, render.keep_first = enforce, keep_first


def _topics(count: int) -> dict[str, str]:
    out = {}
    for i in range(count):
        day = datetime(2026, 10, 28, tzinfo=UTC) - timedelta(days=i)
        text = topic_text(
            f"Topic {i}",
            description=f"what topic {i} holds and when to open it " + "d" * 180,
            updated=day.date().isoformat(),
        )
        if i >= count - PINNED:  # the oldest
            text = text.replace("type: project", "type: project\npinned: true")
        out[f"t{i:03d}.md"] = text
    return out


async def _replay(workdir: Path, count: int) -> dict[str, Any]:
    env = make_env(workdir)
    for home in (env.qwen_home, env.codex_home):
        home.mkdir()
    clock = FakeClock(datetime(2026, 11, 1, 12, 0, tzinfo=UTC))
    store = await open_store(f"sqlite:///{workdir / 'state.db'}")
    try:
        project = env.project("app")
        rules = "# The team's rules\n" + "".join(f"- rule {n}: " + "r" * 60 + "\n" for n in range(10_000))
        rules = rules[:TEAM_RULES_BYTES]
        (project / "AGENTS.md").write_text(rules)
        scope = await add_scope(store, str(project), clock.now())
        topics = _topics(count)
        write_scope(env.memory_dir, scope, summary="Digest.\n" * 20, topics=topics)
        used = [f"t{i:03d}.md" for i in range(count - PINNED - USED, count - PINNED)]
        for n in range(3):
            tid = await add_transcript(store, project=str(project), last_activity=clock.now())
            await record_uses(store, tid, [Use(scope, f, clock.now() - timedelta(hours=n)) for f in used])
        settings = env.settings(gemini=False, qwen_code=True, codex=True, agents_md=True)
        report = await publish_all(store, settings, clock)
        over = written = 0
        for result in report.results:
            limit = limits().get(result.target)
            for path in result.written:
                if limit is not None and Path(path).name == limit.file:
                    written += 1
                    over += limit.over(Path(path).read_bytes()) is not None
        [claude] = [r for r in report.results if r.target == "claude_code"]
        index = (Path(claude.path) / "MEMORY.md").read_text()
        pinned = [f"t{i:03d}.md" for i in range(count - PINNED, count)]
        [agents] = [r for r in report.results if r.target == "agents_md"]
        agents_md = (project / "AGENTS.md").read_bytes()
        return {
            "over": over,
            "written": written,
            "pinned": sum(f"memd-{f})" in index for f in pinned),
            "used": sum(f"memd-{f})" in index for f in used),
            "listed": index.count("](memd-"),
            "agents": f"{agents.outcome}, {len(agents_md):,} bytes",
            "agents_over": limits()["agents_md"].over(agents_md) is not None,
        }
    finally:
        await store.close()


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    count = 100  # the default [memories] max_topic_files: what one scope may hold (tiny or not)
    (workdir / "memd").mkdir()
    (workdir / "baseline").mkdir()
    memd = asyncio.run(_replay(workdir / "memd", count))
    with _as_before():
        base = asyncio.run(_replay(workdir / "baseline", count))
    return [
        Figure(
            "topics in the scope / listed in Claude Code's index",
            f"{count} / {memd['listed']}",
            f"{count} / {base['listed']}",
        ),
        Figure(
            "loaded files written over their agent's cut",
            f"{memd['over']} of {memd['written']}",
            f"{base['over']} of {base['written']}",
            "0",
            memd["over"] == 0,
        ),
        Figure(
            "pinned topics kept in the cut index",
            f"{memd['pinned']} of {PINNED}",
            f"{base['pinned']} of {PINNED}",
            f"{PINNED} of {PINNED}",
            memd["pinned"] == PINNED,
        ),
        Figure(
            "most-used topics kept in the cut index",
            f"{memd['used']} of {USED}",
            f"{base['used']} of {USED}",
            f"{USED} of {USED}",
            memd["used"] == USED,
        ),
        Figure(
            "AGENTS.md memd's block would push past 32 KiB",
            memd["agents"],
            base["agents"],
            "failed, kept as it was",
            memd["agents"].startswith("failed") and not memd["agents_over"],
        ),
    ]
