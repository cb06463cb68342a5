"""OpenHands: the global scope in memd's own user-level skill, ~/.openhands/skills/memd.md."""

from __future__ import annotations

from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.settings import PublishSettings, Settings, SourceSettings
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, topic_text, write_scope


def _on(env: Env) -> Settings:
    """Only this target, at its default (the shared test settings turn it off)."""
    return env.settings(claude_code=False, gemini=False, openhands_global=True)


@sqlite_only
async def test_on_by_default_the_global_scope_goes_into_memds_own_skill(
    env: Env, store: Store, clock: FakeClock
) -> None:
    assert PublishSettings().on("openhands_global")  # on unless the user turns it off
    write_scope(
        env.memory_dir,
        "global",
        summary="Prefers small commits.",
        topics={"me.md": topic_text("Me", type_="user")},
    )
    (result,) = (await publish_all(store, _on(env), clock)).results
    assert (result.target, result.outcome) == ("openhands_global", "skipped")  # OpenHands not set up
    assert "OpenHands is not set up" in (result.reason or "")

    env.openhands_home.mkdir()  # OpenHands ran once; skills/ does not exist yet
    (result,) = (await publish_all(store, _on(env), clock)).results
    assert (result.target, result.scope, result.outcome) == ("openhands_global", "global", "published")
    skill = env.openhands_home / "skills" / "memd.md"
    text = skill.read_text()
    assert text.startswith(BEGIN)  # no front matter: always on, in every conversation
    assert END in text
    assert "Prefers small commits." in text
    assert len(text.encode()) <= 32_768

    (result,) = (await publish_all(store, env.settings(claude_code=False, gemini=False), clock)).results
    assert (result.target, result.outcome) == ("openhands_global", "withdrawn")
    assert "Prefers small commits." not in skill.read_text()


@sqlite_only
async def test_a_symlink_in_place_of_the_skill_or_its_folder_is_never_written_through(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    elsewhere = env.tmp / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "victim.md"
    target.write_text("the user's file\n")
    env.openhands_home.mkdir()
    (env.openhands_home / "skills").mkdir()
    (env.openhands_home / "skills" / "memd.md").symlink_to(target)
    (result,) = (await publish_all(store, _on(env), clock)).results
    assert result.outcome == "failed"
    assert "symbolic link" in (result.reason or "")
    assert target.read_text() == "the user's file\n"

    (env.openhands_home / "skills" / "memd.md").unlink()
    (env.openhands_home / "skills").rmdir()
    (env.openhands_home / "skills").symlink_to(elsewhere)
    (result,) = (await publish_all(store, _on(env), clock)).results
    assert result.outcome == "failed"
    assert not (elsewhere / "memd.md").exists()


@sqlite_only
async def test_a_moved_persistence_folder_moves_the_skill(
    env: Env, store: Store, clock: FakeClock, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    moved = tmp_path / "oh"
    moved.mkdir()
    base = _on(env)
    sources = base.sources.model_copy(update={"openhands": SourceSettings(root=moved / "conversations")})
    (result,) = (await publish_all(store, base.model_copy(update={"sources": sources}), clock)).results
    assert result.outcome == "published"
    assert "Prefers small commits." in (moved / "skills" / "memd.md").read_text()
