"""Stale memory is marked: a topic whose cited lines changed, or whose file is gone, is published
marked stale, recorded for `memd status`, and its scope marked as needing a run."""

from __future__ import annotations

from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.store import Store
from pipeline.store import consolidation as db
from pipeline.store.cites import load_stale, stale_in_scope
from tests.pipeline.publish.support import Env, add_scope, topic_text, write_scope

APP = "import os\nPORT = 8080\nHOST = 'localhost'\n"


def cited(name: str, cite: str) -> str:
    return topic_text(name, body="The app listens on port 8080.").replace(
        "---\nThe app", f'cites: ["{cite}"]\n---\nThe app'
    )


async def setup(env: Env, store: Store, clock: FakeClock) -> tuple[Path, str]:
    project = env.project("app")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text(APP)
    scope = await add_scope(store, str(project), clock.now())
    await db.save_success(store, scope, inputs=[], commit=None, project=str(project), now=clock.now())
    write_scope(
        env.memory_dir,
        scope,
        summary="Digest.",
        topics={"port.md": cited("Port", "src/app.py:2-2"), "plain.md": topic_text("Plain")},
    )
    return project, scope


async def index_of(env: Env, store: Store, clock: FakeClock) -> str:
    settings = env.settings(gemini=False)
    [result] = (await publish_all(store, settings, clock)).results
    assert result.outcome in ("published", "unchanged"), result
    folder = Path(result.path)
    return (folder / "MEMORY.md").read_text()


async def test_a_topic_whose_cited_lines_changed_is_published_marked_stale(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project, scope = await setup(env, store, clock)
    first = await index_of(env, store, clock)
    assert "STALE" not in first
    assert await load_stale(store) == {}

    # Lines around it change: not stale. The cited line changes: stale.
    (project / "src" / "app.py").write_text("import sys\nPORT = 8080\nHOST = 'localhost'\n")
    assert "STALE" not in await index_of(env, store, clock)
    (project / "src" / "app.py").write_text("import sys\nPORT = 9090\nHOST = 'localhost'\n")
    index = await index_of(env, store, clock)
    [line] = [x for x in index.splitlines() if "memd-port.md" in x]
    assert "STALE: src/app.py changed (lines 2-2)" in line
    assert all("STALE" not in x for x in index.splitlines() if "memd-plain.md" in x)
    assert await stale_in_scope(store, scope) == {"port.md": "src/app.py changed (lines 2-2)"}
    state = await db.get_scope(store, scope)
    assert state is not None
    assert state.stale


async def test_a_topic_whose_cited_file_is_gone_is_stale_and_a_rewritten_topic_is_current_again(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project, scope = await setup(env, store, clock)
    await index_of(env, store, clock)
    (project / "src" / "app.py").unlink()
    index = await index_of(env, store, clock)
    assert "STALE: src/app.py is gone" in index
    # Phase 2 rewrote the topic (a new version): what the lines hold now is recorded again.
    (project / "src" / "app.py").write_text(APP.replace("8080", "9090"))
    folder = env.memory_dir / scope
    (folder / "port.md").write_text(cited("Port", "src/app.py:2").replace("8080", "9090"))
    assert "STALE" not in await index_of(env, store, clock)
    assert await load_stale(store) == {}


async def test_a_cite_through_a_link_out_of_the_project_is_stale_never_followed(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project, scope = await setup(env, store, clock)
    outside = env.tmp / "outside.py"
    outside.write_text(APP)
    (project / "src" / "app.py").unlink()
    (project / "src" / "app.py").symlink_to(outside)
    index = await index_of(env, store, clock)
    assert "STALE: src/app.py is a symbolic link" in index


async def test_a_dry_run_records_nothing(env: Env, store: Store, clock: FakeClock) -> None:
    project, scope = await setup(env, store, clock)
    (project / "src" / "app.py").unlink()
    await publish_all(store, env.settings(gemini=False), clock, dry_run=True)
    assert await load_stale(store) == {}
    state = await db.get_scope(store, scope)
    assert state is not None
    assert not state.stale
