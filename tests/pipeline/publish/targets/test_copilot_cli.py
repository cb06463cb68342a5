"""GitHub Copilot CLI: the global scope in ~/.copilot/copilot-instructions.md, opt-in."""

from __future__ import annotations

from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.settings import SourceSettings
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, topic_text, write_scope

USER_TEXT = "# My Copilot instructions\nAlways answer in French.\n"


@sqlite_only
async def test_the_global_scope_goes_into_copilots_user_instructions_only_when_asked(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(
        env.memory_dir,
        "global",
        summary="Prefers small commits.",
        topics={"me.md": topic_text("Me", type_="user")},
    )
    env.copilot_home.mkdir()
    instructions = env.copilot_home / "copilot-instructions.md"
    instructions.write_text(USER_TEXT)

    report = await publish_all(store, env.settings(claude_code=False, gemini=False), clock)
    assert report.results == ()  # off by default
    assert instructions.read_text() == USER_TEXT

    on = env.settings(claude_code=False, gemini=False, copilot_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert (result.target, result.scope, result.outcome) == ("copilot_global", "global", "published")
    text = instructions.read_text()
    assert text.startswith(USER_TEXT)  # the user's text, byte for byte
    assert BEGIN in text
    assert END in text
    assert "Prefers small commits." in text

    (result,) = (await publish_all(store, env.settings(claude_code=False, gemini=False), clock)).results
    assert (result.target, result.outcome) == ("copilot_global", "withdrawn")
    assert "Prefers small commits." not in instructions.read_text()
    assert instructions.read_text().startswith(USER_TEXT)


@sqlite_only
async def test_without_copilot_it_is_skipped_and_a_linked_file_is_followed(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    on = env.settings(claude_code=False, gemini=False, copilot_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "skipped"
    assert "GitHub Copilot CLI is not set up" in (result.reason or "")

    dotfiles = env.tmp / "dotfiles" / "copilot-instructions.md"
    dotfiles.parent.mkdir()
    dotfiles.write_text(USER_TEXT)
    env.copilot_home.mkdir()
    (env.copilot_home / "copilot-instructions.md").symlink_to(dotfiles)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "published"
    assert "Prefers small commits." in dotfiles.read_text()
    assert (env.copilot_home / "copilot-instructions.md").is_symlink()


@sqlite_only
async def test_a_moved_copilot_home_moves_the_file(
    env: Env, store: Store, clock: FakeClock, tmp_path
) -> None:  # type: ignore[no-untyped-def]

    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    moved = tmp_path / "cp"
    moved.mkdir()
    base = env.settings(claude_code=False, gemini=False, copilot_global=True)
    sources = base.sources.model_copy(update={"copilot_cli": SourceSettings(root=moved / "session-state")})
    (result,) = (await publish_all(store, base.model_copy(update={"sources": sources}), clock)).results
    assert result.outcome == "published"
    assert "Prefers small commits." in (moved / "copilot-instructions.md").read_text()
