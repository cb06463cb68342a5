"""Qwen Code: the project's own managed memory folder, keyed by the git root, inside its load cut."""

from __future__ import annotations

import re

import pytest

from pipeline.agents.qwen_code.publish import CUT, encode_project_dir, memory_folder
from pipeline.clock import FakeClock
from pipeline.publish import sentinel
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.store import Store
from pipeline.store.publications import load_publications
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import HOSTILE, Env, add_scope, git, make_hostile, topic_text, write_scope

# Qwen Code's own test of a topic file (packages/core/src/memory/scan.ts): a frontmatter with a type.
QWEN_TOPIC = re.compile(r"^---\n([\s\S]*?)\n---\n?([\s\S]*)$")
QWEN_TYPES = ("user", "feedback", "project", "reference")


def test_encoded_folder_name_matches_qwen_code() -> None:
    # The sample's chats of /home/dev/ag/work/repo/sub live in -home-dev-ag-work-repo-sub.
    assert encode_project_dir("/home/dev/ag/work/repo/sub") == "-home-dev-ag-work-repo-sub"
    assert encode_project_dir("/home/u/my_project.v2") == "-home-u-my-project-v2"
    assert encode_project_dir("/x" * 150) == "-x" * 150  # no length cut, unlike Claude Code's
    assert CUT.max_lines == 200
    assert CUT.max_bytes == 25_000


@sqlite_only
async def test_the_project_memory_gets_memds_topics_and_block_beside_qwens_own(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    git(repo, "init", "-q")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Repo digest.", topics={"build.md": topic_text("Build")})
    folder = memory_folder(env.qwen_home, str(repo))
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("- [Testing](feedback/testing.md) — Qwen's own memory\n")

    report = await publish_all(store, env.settings(claude_code=False, gemini=False, qwen_code=True), clock)
    (result,) = report.results
    assert (result.target, result.outcome) == ("qwen_code", "published")
    index = (folder / "MEMORY.md").read_text()
    assert index.startswith("- [Testing](feedback/testing.md) — Qwen's own memory\n")  # Qwen's line kept
    assert BEGIN in index
    assert END in index
    assert "Repo digest." in index
    assert "memd-build.md" in index
    lines, size = sentinel.count_lines(index), len(index.encode())
    assert lines <= CUT.max_lines - CUT.headroom_lines
    assert size <= CUT.max_bytes - CUT.headroom_bytes
    topic = (folder / "memd-build.md").read_text()
    match = QWEN_TOPIC.match(topic)
    assert match is not None  # Qwen Code offers it to its memory selector...
    assert re.search(r"^type:[^\S\n]*(.+)$", match.group(1), re.M).group(1) in QWEN_TYPES  # type: ignore[union-attr]
    (row,) = await load_publications(store)
    assert (row.target, row.path) == ("qwen_code", str(folder))


@sqlite_only
async def test_qwen_rebuilding_its_index_is_noticed_and_memds_block_comes_back(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Repo digest.", topics={"build.md": topic_text("Build")})
    env.qwen_home.mkdir()
    settings = env.settings(claude_code=False, gemini=False, qwen_code=True)
    await publish_all(store, settings, clock)
    index = memory_folder(env.qwen_home, str(repo)) / "MEMORY.md"
    # Qwen saved a memory of its own and wrote its index again from the topic files.
    index.write_text("- [Build](memd-build.md) — About Build\n- [Role](user/role.md) — role\n")
    (result,) = (await publish_all(store, settings, clock)).results
    assert result.outcome == "republished"
    text = index.read_text()
    assert text.startswith("- [Build](memd-build.md) — About Build\n- [Role](user/role.md) — role\n")
    assert "Repo digest." in text


@sqlite_only
async def test_a_full_index_leaves_memd_out_rather_than_past_the_cut(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Repo digest.", topics={"build.md": topic_text("Build")})
    folder = memory_folder(env.qwen_home, str(repo))
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("".join(f"- [t{n}](t{n}.md) — Qwen's\n" for n in range(195)))
    (result,) = (
        await publish_all(store, env.settings(claude_code=False, gemini=False, qwen_code=True), clock)
    ).results
    assert result.outcome == "skipped"
    assert "no room inside the 200-line" in (result.reason or "")
    assert BEGIN not in (folder / "MEMORY.md").read_text()


@sqlite_only
async def test_two_projects_sharing_one_folder_are_both_refused(
    env: Env, store: Store, clock: FakeClock
) -> None:
    first, second = env.project("my-app"), env.project("my.app")
    for project in (first, second):
        scope = await add_scope(store, str(project), clock.now())
        write_scope(env.memory_dir, scope, summary=f"Digest of {project.name}.")
    env.qwen_home.mkdir()
    report = await publish_all(store, env.settings(claude_code=False, gemini=False, qwen_code=True), clock)
    assert {r.outcome for r in report.results} == {"refused"}
    assert all("shares Qwen Code's memory folder" in (r.reason or "") for r in report.results)
    assert not (memory_folder(env.qwen_home, str(first)) / "MEMORY.md").exists()


@sqlite_only
async def test_on_by_default_skipped_without_qwen_and_withdrawn_when_turned_off(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Repo digest.", topics={"build.md": topic_text("Build")})
    on = env.settings(claude_code=False, gemini=False, qwen_code=True)
    assert type(on.publish)().qwen_code  # the default
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "skipped"
    assert "Qwen Code is not set up" in (result.reason or "")

    env.qwen_home.mkdir()
    await publish_all(store, on, clock)
    folder = memory_folder(env.qwen_home, str(repo))
    assert (folder / "memd-build.md").exists()
    (folder / "MEMORY.md").write_text((folder / "MEMORY.md").read_text() + "- a line Qwen added\n")
    (result,) = (await publish_all(store, env.settings(claude_code=False, gemini=False), clock)).results
    assert (result.target, result.outcome) == ("qwen_code", "withdrawn")
    assert not (folder / "memd-build.md").exists()
    assert "Repo digest." not in (folder / "MEMORY.md").read_text()
    assert "- a line Qwen added\n" in (folder / "MEMORY.md").read_text()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", HOSTILE)
@sqlite_only
async def test_a_hostile_index_fails_the_target_with_its_name(
    env: Env, store: Store, clock: FakeClock, kind: str
) -> None:
    repo = env.project("repo")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Repo digest.")
    index = make_hostile(memory_folder(env.qwen_home, str(repo)) / "MEMORY.md", kind)
    (result,) = (
        await publish_all(store, env.settings(claude_code=False, gemini=False, qwen_code=True), clock)
    ).results
    assert result.outcome in ("failed", "refused")
    assert str(index) in (result.reason or "")


@sqlite_only
async def test_a_symlinked_memory_folder_is_never_written_through(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Repo digest.")
    elsewhere = env.tmp / "elsewhere"
    elsewhere.mkdir()
    folder = memory_folder(env.qwen_home, str(repo))
    folder.parent.mkdir(parents=True)
    folder.symlink_to(elsewhere)
    (result,) = (
        await publish_all(store, env.settings(claude_code=False, gemini=False, qwen_code=True), clock)
    ).results
    assert result.outcome == "failed"
    assert list(elsewhere.iterdir()) == []
