"""agents_md: memd's block in the project's own AGENTS.md, never outside the project."""

from __future__ import annotations

from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.store import Store
from pipeline.store.publications import load_publications
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, write_scope


@sqlite_only
async def test_an_agents_md_that_links_out_of_the_project_is_left_alone(
    env: Env, store: Store, clock: FakeClock
) -> None:
    """Issue 13, point 3: ``AGENTS.md -> ../../.bashrc`` never gets memd's block."""
    project = env.project("app")  # tmp/src/app
    bashrc = env.tmp / ".bashrc"
    bashrc.write_text("export PATH=$HOME/bin:$PATH\n")
    (project / "AGENTS.md").symlink_to("../../.bashrc")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.")
    settings = env.settings(claude_code=False, gemini=False, agents_md=True)
    for dry_run in (True, False):
        report = await publish_all(store, settings, clock, dry_run=dry_run)
        (result,) = report.results
        assert result.outcome == "failed"
        assert "symbolic link" in (result.reason or "")
        assert str(project / "AGENTS.md") in (result.reason or "")
    assert bashrc.read_text() == "export PATH=$HOME/bin:$PATH\n"
    (row,) = await load_publications(store)
    assert row.outcome == "failed"
    assert "symbolic link" in (row.reason or "")
