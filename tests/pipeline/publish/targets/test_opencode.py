"""OpenCode's global AGENTS.md: opt-in, a sentinel block beside the user's text, never created where
it would hide ~/.claude/CLAUDE.md from OpenCode, withdrawn when turned off, in the service unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon import service_files as sf
from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import HOSTILE, Env, make_hostile, topic_text, write_scope


@pytest.fixture
def config(env: Env, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$XDG_CONFIG_HOME`` of the test's user; OpenCode is set up in it."""
    folder = env.home / ".config"
    (folder / "opencode").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    monkeypatch.setenv("HOME", str(env.home))
    write_scope(
        env.memory_dir, "global", summary="User prefers tabs.", topics={"style.md": topic_text("Style")}
    )
    return folder / "opencode"


@sqlite_only
async def test_it_is_off_by_default(env: Env, store: Store, clock: FakeClock, config: Path) -> None:
    report = await publish_all(store, env.settings(claude_code=False, gemini=False), clock)
    assert [r.target for r in report.results] == []
    assert not (config / "AGENTS.md").exists()


@sqlite_only
async def test_the_global_scope_is_a_block_in_opencodes_agents_md(
    env: Env, store: Store, clock: FakeClock, config: Path
) -> None:
    user = "# Mine\nAlways run the tests.\n"
    (config / "AGENTS.md").write_text(user)
    on = env.settings(claude_code=False, gemini=False, opencode_global=True)
    report = await publish_all(store, on, clock)
    assert [(r.target, r.outcome) for r in report.results] == [("opencode_global", "published")]
    text = (config / "AGENTS.md").read_text()
    assert text.startswith(user)
    assert BEGIN in text
    assert "User prefers tabs." in text
    assert str(env.memory_dir / "global" / "style.md") in text
    # Turned off: memd's block goes, the user's text stays byte for byte.
    off = await publish_all(store, env.settings(claude_code=False, gemini=False), clock)
    assert [(r.target, r.outcome) for r in off.results] == [("opencode_global", "withdrawn")]
    after = (config / "AGENTS.md").read_text()
    assert after.startswith(user)
    assert "User prefers tabs." not in after


@sqlite_only
async def test_it_is_created_only_where_it_hides_no_claude_md(
    env: Env, store: Store, clock: FakeClock, config: Path
) -> None:
    on = env.settings(claude_code=False, gemini=False, opencode_global=True)
    (env.home / ".claude" / "CLAUDE.md").write_text("my Claude instructions\n")
    report = await publish_all(store, on, clock)
    [result] = report.results
    assert result.outcome == "skipped"
    assert "CLAUDE.md" in (result.reason or "")
    assert not (config / "AGENTS.md").exists()
    (env.home / ".claude" / "CLAUDE.md").unlink()
    report = await publish_all(store, on, clock)
    assert [r.outcome for r in report.results] == ["published"]
    text = (config / "AGENTS.md").read_text()
    assert BEGIN in text
    assert END in text


@sqlite_only
async def test_not_set_up_is_skipped(env: Env, store: Store, clock: FakeClock, config: Path) -> None:
    config.rmdir()
    report = await publish_all(
        store, env.settings(claude_code=False, gemini=False, opencode_global=True), clock
    )
    [result] = report.results
    assert result.outcome == "skipped"
    assert "OpenCode is not set up" in (result.reason or "")


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", HOSTILE)
@sqlite_only
async def test_a_hostile_agents_md_fails_promptly_with_its_name(
    env: Env, store: Store, clock: FakeClock, config: Path, kind: str
) -> None:
    path = make_hostile(config / "AGENTS.md", kind)
    report = await publish_all(
        store, env.settings(claude_code=False, gemini=False, opencode_global=True), clock
    )
    [result] = report.results
    assert result.outcome == "failed"
    assert str(path) in (result.reason or "")


def test_the_service_unit_may_write_in_opencodes_config_only_when_it_is_on(env: Env, tmp_path: Path) -> None:
    environ = {"HOME": str(env.home), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    on = sf.writable_paths(env.settings(opencode_global=True), environ)
    assert tmp_path / "cfg" / "opencode" in on
    assert tmp_path / "cfg" / "opencode" not in sf.writable_paths(env.settings(), environ)
