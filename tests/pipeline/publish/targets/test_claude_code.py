"""Claude Code: the auto-memory folder of the repository, its 200-line / 25 KB load cut, worktrees."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.agents.claude_code.publish import CUT, encode_project_dir, memory_folder
from pipeline.clock import FakeClock
from pipeline.projects import resolve_project, scope_for
from pipeline.publish import sentinel
from pipeline.publish.folder import plan_folder
from pipeline.publish.memfiles import read_scope
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.store import Store
from pipeline.store.publications import load_publications
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import (
    HOSTILE,
    Env,
    add_scope,
    add_transcript,
    git,
    make_hostile,
    topic_text,
    write_scope,
)


def test_encoded_folder_name_matches_claude_code() -> None:
    assert encode_project_dir("/home/u/my_project.v2") == "-home-u-my-project-v2"
    assert encode_project_dir("C:\\Users\\me\\app") == "C--Users-me-app"
    assert encode_project_dir("/tmp/caf\u00e9") == "-tmp-caf-"
    long = "/x" * 150
    encoded = encode_project_dir(long)
    assert encoded.startswith("-x" * 100 + "-")
    assert len(encoded) > 200
    assert encoded[201:].isalnum()
    assert encode_project_dir(long) == encoded != encode_project_dir(long + "y")


def _many_topics(count: int) -> dict[str, str]:
    return {
        f"topic-{i:03d}.md": topic_text(
            f"Topic {i}", description="d" * 150, updated=f"2026-10-{1 + i % 28:02d}"
        )
        for i in range(count)
    }


def _claude_lines(count: int, width: int = 40) -> str:
    return "".join(f"- [claude note {i}](note_{i}.md) " + "x" * width + "\n" for i in range(count))


def _plan(env: Env, scope: str, existing: str | None) -> tuple[Path, str]:
    folder = env.home / "mem"
    folder.mkdir(exist_ok=True)
    if existing is not None:
        (folder / "MEMORY.md").write_text(existing)
    plan = plan_folder(
        "claude_code",
        read_scope(env.memory_dir, scope),
        folder,
        title="t",
        cut=CUT,
        previous_sha=None,
        within=env.home,
    )
    assert plan.refused is None
    index = next(c for c in plan.changes if c.path.name == "MEMORY.md")
    assert index.data is not None
    return folder, index.data.decode()


def test_block_fits_the_load_cut_together_with_claudes_own_lines(env: Env) -> None:
    write_scope(env.memory_dir, "projects/p", summary="S\n" * 80, topics=_many_topics(150))
    for existing_lines in (0, 20, 150):
        existing = _claude_lines(existing_lines)
        _, text = _plan(env, "projects/p", existing or None)
        assert text.startswith(existing), "Claude Code's lines stay first and untouched"
        assert sentinel.count_lines(text) <= CUT.max_lines - CUT.headroom_lines
        assert len(text.encode()) <= CUT.max_bytes - CUT.headroom_bytes
        body = sentinel.block_body(text)
        assert body is not None
        assert sentinel.count_lines(body) <= CUT.block_max_lines
        assert "more memories not listed here" in body
        # The newest memories are the ones listed.
        assert "updated 2026-10-28" in body
        assert "Verify a remembered path, command or flag" in body


def test_byte_budget_holds_with_long_existing_lines(env: Env) -> None:
    write_scope(env.memory_dir, "projects/p", summary="word " * 2000, topics=_many_topics(40))
    existing = _claude_lines(30, width=700)  # about 22 KB in 30 lines
    _, text = _plan(env, "projects/p", existing)
    assert text.startswith(existing)
    assert len(text.encode()) <= CUT.max_bytes - CUT.headroom_bytes
    assert sentinel.count_lines(text) <= CUT.max_lines


def test_a_file_already_over_the_cap_gets_no_block(env: Env, clock: FakeClock) -> None:
    write_scope(env.memory_dir, "projects/p", summary="S", topics=_many_topics(3))
    folder = env.home / "mem"
    folder.mkdir()
    over = _claude_lines(230)
    (folder / "MEMORY.md").write_text(over)
    plan = plan_folder(
        "claude_code",
        read_scope(env.memory_dir, "projects/p"),
        folder,
        title="t",
        cut=CUT,
        previous_sha=None,
        within=env.home,
    )
    assert plan.skip_reason
    assert "no room" in plan.skip_reason
    assert plan.changes == [], "the user's file is left exactly as it is"
    # With an old memd block in an over-full file, the block is emptied and memd's files go.
    (folder / "MEMORY.md").write_text(over + f"{BEGIN}\nold memd\n{END}\n")
    (folder / "memd-old.md").write_text("old")
    plan = plan_folder(
        "claude_code",
        read_scope(env.memory_dir, "projects/p"),
        folder,
        title="t",
        cut=CUT,
        previous_sha=None,
        within=env.home,
    )
    new_index = next(c.data for c in plan.changes if c.path.name == "MEMORY.md")
    assert new_index == (over + f"{BEGIN}\n{END}\n").encode()
    assert any(c.path.name == "memd-old.md" and c.data is None for c in plan.changes)


@sqlite_only
async def test_publish_writes_prefixed_topics_keeps_claudes_files_and_removes_stale_ones(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(
        env.memory_dir,
        scope,
        summary="The app builds with make.",
        topics={"build.md": topic_text("Build", description="make all"), "old.md": topic_text("Old")},
    )
    folder = memory_folder(env.claude_home, str(project))
    folder.mkdir(parents=True)
    claude_index = "- [user role](user_role.md) — Claude's own memory\n"
    (folder / "MEMORY.md").write_text(claude_index)
    (folder / "user_role.md").write_text("Claude's own topic\n")
    settings = env.settings(gemini=False)

    report = await publish_all(store, settings, clock)
    assert [(r.target, r.outcome) for r in report.results] == [("claude_code", "published")]
    assert sorted(p.name for p in folder.iterdir()) == [
        "MEMORY.md",
        "memd-build.md",
        "memd-old.md",
        "user_role.md",
    ]
    assert (folder / "memd-build.md").read_text() == topic_text("Build", description="make all")
    text = (folder / "MEMORY.md").read_text()
    assert text.startswith(claude_index)
    assert "- [Build](memd-build.md) (project, updated 2026-10-30): make all" in text
    assert (folder / "user_role.md").read_text() == "Claude's own topic\n"
    for name in ("raw_memories.md", "memd-raw_memories.md", "memd-MEMORY.md", "memd-memory_summary.md"):
        assert not (folder / name).exists(), "inputs, index and summary are never published as topics"

    # A topic the consolidation removed disappears from the agent's folder too.
    (env.memory_dir / scope / "old.md").unlink()
    report = await publish_all(store, settings, clock)
    assert report.results[0].outcome == "published"
    assert report.results[0].removed == (str(folder / "memd-old.md"),)
    assert not (folder / "memd-old.md").exists()
    assert "memd-old.md" not in (folder / "MEMORY.md").read_text()
    assert (folder / "MEMORY.md").read_text().startswith(claude_index)

    # Claude Code adds a line of its own after memd's block: kept, and memd's block is not rewritten.
    (folder / "MEMORY.md").write_text(
        (folder / "MEMORY.md").read_text() + "- [later](later.md) — added by Claude\n"
    )
    before = (folder / "MEMORY.md").read_text()
    report = await publish_all(store, settings, clock)
    assert report.results[0].outcome == "unchanged"
    assert (folder / "MEMORY.md").read_text() == before


@sqlite_only
async def test_broken_sentinels_are_refused_with_a_warning_and_nothing_changes(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="S", topics={"a.md": topic_text("A")})
    folder = memory_folder(env.claude_home, str(project))
    folder.mkdir(parents=True)
    broken = f"mine\n{BEGIN}\nhalf\n"
    (folder / "MEMORY.md").write_text(broken)
    report = await publish_all(store, env.settings(gemini=False), clock)
    (result,) = report.results
    assert result.outcome == "refused"
    assert result.reason
    assert "left alone" in result.reason
    assert (folder / "MEMORY.md").read_text() == broken
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md"]


@sqlite_only
async def test_worktree_and_subfolder_sessions_publish_to_the_repositorys_folder(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    git(repo, "init", "-q")
    (repo / "sub" / "deep").mkdir(parents=True)
    (repo / "README").write_text("x\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "init")
    worktree = env.tmp / "src" / "repo-feature"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "feature")

    # The scanner resolves each session's cwd to its project: all three are the main worktree's root.
    projects = {resolve_project(str(cwd)) for cwd in (repo, repo / "sub" / "deep", worktree)}
    assert projects == {str(repo.resolve())}
    root = projects.pop()
    assert root is not None
    for _ in range(3):
        await add_transcript(store, project=root, last_activity=clock.now())
    write_scope(env.memory_dir, scope_for(root), summary="Repo memory.", topics={"a.md": topic_text("A")})

    report = await publish_all(store, env.settings(gemini=False), clock)
    assert [r.outcome for r in report.results] == ["published"]
    folders = sorted(p.name for p in (env.claude_home / "projects").iterdir())
    assert folders == [encode_project_dir(root)], (
        "one folder, the repository root's, shared by every worktree"
    )
    assert "Repo memory." in (memory_folder(env.claude_home, root) / "MEMORY.md").read_text()
    assert not (env.claude_home / "projects" / encode_project_dir(str(worktree))).exists()


@sqlite_only
async def test_auto_memory_turned_off_is_skipped_with_the_reason(
    env: Env, store: Store, clock: FakeClock
) -> None:
    import json

    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.")
    folder = memory_folder(env.claude_home, str(project))
    settings = env.settings(gemini=False)

    (env.claude_home / "settings.json").write_text(json.dumps({"autoMemoryEnabled": False}))
    (result,) = (await publish_all(store, settings, clock)).results
    assert result.outcome == "skipped"
    assert result.reason is not None
    assert str(env.claude_home / "settings.json") in result.reason
    assert "memd hooks install claude-code" in result.reason
    assert not folder.exists()

    # The project's own settings win over the user's; its local settings over both.
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryEnabled": True}))
    (result,) = (await publish_all(store, settings, clock)).results
    assert result.outcome == "published"
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"autoMemoryEnabled": False}))
    (result,) = (await publish_all(store, settings, clock)).results
    assert result.outcome == "skipped"
    assert result.reason is not None
    assert "settings.local.json" in result.reason
    # A broken file is passed over, not trusted.
    (project / ".claude" / "settings.local.json").write_text("{not json")
    (result,) = (await publish_all(store, settings, clock)).results
    assert result.outcome == "unchanged"


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("where", ["project", "project_local", "user"])
@sqlite_only
async def test_a_hostile_settings_file_fails_its_projects_promptly_and_the_others_publish(
    env: Env, store: Store, clock: FakeClock, kind: str, where: str
) -> None:
    app = env.project("app")
    other = env.project("other")
    for project in (app, other):
        scope = await add_scope(store, str(project), clock.now())
        write_scope(env.memory_dir, scope, summary=f"Digest of {project.name}.")
    path = {
        "project": app / ".claude" / "settings.json",
        "project_local": app / ".claude" / "settings.local.json",
        "user": env.claude_home / "settings.json",
    }[where]
    make_hostile(path, kind)
    report = await publish_all(store, env.settings(gemini=False), clock)
    outcomes = {r.scope.split("/")[1].split("-")[0]: r for r in report.results}
    assert outcomes["app"].outcome == "failed"
    assert str(path) in (outcomes["app"].reason or "")
    assert "not a regular file" in (outcomes["app"].reason or "")
    assert outcomes["other"].outcome == ("failed" if where == "user" else "published")


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("name", ["MEMORY.md", "memd-a.md"])
@sqlite_only
async def test_a_hostile_file_in_the_memory_folder_fails_that_project_promptly(
    env: Env, store: Store, clock: FakeClock, kind: str, name: str
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    path = make_hostile(memory_folder(env.claude_home, str(project)) / name, kind)
    report = await publish_all(store, env.settings(gemini=False), clock)
    (result,) = report.results
    assert result.outcome == "failed"
    assert str(path) in (result.reason or "")


@sqlite_only
async def test_a_memory_folder_that_is_a_symlink_elsewhere_is_refused(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.", topics={"a.md": topic_text("A")})
    elsewhere = env.tmp / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "MEMORY.md").write_text("not Claude's\n")
    folder = memory_folder(env.claude_home, str(project))
    folder.parent.mkdir(parents=True)
    folder.symlink_to(elsewhere)
    report = await publish_all(store, env.settings(gemini=False), clock)
    (result,) = report.results
    assert result.outcome == "failed"
    assert "symbolic link" in (result.reason or "")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["MEMORY.md"]
    assert (elsewhere / "MEMORY.md").read_text() == "not Claude's\n"


@sqlite_only
async def test_a_global_claude_md_linked_to_the_users_own_file_is_updated_through_the_link(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(env.memory_dir, "global", summary="Global digest.")
    real = env.tmp / "dotfiles" / "CLAUDE.md"
    real.parent.mkdir()
    real.write_text("# My rules\n")
    link = env.claude_home / "CLAUDE.md"
    link.symlink_to(real)
    settings = env.settings(claude_code=False, gemini=False, claude_code_global=True)
    report = await publish_all(store, settings, clock)
    assert [r.outcome for r in report.results] == ["published"]
    assert link.is_symlink()
    assert real.read_text().startswith("# My rules\n")
    assert "Global digest." in real.read_text()


@sqlite_only
async def test_two_projects_sharing_one_claude_folder_are_both_refused_and_never_swap(
    env: Env, store: Store, clock: FakeClock
) -> None:
    """Issue 13, point 7: ``my-app`` and ``my.app`` are one Claude Code folder."""
    dash, dot = env.project("my-app"), env.project("my.app")
    assert memory_folder(env.claude_home, str(dash)) == memory_folder(env.claude_home, str(dot))
    folder = memory_folder(env.claude_home, str(dash))
    scope_dash = await add_scope(store, str(dash), clock.now())
    write_scope(env.memory_dir, scope_dash, summary="Dash digest.", topics={"a.md": topic_text("A")})
    settings = env.settings(gemini=False)
    # my-app alone publishes; then my.app appears (a session there, memory of its own).
    report = await publish_all(store, settings, clock)
    assert [r.outcome for r in report.results] == ["published"]
    folder.joinpath("claude-own.md").write_text("Claude's own\n")
    scope_dot = await add_scope(store, str(dot), clock.now())
    write_scope(env.memory_dir, scope_dot, summary="Dot digest.", topics={"b.md": topic_text("B")})
    for attempt in range(2):
        clock.advance(60)
        report = await publish_all(store, settings, clock)
        by_scope = {r.scope: r for r in report.results}
        assert {r.outcome for r in report.results} == {"refused"}
        assert str(dot) in (by_scope[scope_dash].reason or "")
        assert str(dash) in (by_scope[scope_dot].reason or "")
        assert "memd hooks install claude-code" in (by_scope[scope_dash].reason or "")
        index = (folder / "MEMORY.md").read_text()
        assert "Dash digest." not in index, "neither project's memory stays"
        assert "Dot digest." not in index
        assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md", "claude-own.md"]
        if attempt == 1:
            assert not any(r.written or r.removed for r in report.results), "nothing goes back and forth"
    rows = {r.scope: r for r in await load_publications(store)}
    assert rows[scope_dash].outcome == rows[scope_dot].outcome == "refused"
    assert str(dot) in (rows[scope_dash].reason or "")


@pytest.mark.parametrize("vouched", [True, False])
def test_broken_sentinels_in_memory_md_are_repaired_only_when_memd_can_vouch_for_its_block(
    env: Env, vouched: bool
) -> None:
    from pipeline.publish.folder import BLOCK_KEY
    from pipeline.publish.plan import digest_of

    write_scope(env.memory_dir, "projects/p", summary="New digest.", topics={"a.md": topic_text("A")})
    folder = env.home / "mem"
    folder.mkdir()
    old_body = f"old memd text with the model's {END} in it\n"
    before, after = "- [Claude's note](note.md)\n\n", "\n- Claude's later note\n"
    text = f"{before}{BEGIN}\n{old_body}{END}{after}"
    (folder / "MEMORY.md").write_text(text)
    (folder / "memd-a.md").write_text("old topic\n")
    sha = digest_of({BLOCK_KEY: old_body, "memd-a.md": b"old topic\n"}) if vouched else None
    scope = read_scope(env.memory_dir, "projects/p")
    plan = plan_folder("claude_code", scope, folder, title="t", cut=CUT, previous_sha=sha, within=env.home)
    if not vouched:
        assert plan.refused is not None
        assert str(folder / "MEMORY.md") in plan.refused
        assert plan.changes == []
        return
    assert plan.refused is None
    assert not plan.outside_change
    new = next(c.data for c in plan.changes if c.path.name == "MEMORY.md")
    assert new is not None
    assert sentinel.outside(new.decode()) == before + after, "Claude's lines kept byte for byte"
    assert "New digest." in (sentinel.block_body(new.decode()) or "")
