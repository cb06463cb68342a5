"""When an index must be cut, pinned and most-used topics are kept first; a stale topic's line says so."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.publish.memfiles import ScopeMemory, Topic, read_scope
from pipeline.publish.render import Budget, render_body
from pipeline.publish.run import publish_all
from pipeline.store import Store
from pipeline.store.hits import Use, record_uses
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, add_transcript, topic_text, write_scope


def _topic(i: int, **kw: object) -> Topic:
    t = Topic(
        file=f"t{i:02d}.md",
        path=Path(f"/m/t{i:02d}.md"),
        name=f"Topic {i}",
        description="d" * 60,
        type="project",
        created=None,
        updated=date(2026, 10, 28 - i),
        sources=(),
        expires=None,
        text="",
    )
    return replace(t, **kw)  # type: ignore[arg-type]


def _body(topics: list[Topic], max_lines: int) -> str:
    scope = ScopeMemory("global", Path("/m"), "", "", tuple(topics))
    body = render_body(
        scope, title="t", where="w", link_for=lambda t: t.file, budget=Budget(max_lines, 10_000)
    )
    assert body is not None
    return body


def test_a_cut_index_keeps_the_pinned_then_the_most_used_then_the_newest() -> None:
    topics = [_topic(i) for i in range(20)]
    topics[19] = replace(topics[19], pinned=True)  # the oldest, pinned
    topics[15] = replace(topics[15], uses=7)
    topics[12] = replace(topics[12], uses=3)
    body = _body(topics, max_lines=10)  # header 2 + index head 2 + "more" line: room for 5 topics
    listed = [t.file for t in topics if f"]({t.file})" in body]
    assert listed == ["t00.md", "t01.md", "t12.md", "t15.md", "t19.md"]  # shown newest first
    assert "- … 15 more memories not listed here" in body


def test_an_index_that_fits_lists_every_topic_newest_first() -> None:
    topics = [_topic(i, pinned=(i == 3)) for i in range(4)]
    body = _body(topics, max_lines=40)
    positions = [body.index(f"]({t.file})") for t in topics]
    assert positions == sorted(positions)
    assert "not listed" not in body


def test_a_stale_topics_line_says_stale_and_names_the_file() -> None:
    body = _body([_topic(0, stale="src/app.py changed (lines 3-5)")], max_lines=40)
    assert "STALE: src/app.py changed (lines 3-5)" in body


def test_pinned_is_read_leniently_from_the_frontmatter(tmp_path: Path) -> None:
    text = topic_text("Pinned").replace("type: project", "type: project\npinned: true")
    write_scope(tmp_path, "global", topics={"p.md": text, "q.md": topic_text("Other")})
    by_file = {t.file: t for t in read_scope(tmp_path, "global").topics}
    assert by_file["p.md"].pinned
    assert not by_file["q.md"].pinned


@sqlite_only
async def test_publish_reads_each_topics_uses_from_the_store(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    topics = {
        f"t{i:03d}.md": topic_text(f"Topic {i}", description="d" * 150, updated="2026-10-20")
        for i in range(150)
    }
    topics["zz-used.md"] = topic_text("The used one", description="d" * 150, updated="2026-01-01")
    write_scope(env.memory_dir, scope, summary="Digest.", topics=topics)
    for _ in range(3):
        tid = await add_transcript(store, project=str(project), last_activity=clock.now())
        await record_uses(store, tid, [Use(scope, "zz-used.md", clock.now())])
    settings = env.settings(gemini=False)
    [result] = (await publish_all(store, settings, clock)).results
    assert result.outcome == "published", result
    index = next(Path(p) for p in result.written if p.endswith("MEMORY.md")).read_text()
    assert "more memories not listed" in index
    assert "(memd-zz-used.md)" in index  # the oldest, but read by three sessions
