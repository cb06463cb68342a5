"""Cline: the global scope in memd's own ~/.cline/rules/memd-global-memory.md (on), a project's scope in
``.clinerules/memd-memory.md`` of the project's root and of every folder of it where Cline ran (off)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.settings import PublishSettings
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, git, topic_text, write_scope

OFF = {"claude_code": False, "gemini": False}


def ran_in(env: Env, folder: Path, sid: str) -> None:
    """A Cline session's manifest saying it ran in ``folder``."""
    session = env.cline_home / "data" / "sessions" / sid
    session.mkdir(parents=True)
    (session / f"{sid}.json").write_text(
        json.dumps({"session_id": sid, "cwd": str(folder), "interactive": False})
    )


def test_the_defaults_global_on_project_off() -> None:
    publish = PublishSettings()
    assert publish.on("cline_global")
    assert not publish.on("cline")  # it writes into the repository's working tree


@sqlite_only
async def test_the_global_scope_is_memds_own_rule_file_and_goes_when_turned_off(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(
        env.memory_dir, "global", summary="Prefers small commits.", topics={"me.md": topic_text("Me")}
    )
    on = env.settings(**OFF, cline_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "skipped"  # no ~/.cline: Cline is not set up
    assert "Cline is not set up" in (result.reason or "")

    (env.cline_home / "rules").mkdir(parents=True)
    user_rule = env.cline_home / "rules" / "house-style.md"
    user_rule.write_text("Use tabs.\n")
    (result,) = (await publish_all(store, on, clock)).results
    assert (result.target, result.outcome) == ("cline_global", "published")
    rule = env.cline_home / "rules" / "memd-global-memory.md"
    text = rule.read_text()
    assert BEGIN in text
    assert END in text
    assert "Prefers small commits." in text
    assert user_rule.read_text() == "Use tabs.\n"

    (result,) = (await publish_all(store, env.settings(**OFF), clock)).results
    assert (result.target, result.outcome) == ("cline_global", "withdrawn")
    assert "Prefers small commits." not in rule.read_text()


@sqlite_only
async def test_a_projects_memory_reaches_every_folder_of_it_where_cline_ran(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("shop")
    git(repo, "init", "-q")
    (repo / "src" / "api").mkdir(parents=True)
    elsewhere = env.project("other")
    ran_in(env, repo / "src" / "api", "1796653440807_aaaaa")
    ran_in(env, elsewhere, "1796653440808_bbbbb")  # another project: never written by this scope
    ran_in(env, repo / "gone", "1796653440809_ccccc")  # a folder that no longer exists
    (repo / "vendor" / "lib" / "x").mkdir(parents=True)
    git(repo / "vendor" / "lib", "init", "-q")  # a repository of its own inside the project
    ran_in(env, repo / "vendor" / "lib" / "x", "1796653440810_ddddd")
    ran_in(env, repo / ".git", "1796653440811_eeeee")
    fifo = env.cline_home / "data" / "sessions" / "1796653440812_fffff"
    fifo.mkdir()
    os.mkfifo(fifo / "1796653440812_fffff.json")  # a manifest that is a FIFO: skipped, never waited on
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="The shop uses pnpm.", topics={"pnpm.md": topic_text("Pnpm")})
    (result,) = (await publish_all(store, env.settings(**OFF, cline=True), clock)).results
    assert (result.target, result.outcome) == ("cline", "published"), result.reason
    written = sorted(p.relative_to(env.tmp) for p in env.tmp.rglob("memd-memory.md"))
    assert written == [
        Path("src/shop/.clinerules/memd-memory.md"),
        Path("src/shop/src/api/.clinerules/memd-memory.md"),
    ]
    for path in written:
        assert "The shop uses pnpm." in (env.tmp / path).read_text()
    assert not (repo / "gone").exists()

    # The user's own text around memd's block in a folder's copy stays, byte for byte.
    api_rule = repo / "src" / "api" / ".clinerules" / "memd-memory.md"
    api_rule.write_text("Mine: keep the API stable.\n" + api_rule.read_text())
    write_scope(
        env.memory_dir, scope, summary="The shop uses pnpm 9.", topics={"pnpm.md": topic_text("Pnpm")}
    )
    (result,) = (await publish_all(store, env.settings(**OFF, cline=True), clock)).results
    assert result.outcome == "published"
    assert "The shop uses pnpm 9." in (repo / ".clinerules" / "memd-memory.md").read_text()
    assert api_rule.read_text().startswith("Mine: keep the API stable.\n")
    assert "The shop uses pnpm 9." in api_rule.read_text()

    # Turned off: memd's copies are taken back.
    (result,) = (await publish_all(store, env.settings(**OFF), clock)).results
    assert (result.target, result.outcome) == ("cline", "withdrawn")
    for path in written:
        assert "pnpm" not in (env.tmp / path).read_text()
    assert api_rule.read_text().startswith("Mine: keep the API stable.\n")


@sqlite_only
async def test_a_rules_folder_that_leads_out_of_the_project_is_never_written_through(
    env: Env, store: Store, clock: FakeClock
) -> None:
    repo = env.project("shop")
    git(repo, "init", "-q")
    outside = env.tmp / "outside"
    outside.mkdir()
    (repo / ".clinerules").symlink_to(outside)
    env.cline_home.mkdir()
    scope = await add_scope(store, str(repo), clock.now())
    write_scope(env.memory_dir, scope, summary="The shop uses pnpm.")
    (result,) = (await publish_all(store, env.settings(**OFF, cline=True), clock)).results
    assert result.outcome == "failed"
    assert list(outside.iterdir()) == []
