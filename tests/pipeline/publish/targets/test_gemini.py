"""Gemini CLI: the private project memory named by projects.json, and GEMINI.md."""

from __future__ import annotations

import json

import pytest

from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.store import Store
from pipeline.store.publications import load_publications
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import HOSTILE, Env, add_scope, git, make_hostile, topic_text, write_scope


def _registry(env: Env, projects: dict[str, str]) -> None:
    env.gemini_home.mkdir(parents=True, exist_ok=True)
    (env.gemini_home / "projects.json").write_text(json.dumps({"projects": projects}))


@sqlite_only
async def test_every_gemini_folder_of_the_project_gets_the_memory(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    git(repo, "init", "-q")
    (repo / "pkg").mkdir()
    other = env.project("other")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Repo digest.", topics={"a.md": topic_text("A")})
    _registry(env, {str(repo): "repo", str(repo / "pkg"): "pkg", str(other): "other"})
    existing = env.gemini_home / "tmp" / "repo" / "memory" / "MEMORY.md"
    existing.parent.mkdir(parents=True)
    existing.write_text("# Gemini's own memory\n- a fact Gemini saved\n")

    report = await publish_all(store, env.settings(claude_code=False), clock)
    (result,) = report.results
    assert (result.target, result.outcome) == ("gemini", "published")
    for name in ("repo", "pkg"):
        folder = env.gemini_home / "tmp" / name / "memory"
        assert (folder / "memd-a.md").read_text() == topic_text("A")
        assert "Repo digest." in (folder / "MEMORY.md").read_text()
    assert existing.read_text().startswith("# Gemini's own memory\n- a fact Gemini saved\n")
    assert not (env.gemini_home / "tmp" / "other").exists()
    (row,) = await load_publications(store)
    assert (row.target, row.outcome, row.path) == ("gemini", "published", str(existing.parent))
    assert row.reason is not None
    assert "pkg" in row.reason


@sqlite_only
async def test_a_project_gemini_has_not_seen_is_skipped_not_invented(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("repo")
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.")
    report = await publish_all(store, env.settings(claude_code=False), clock)
    (result,) = report.results
    assert result.outcome == "skipped"
    assert result.reason is not None
    assert "Gemini CLI has not been used" in result.reason
    assert not (env.gemini_home / "tmp").exists()


@sqlite_only
async def test_gemini_global_is_a_block_in_gemini_md(env: Env, store: Store, clock: FakeClock) -> None:
    write_scope(
        env.memory_dir, "global", summary="User prefers tabs.", topics={"style.md": topic_text("Style")}
    )
    env.gemini_home.mkdir(parents=True)
    user = "# My Gemini instructions\nAlways answer in English.\n"
    (env.gemini_home / "GEMINI.md").write_text(user)
    report = await publish_all(store, env.settings(claude_code=False, gemini_global=True), clock)
    assert [(r.target, r.outcome) for r in report.results] == [("gemini_global", "published")]
    text = (env.gemini_home / "GEMINI.md").read_text()
    assert text.startswith(user)
    assert BEGIN in text
    assert END in text
    assert "User prefers tabs." in text
    assert str(env.memory_dir / "global" / "style.md") in text
    assert "updated 2026-10-30" in text


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", HOSTILE)
@sqlite_only
async def test_a_hostile_projects_json_fails_every_project_promptly(
    env: Env, store: Store, clock: FakeClock, kind: str
) -> None:
    for name in ("a", "b"):
        scope = await add_scope(store, str(env.project(name)), clock.now())
        write_scope(env.memory_dir, scope, summary=f"Digest of {name}.")
    path = make_hostile(env.gemini_home / "projects.json", kind)
    report = await publish_all(store, env.settings(claude_code=False), clock)
    assert [r.outcome for r in report.results] == ["failed", "failed"]
    assert all(str(path) in (r.reason or "") for r in report.results)
