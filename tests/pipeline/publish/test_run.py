"""publish_all: dry runs, outcomes in publications, failures that stay local, withdrawal, agents_md."""

from __future__ import annotations

import shutil

import pytest

from pipeline.agents.claude_code.publish import memory_folder
from pipeline.clock import FakeClock
from pipeline.hits.record import INDEX_KEY
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.store import Store, kv
from pipeline.store.publications import load_publications
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, topic_text, write_scope


@sqlite_only
async def test_dry_run_says_what_would_be_written_where_and_writes_nothing(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    report = await publish_all(store, env.settings(gemini=False), clock, dry_run=True)
    assert report.dry_run
    (result,) = report.results
    folder = memory_folder(env.claude_home, str(project))
    assert result.outcome == "would_publish"
    assert set(result.written) == {str(folder / "MEMORY.md"), str(folder / "memd-a.md")}
    assert result.bytes_written > 0
    assert list(env.claude_home.iterdir()) == []
    assert await load_publications(store) == []
    assert await kv.get(store, INDEX_KEY) is None


async def test_outcomes_are_recorded_per_target_and_scope(env: Env, store: Store, clock: FakeClock) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    write_scope(env.memory_dir, "global", summary="Global digest.")
    settings = env.settings(gemini=False, claude_code_global=True)
    await publish_all(store, settings, clock)
    first = clock.now()
    clock.advance(3600)
    await publish_all(store, settings, clock)
    rows = {(r.target, r.scope): r for r in await load_publications(store)}
    assert set(rows) == {("claude_code", scope), ("claude_code_global", "global")}
    row = rows[("claude_code", scope)]
    assert row.outcome == "unchanged"
    assert row.published_at == first, "last published = when the content was last written"
    assert row.content_sha256 is not None
    assert row.path == str(memory_folder(env.claude_home, str(project)))


@sqlite_only
async def test_a_failing_target_fails_alone_and_publish_never_raises(
    env: Env, store: Store, clock: FakeClock
) -> None:
    broken = env.project("broken")
    fine = env.project("fine")
    for project in (broken, fine):
        scope = await add_scope(store, str(project), clock.now())
        write_scope(env.memory_dir, scope, summary=f"Digest of {project.name}.")
    # A file where Claude Code's project folder should be: nothing can be written under it.
    blocker = memory_folder(env.claude_home, str(broken)).parent
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a folder")
    report = await publish_all(store, env.settings(gemini=False), clock)
    outcomes = {r.scope.split("/")[1].split("-")[0]: r.outcome for r in report.results}
    assert outcomes == {"broken": "failed", "fine": "published"}
    assert report.failed[0].reason
    rows = {r.scope: r for r in await load_publications(store)}
    failed = next(r for s, r in rows.items() if "broken" in s)
    assert failed.outcome == "failed"
    assert failed.reason
    assert failed.content_sha256 is None
    # Fixed, the next publish succeeds.
    blocker.unlink()
    report = await publish_all(store, env.settings(gemini=False), clock)
    assert {r.outcome for r in report.results} == {"published", "unchanged"}


@sqlite_only
async def test_a_scope_that_is_gone_is_withdrawn_from_the_agents_files(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    folder = memory_folder(env.claude_home, str(project))
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("Claude's line\n")
    settings = env.settings(gemini=False)
    await publish_all(store, settings, clock)
    assert (folder / "memd-a.md").exists()

    shutil.rmtree(env.memory_dir / scope)  # memd forget --project
    report = await publish_all(store, settings, clock)
    assert [(r.target, r.outcome) for r in report.results] == [("claude_code", "withdrawn")]
    assert (folder / "MEMORY.md").read_text() == f"Claude's line\n\n{BEGIN}\n{END}\n"
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md"]
    # Withdrawn once is enough.
    report = await publish_all(store, settings, clock)
    assert report.results == ()


async def test_a_target_turned_off_is_withdrawn_once(env: Env, store: Store, clock: FakeClock) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    write_scope(env.memory_dir, "global", summary="Global digest.")
    folder = memory_folder(env.claude_home, str(project))
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("Claude's line\n")
    (env.claude_home / "CLAUDE.md").write_text("# Mine\n")
    await publish_all(store, env.settings(gemini=False, claude_code_global=True), clock)
    assert (folder / "memd-a.md").exists()
    assert "Global digest." in (env.claude_home / "CLAUDE.md").read_text()

    # The scope is still there; the targets are turned off.
    report = await publish_all(store, env.settings(gemini=False, claude_code=False), clock)
    assert {(r.target, r.outcome) for r in report.results} == {
        ("claude_code", "withdrawn"),
        ("claude_code_global", "withdrawn"),
    }
    assert (folder / "MEMORY.md").read_text() == f"Claude's line\n\n{BEGIN}\n{END}\n"
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md"]
    assert "Global digest." not in (env.claude_home / "CLAUDE.md").read_text()
    assert (env.claude_home / "CLAUDE.md").read_text().startswith("# Mine\n")
    report = await publish_all(store, env.settings(gemini=False, claude_code=False), clock)
    assert report.results == ()
    # Turned on again, it publishes again.
    report = await publish_all(store, env.settings(gemini=False), clock)
    assert [(r.target, r.outcome) for r in report.results] == [("claude_code", "published")]
    assert (folder / "memd-a.md").exists()


@sqlite_only
async def test_expired_topics_are_not_published(env: Env, store: Store, clock: FakeClock) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(
        env.memory_dir,
        scope,
        topics={
            "old.md": topic_text("Old", expires="2026-10-31"),
            "new.md": topic_text("New", expires="2026-11-01"),
        },
    )
    await publish_all(store, env.settings(gemini=False), clock)
    folder = memory_folder(env.claude_home, str(project))
    assert sorted(p.name for p in folder.glob("memd-*")) == ["memd-new.md"]


@sqlite_only
async def test_agents_md_is_off_by_default_and_keeps_the_users_text_when_on(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.")
    await publish_all(store, env.settings(gemini=False), clock)
    assert not (project / "AGENTS.md").exists()
    user = "# Agents\n\nUse make.\n"
    (project / "AGENTS.md").write_text(user)
    report = await publish_all(store, env.settings(gemini=False, claude_code=False, agents_md=True), clock)
    outcomes = {(r.target, r.outcome) for r in report.results}
    assert outcomes == {("agents_md", "published"), ("claude_code", "withdrawn")}
    text = (project / "AGENTS.md").read_text()
    assert text.startswith(user)
    assert "Digest." in text


@sqlite_only
async def test_publishing_needs_no_state_history_and_no_scopes_table_rows(
    env: Env, store: Store, clock: FakeClock
) -> None:
    # A scope whose project the store does not know is skipped with a reason, not a crash.
    write_scope(env.memory_dir, "projects/unknown-12345678", summary="Digest.")
    report = await publish_all(store, env.settings(gemini=False), clock)
    (result,) = report.results
    assert result.outcome == "skipped"
    assert result.reason == "no project path is recorded for this scope"


@sqlite_only
async def test_an_agent_that_is_not_set_up_gets_nothing(env: Env, store: Store, clock: FakeClock) -> None:
    env.claude_home.rmdir()
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.")
    write_scope(env.memory_dir, "global", summary="Global.")
    settings = env.settings(gemini=False, codex=True, claude_code_global=True, codex_global=True)
    report = await publish_all(store, settings, clock)
    assert {(r.target, r.outcome) for r in report.results} == {
        ("claude_code", "skipped"),
        ("claude_code_global", "skipped"),
        ("codex", "skipped"),
        ("codex_global", "skipped"),
    }
    assert all(r.reason and "does not exist" in r.reason for r in report.results)
    assert list(env.home.iterdir()) == []


@sqlite_only
async def test_a_missing_memory_dir_withdraws_nothing(env: Env, store: Store, clock: FakeClock) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    settings = env.settings(gemini=False)
    await publish_all(store, settings, clock)
    folder = memory_folder(env.claude_home, str(project))
    published = {p.name: p.read_bytes() for p in folder.iterdir()}
    env.memory_dir.rename(env.tmp / "unmounted")
    report = await publish_all(store, settings, clock)
    # memd published from it before: a vanished directory is unmounted or moved, a real failure.
    (result,) = report.failed
    assert result.reason is not None
    assert f"{env.memory_dir} does not exist, though memd published from it before" in result.reason
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == published
    assert {r.outcome for r in await load_publications(store)} == {"published"}


@pytest.mark.parametrize("dry_run", [False, True])
@sqlite_only
async def test_before_the_first_consolidation_publishing_is_skipped_not_failed(
    env: Env, store: Store, clock: FakeClock, dry_run: bool
) -> None:
    env.memory_dir.rmdir()  # nothing consolidated yet: phase 2 has not created the repository
    report = await publish_all(store, env.settings(), clock, dry_run=dry_run)
    assert [(r.target, r.outcome, r.reason) for r in report.results] == [
        ("*", "skipped", f"nothing consolidated yet: {env.memory_dir} does not exist")
    ]
    assert report.failed == []
    assert list(env.claude_home.iterdir()) == []
    assert await load_publications(store) == []
    assert await kv.get(store, INDEX_KEY) is None


async def test_a_republish_after_an_outside_change_is_remembered_across_later_publishes(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    settings = env.settings(gemini=False)
    await publish_all(store, settings, clock)
    (row,) = await load_publications(store)
    assert (row.republished_at, row.republish_reason) == (None, None)

    topic = memory_folder(env.claude_home, str(project)) / "memd-a.md"
    ours = topic.read_bytes()
    topic.write_text("someone else's words\n")  # an agent's own consolidation rewrote memd's file
    clock.advance(60)
    changed_at = clock.now()
    (result,) = (await publish_all(store, settings, clock)).results
    assert result.outcome == "republished"
    assert topic.read_bytes() == ours
    (row,) = await load_publications(store)
    assert (row.outcome, row.published_at, row.republished_at) == ("republished", changed_at, changed_at)
    assert row.republish_reason is not None
    assert "changed by someone else" in row.republish_reason

    clock.advance(3600)
    (result,) = (await publish_all(store, settings, clock)).results
    assert result.outcome == "unchanged"
    (row,) = await load_publications(store)
    assert (row.outcome, row.published_at, row.republished_at) == ("unchanged", changed_at, changed_at)
    assert row.republish_reason is not None


@sqlite_only
async def test_withdrawing_after_a_failure_touches_nothing(
    env: Env, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.")
    blocker = memory_folder(env.claude_home, str(project)).parent
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a folder")
    report = await publish_all(store, env.settings(gemini=False), clock)
    assert [r.outcome for r in report.results] == ["failed"]
    # The scope goes away; memd's own files elsewhere (here: in the working directory) stay put.
    monkeypatch.chdir(env.tmp)
    (env.tmp / "memd-innocent.md").write_text("not memd's to remove\n")
    shutil.rmtree(env.memory_dir / scope)
    report = await publish_all(store, env.settings(gemini=False), clock)
    assert [(r.outcome, r.written, r.removed) for r in report.results] == [("withdrawn", (), ())]
    assert (env.tmp / "memd-innocent.md").exists()
