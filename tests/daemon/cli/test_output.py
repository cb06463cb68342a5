"""What commands print: a short summary of what changed, what failed and what waits, every row
behind ``-v``, no log line on stdout, nothing hard-wrapped or cut."""

from __future__ import annotations

import asyncio
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from daemon.config import load_settings
from daemon.exits import Exit
from pipeline.clock import SystemClock
from pipeline.redaction import Redactor
from pipeline.store import open_store
from tests.daemon.cli.test_phase2 import _config
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, write_memory

ENV = {"ANTHROPIC_API_KEY": FAKE_API_KEY}


async def _extract(tmp_path: Path, config: Path, session_id: str) -> None:
    """An extract of ``session_id`` for /work/acme, ready to consolidate."""
    settings = load_settings(config).settings
    store = await open_store(settings.paths.state_db)
    try:
        env = Env(tmp_path, store, SystemClock(), None, settings, None, Redactor(b"cli-test-key-0123456789"))  # type: ignore[arg-type]
        await env.add_extract(session_id)
    finally:
        await store.close()


def test_run_once_in_inbox_mode_says_how_many_runs_wait_and_how_to_review_them(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _config(tmp_path, fake_api.base_url)
    fake_api.responder = ScriptedResponder(write_memory())
    asyncio.run(_extract(tmp_path, config, "sess-1"))
    done = CliRunner().invoke(cli, ["--config", str(config), "run", "--once"], env=ENV)
    assert done.exit_code == Exit.OK, done.output
    assert "consolidate  ok" in done.stdout  # the run made now waits in the inbox
    assert "1 consolidation run waits for review: `memd inbox`" in done.stdout
