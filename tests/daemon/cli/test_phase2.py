"""`memd inbox`, `memd forget`, `memd memories` end to end: SQLite store and memory repo in tmp_path."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from daemon.exits import Exit
from pipeline.clock import SystemClock
from pipeline.consolidate.run import run_phase2
from pipeline.llm.client import build_client
from pipeline.projects import scope_for
from pipeline.redaction import Redactor
from pipeline.store import open_store
from tests.configs import write_config
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, write_memory

SCOPE = scope_for("/work/acme")


def _config(tmp_path: Path, base_url: str) -> Path:
    return write_config(
        tmp_path,
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "home" / ".claude" / "projects"}"\n'
        f'[llm]\nbase_url = "{base_url}"\n'
        '[review]\nmode = "inbox"\n',
    )


async def _consolidate(tmp_path: Path, config: Path) -> str:
    from daemon.config import load_settings

    settings = load_settings(config).settings
    store = await open_store(settings.paths.state_db)
    clock = SystemClock()
    llm = build_client(
        settings, store=store, clock=clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY}, rng=random.Random(1)
    )
    try:
        env = Env(tmp_path, store, clock, None, settings, llm, Redactor(b"cli-test-key-0123456789"))  # type: ignore[arg-type]
        await env.add_extract("sess-1")
        report = await run_phase2(store, settings, env.repo, clock, llm, env.redactor)
        [scope] = report.scopes
        assert scope.outcome == "pending_review", scope
        assert scope.run_id is not None
        return scope.run_id
    finally:
        await llm.aclose()
        await store.close()


def test_review_read_and_forget_from_the_command_line(tmp_path: Path, fake_api: FakeAnthropicAPI) -> None:
    config = _config(tmp_path, fake_api.base_url)
    fake_api.responder = ScriptedResponder(write_memory())
    run_id = asyncio.run(_consolidate(tmp_path, config))
    runner = CliRunner()
    base = ["--config", str(config)]
    env = {"ANTHROPIC_API_KEY": FAKE_API_KEY}

    listed = runner.invoke(cli, [*base, "inbox"], env=env)
    assert listed.exit_code == 0, listed.output
    assert run_id in listed.output
    assert SCOPE in listed.output
    assert "+1 -0" in listed.output

    shown = runner.invoke(cli, [*base, "inbox", "show", run_id], env=env)
    assert shown.exit_code == 0, shown.output
    assert "memd: consolidate" in shown.output
    assert f"+++ b/{SCOPE}/testing.md" in shown.output

    empty = runner.invoke(cli, [*base, "memories", "show"], env=env)
    assert "no memory yet" in empty.output

    accepted = runner.invoke(cli, [*base, "inbox", "accept", run_id], env=env)
    assert accepted.exit_code == 0, accepted.output
    assert runner.invoke(cli, [*base, "inbox"], env=env).output.startswith("the inbox is empty")
    again = runner.invoke(cli, [*base, "inbox", "accept", run_id], env=env)
    assert again.exit_code == 1
    assert "no pending run" in again.output

    scopes = runner.invoke(cli, [*base, "memories", "show"], env=env)
    assert scopes.exit_code == 0
    assert SCOPE in scopes.output
    assert "1 topic(s)" in scopes.output
    one = runner.invoke(cli, [*base, "memories", "show", SCOPE], env=env)
    assert one.exit_code == 0, one.output
    assert "The user works on acme." in one.output
    assert "testing.md" in one.output
    assert "1 source(s)" in one.output
    topic = runner.invoke(cli, [*base, "memories", "show", SCOPE, "testing"], env=env)
    assert topic.exit_code == 0
    assert 'sources: ["sess-1"]' in topic.output
    missing = runner.invoke(cli, [*base, "memories", "show", SCOPE, "../../etc/passwd"], env=env)
    assert missing.exit_code == 1
    log = runner.invoke(cli, [*base, "memories", "log", SCOPE], env=env)
    assert log.exit_code == 0
    assert "memd: consolidate" in log.output

    both = runner.invoke(cli, [*base, "forget", "--session", "x", "--project", "y"], env=env)
    assert both.exit_code == Exit.USAGE
    unknown = runner.invoke(cli, [*base, "forget", "--session", "no-such-session"], env=env)
    assert unknown.exit_code == 1
    assert "nothing to forget" in unknown.output
    forgot = runner.invoke(cli, [*base, "forget", "--session", "sess-1"], env=env)
    assert forgot.exit_code == 0, forgot.output
    assert f"{SCOPE}: 1 extract(s) forgotten" in forgot.output
    assert f"{SCOPE}: cleared" in forgot.output
    assert "D testing.md" in forgot.output
    assert "git history" in forgot.output
    assert not (tmp_path / "memory" / SCOPE).exists()
    assert len(fake_api.message_requests()) == 4
