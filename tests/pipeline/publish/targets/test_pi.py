"""Pi: the global scope in the context file Pi 1.6 loads from ~/.pi/agent/, opt-in."""

from __future__ import annotations

from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.settings import Settings, SourceSettings
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, write_scope

USER_TEXT = "# My Pi instructions\nAlways answer in French.\n"
OFF = {"claude_code": False, "gemini": False}


def _agent(env: Env) -> Path:
    return env.home / ".pi" / "agent"


def _settings(env: Env, **publish: bool) -> Settings:
    """Pi's sessions root at ``<home>/.pi/agent/sessions``: its agent folder is the root's parent."""
    base = env.settings(**OFF, **publish)
    sources = base.sources.model_copy(update={"pi": SourceSettings(root=_agent(env) / "sessions")})
    return base.model_copy(update={"sources": sources})


@sqlite_only
async def test_the_global_scope_goes_into_pis_agents_md_only_when_asked(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    report = await publish_all(store, _settings(env), clock)
    assert report.results == ()  # off by default

    on = _settings(env, pi_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "skipped"  # no ~/.pi/agent: Pi is not set up
    assert "Pi is not set up" in (result.reason or "")

    _agent(env).mkdir(parents=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert (result.target, result.scope, result.outcome) == ("pi_global", "global", "published"), (
        result.reason
    )
    text = (_agent(env) / "AGENTS.md").read_text()
    assert BEGIN in text
    assert END in text
    assert "Prefers small commits." in text

    (result,) = (await publish_all(store, _settings(env), clock)).results
    assert (result.target, result.outcome) == ("pi_global", "withdrawn")
    assert "Prefers small commits." not in (_agent(env) / "AGENTS.md").read_text()


@sqlite_only
async def test_the_block_goes_into_the_file_pi_loads_there_never_one_that_would_hide_it(
    env: Env, store: Store, clock: FakeClock
) -> None:
    """Pi loads one file per folder: an AGENTS.override.md hides AGENTS.md, and an AGENTS.md memd
    made would hide the user's CLAUDE.md."""
    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    on = _settings(env, pi_global=True)
    agent = _agent(env)
    agent.mkdir(parents=True)
    (agent / "CLAUDE.md").write_text(USER_TEXT)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "published"
    assert not (agent / "AGENTS.md").exists()
    claude = (agent / "CLAUDE.md").read_text()
    assert claude.startswith(USER_TEXT)  # the user's text, byte for byte
    assert "Prefers small commits." in claude

    (result,) = (await publish_all(store, _settings(env), clock)).results
    assert result.outcome == "withdrawn"
    assert "Prefers small commits." not in (agent / "CLAUDE.md").read_text()

    (agent / "AGENTS.md").write_text("# agents\n")
    (agent / "AGENTS.override.md").write_text(USER_TEXT)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "published"
    assert "Prefers small commits." in (agent / "AGENTS.override.md").read_text()
    assert (agent / "AGENTS.md").read_text() == "# agents\n"


@sqlite_only
async def test_a_moved_agent_dir_moves_the_file_and_a_symlink_to_elsewhere_is_followed(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    moved = env.tmp / "pi-agent"
    moved.mkdir()
    dotfiles = env.tmp / "dotfiles" / "AGENTS.md"
    dotfiles.parent.mkdir()
    dotfiles.write_text(USER_TEXT)
    (moved / "AGENTS.md").symlink_to(dotfiles)
    base = _settings(env, pi_global=True)
    sources = base.sources.model_copy(update={"pi": SourceSettings(root=moved / "sessions")})
    (result,) = (await publish_all(store, base.model_copy(update={"sources": sources}), clock)).results
    assert result.outcome == "published"
    assert (moved / "AGENTS.md").is_symlink()
    assert "Prefers small commits." in dotfiles.read_text()
    assert not (_agent(env) / "AGENTS.md").exists()


@sqlite_only
async def test_when_the_file_pi_loads_changes_memds_block_moves_with_it(
    env: Env, store: Store, clock: FakeClock
) -> None:
    """No copy stays in a file Pi no longer loads: it would come back, stale, when that file is
    loaded again."""
    write_scope(env.memory_dir, "global", summary="Prefers small commits.")
    on = _settings(env, pi_global=True)
    agent = _agent(env)
    agent.mkdir(parents=True)
    (agent / "AGENTS.md").write_text(USER_TEXT)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "published"
    assert "Prefers small commits." in (agent / "AGENTS.md").read_text()

    (agent / "AGENTS.override.md").write_text("# override\n")
    write_scope(env.memory_dir, "global", summary="Prefers tiny commits.")
    (result,) = (await publish_all(store, on, clock)).results
    # the file memd's block is in was changed outside memd (a new one took its place): said so
    assert result.outcome == "republished", result.reason
    assert "moved from" in (result.reason or ""), result.reason
    assert "Prefers tiny commits." in (agent / "AGENTS.override.md").read_text()
    left = (agent / "AGENTS.md").read_text()
    assert left.startswith(USER_TEXT)
    assert "Prefers small commits." not in left
    assert "Prefers tiny commits." not in left
