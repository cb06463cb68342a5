"""`memd inbox accept` publishes at once; `reject` leaves the published memory as it was."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from pipeline.clock import SystemClock
from pipeline.consolidate.run import run_phase2
from pipeline.llm.client import build_client
from pipeline.projects import scope_for
from pipeline.redaction import Redactor
from pipeline.store import open_store
from tests.configs import write_config
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, topic, write_memory

ENV = {"ANTHROPIC_API_KEY": FAKE_API_KEY}


def project_of(tmp_path: Path) -> str:
    return str(tmp_path / "acme")


def config_for(tmp_path: Path, base_url: str) -> Path:
    (tmp_path / "home" / ".claude" / "projects").mkdir(parents=True)
    (tmp_path / "acme").mkdir()
    return write_config(
        tmp_path,
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "home" / ".claude" / "projects"}"\n'
        f'[llm]\nbase_url = "{base_url}"\n'
        '[review]\nmode = "inbox"\n'
        "[schedule]\nconsolidate_cooldown_minutes = 0\n"
        "[publish]\ngemini = false\n",
    )


def propose(tmp_path: Path, config: Path, session: str, *, project: str | None = None, **extract: str) -> str:
    """Add an extract of ``session`` (in ``project``, default ``project_of``) and run phase 2: the id
    of the run waiting in the inbox."""

    async def go() -> str:
        from daemon.config import load_settings
        from pipeline.machine import machine_id

        settings = load_settings(config).settings
        store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
        clock = SystemClock()
        llm = build_client(settings, store=store, clock=clock, env=ENV, rng=random.Random(1))
        try:
            env = Env(tmp_path, store, clock, None, settings, llm, Redactor(b"cli-test-key-0123456789"))  # type: ignore[arg-type]
            where = project or project_of(tmp_path)
            await env.add_extract(session, project=where, **extract)  # type: ignore[arg-type]
            report = await run_phase2(store, settings, env.repo, clock, llm, env.redactor)
            [scope] = [s for s in report.scopes if s.scope == scope_for(where)]
            assert scope.outcome == "pending_review", scope
            assert scope.run_id is not None
            return scope.run_id
        finally:
            await llm.aclose()
            await store.close()

    return asyncio.run(go())


def published(tmp_path: Path) -> dict[str, str]:
    """memd's published copy in Claude Code's folders: path -> text."""
    root = tmp_path / "home" / ".claude" / "projects"
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.glob("*/memory/*.md"))}


def test_accept_publishes_at_once_and_reject_leaves_the_published_memory(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = config_for(tmp_path, fake_api.base_url)
    base = ["--config", str(config)]
    runner = CliRunner()
    fake_api.responder = ScriptedResponder(write_memory())
    first = propose(tmp_path, config, "sess-1")
    assert published(tmp_path) == {}

    listed = runner.invoke(cli, [*base, "inbox"], env=ENV)
    assert project_of(tmp_path) in listed.output  # each scope with its project folder
    shown = runner.invoke(cli, [*base, "inbox", "show", first], env=ENV)
    assert f"({project_of(tmp_path)})" in shown.output.splitlines()[0]

    accepted = runner.invoke(cli, [*base, "inbox", "accept", first], env=ENV)
    assert accepted.exit_code == 0, accepted.output
    copy = published(tmp_path)
    assert any(name.endswith("memd-testing.md") for name in copy), accepted.output
    assert "Run `make test`." in "".join(copy.values())
    assert "published" in accepted.output

    fake_api.responder = ScriptedResponder(
        write_memory(
            {
                "testing.md": topic("Testing", "Run `make test`."),
                "deploy.md": topic("Deploy", "Deploy with `fly deploy`."),
            }
        )
    )
    second = propose(tmp_path, config, "sess-2", summary="Deploys.")
    rejected = runner.invoke(cli, [*base, "inbox", "reject", second], env=ENV)
    assert rejected.exit_code == 0, rejected.output
    assert published(tmp_path) == copy
    assert "published copies stay as they were" in rejected.output
