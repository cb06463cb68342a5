"""The whole daemon against the loopback fake of the Messages API, killed mid-extraction.

`memd run` extracts the fixture sessions; the first extraction request never gets its answer
because the daemon is killed with SIGKILL while waiting for it. A new `memd run --once` (in this
process) takes over at once, extracts every session exactly once, consolidates, publishes, and
stops cleanly; the memory repository is a sound git repository with nothing half-written in it.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from daemon.config import load_settings
from pipeline.store import open_store
from pipeline.store.schema import stage1_outputs, transcripts
from tests.daemon.memd_inprocess import memd
from tests.daemon.memd_process import Memd
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, json_message
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import write_memory
from tests.pipeline.extract.support import extract_output

pytestmark = [pytest.mark.timeout(300)]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts" / "claude_code" / "projects"
WAIT_S = 90
FIRST_CALL_WAIT_S = 60


class Responder:
    """Extraction answers (the first one held back until the test says so) and scripted
    consolidation conversations (the turn is the number of assistant messages so far)."""

    def __init__(self) -> None:
        self.first_extraction_seen = threading.Event()
        self.release = threading.Event()
        self.extractions = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        if body.get("tools"):
            turns = write_memory()
            done = sum(1 for m in body["messages"] if m["role"] == "assistant")
            return turns[min(done, len(turns) - 1)]
        with self._lock:
            self.extractions += 1
            first = self.extractions == 1
        if first:
            self.first_extraction_seen.set()
            self.release.wait(WAIT_S)  # the daemon that asked is killed meanwhile
        return json_message(extract_output())


@pytest.fixture
def api() -> Iterator[tuple[FakeAnthropicAPI, Responder]]:
    fake = FakeAnthropicAPI().start()
    responder = Responder()
    fake.responder = responder
    try:
        yield fake, responder
    finally:
        responder.release.set()
        fake.stop()


def test_killed_mid_extraction_then_restarted_extracts_every_session_once(
    tmp_path: Path, api: tuple[FakeAnthropicAPI, Responder]
) -> None:
    fake, responder = api
    root = tmp_path / "home" / ".claude" / "projects"
    for src in FIXTURES.rglob("*"):
        if src.is_file():
            dest = root / src.relative_to(FIXTURES)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))}
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "MEMD_LLM__BASE_URL": fake.base_url,
            "MEMD_LLM__BATCH": "off",
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
            "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(root),
            "MEMD_SOURCES__CODEX__ROOT": str(tmp_path / "none"),
            "MEMD_SOURCES__GEMINI_CLI__ROOT": str(tmp_path / "none"),
            "MEMD_SOURCES__PI__ROOT": str(tmp_path / "none"),
        }
    )
    settings = load_settings(None, env=env).settings

    first = Memd(tmp_path, "first", env, "run")
    try:
        first.wait_for("READY=1")
        assert responder.first_extraction_seen.wait(FIRST_CALL_WAIT_S), first.stderr()[-3000:]
        first.proc.kill()
        assert first.wait() == -signal.SIGKILL
    finally:
        first.close()
        responder.release.set()

    second = memd(env, "--log-level", "INFO", "run", "--once")  # the take-over is logged at INFO
    assert second.returncode == 0, second.stdout + second.stderr[-3000:]
    summary = second.stdout.strip().splitlines()[-1]
    assert "extract ok" in summary, second.stdout
    assert "consolidate ok" in summary, second.stdout
    log = second.stderr
    assert "instance_taken_over" in log
    # the one-shot command logs readable key=value lines (the daemon logs JSON)
    handed_back = re.search(r'jobs_handed_back(?:": |=)(\d+),? "?leases_released', log)
    assert handed_back, log[-3000:]
    assert int(handed_back.group(1)) >= 1  # the job the killed daemon held came back at once

    async def outputs() -> tuple[dict[int, int], dict[str, int]]:
        store = await open_store(settings.paths.state_db)
        try:
            async with store.read() as conn:
                per_transcript = dict(
                    (
                        await conn.execute(
                            select(stage1_outputs.c.transcript_id, func.count()).group_by(
                                stage1_outputs.c.transcript_id
                            )
                        )
                    ).all()
                )
                states = dict(
                    (
                        await conn.execute(
                            select(transcripts.c.state, func.count()).group_by(transcripts.c.state)
                        )
                    ).all()
                )
        finally:
            await store.close()
        return per_transcript, states

    per_transcript, states = asyncio.run(outputs())
    assert len(per_transcript) == 3
    assert set(per_transcript.values()) == {
        1
    }  # each session extracted once: no duplicate, no superseded extra
    assert states.get("eligible", 0) == 0
    assert states["extracted"] == 3

    repo = settings.paths.memory_dir

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60)

    assert git("fsck", "--strict").returncode == 0
    assert git("status", "--porcelain").stdout == ""
    log = git("log", "--format=%s").stdout
    assert log.strip(), "no consolidation was committed"
    tracked = git("ls-files").stdout.splitlines()
    assert any(path.endswith("MEMORY.md") for path in tracked)
