"""Whole cycles of the real pipeline (``daemon/app.py``'s steps run by ``daemon/service/cycle.py``) in this
process, against the loopback fake of the Messages API, with every agent's transcripts root under one
throwaway home: for the tests and the quality benchmark that replay sessions through both phases.

``Answers`` answers both phases' requests; ``home_env(tmp, base_url)`` is the environment (the
fake key and URL, or the real API; no Message Batches; every session ready at once); ``agent_folder(env, source)`` is where ``tests/pipeline/sources/shell_sessions``
writes that agent's sessions; ``async with running(settings, env) as cycle:`` is one runtime (one
store opened, one set of steps) whose ``await cycle()`` runs a whole cycle; leaving it and entering
again is a restart.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from daemon.app import pipeline_steps
from daemon.config import load_settings
from daemon.runtime import open_store_here
from daemon.service.cycle import STEP_ORDER, CycleResult, StepEnv, run_cycle
from pipeline.clock import Clock, SystemClock
from pipeline.settings import Settings
from tests.fakes.anthropic_api import FakeResponse, json_message
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import write_memory
from tests.pipeline.extract.support import extract_output
from tests.pipeline.sources.shell_sessions import ROOT_UNDER
from tests.source_names import SourceName

_ROOT_KEYS = {source: f"MEMD_SOURCES__{source.upper()}__ROOT" for source in SourceName}
_FOREIGN = ("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_", "ANTHROPIC_", "CODEX_HOME", "COPILOT_HOME", "QWEN_")

Cycle = Callable[..., Awaitable[CycleResult]]


def home_env(tmp: Path, base_url: str | None, *, api_key: str = FAKE_API_KEY, **extra: str) -> dict[str, str]:
    """This process's environment without memd's, the agents' or the API's variables: a home under
    ``tmp``, every agent's root in it (made, empty), the fake key and API at ``base_url`` (None:
    the real API, with ``api_key``), direct calls, sessions ready as soon as they are seen; then
    ``extra`` (``MEMD_...`` overrides)."""
    home = tmp / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    if base_url is not None:
        env["MEMD_LLM__BASE_URL"] = base_url
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_API_KEY": api_key,
            "MEMD_LLM__BATCH": "off",
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
        }
    )
    for source in SourceName:
        root = home / "agents" / source / ROOT_UNDER[source]
        root.mkdir(parents=True, exist_ok=True)
        env[_ROOT_KEYS[source]] = str(root)
    env.update(extra)
    return env


def agent_folder(env: dict[str, str], source: SourceName) -> Path:
    """The folder to give ``shell_sessions.write_exchanges`` for ``source`` under ``env``'s home."""
    return Path(env["HOME"]) / "agents" / source


def settings_of(env: dict[str, str]) -> Settings:
    return load_settings(None, env=env).settings


@contextlib.asynccontextmanager
async def running(
    settings: Settings, env: dict[str, str], *, clock: Clock | None = None
) -> AsyncIterator[Cycle]:
    """One runtime on the store and memory of ``settings``: ``await cycle(names=STEP_ORDER)`` runs a
    cycle's steps as the daemon does and returns its ``CycleResult``."""
    clock = clock or SystemClock()
    store = await open_store_here(settings)
    steps = pipeline_steps(StepEnv(store, lambda: settings, "cycle-support"), clock=clock, environ=env)

    async def cycle(names: Iterable[str] = STEP_ORDER) -> CycleResult:
        return await run_cycle(steps.steps, names, clock=clock)

    try:
        yield cycle
    finally:
        await steps.aclose()
        await store.close()


def memory_head(settings: Settings) -> str | None:
    """The memory repository's HEAD commit, or None before its first commit."""
    done = subprocess.run(
        ["git", "-C", str(settings.paths.memory_dir), "rev-parse", "--verify", "-q", "HEAD"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout.strip() or None


class Answers:
    """The fake API's answers for whole cycles: a phase-1 request gets ``extract(body)`` as its JSON
    output; a consolidation conversation gets the turns ``consolidate(body)`` returns, the next one
    at each request (the turn is the number of assistant messages so far)."""

    def __init__(
        self,
        extract: Callable[[dict[str, Any]], dict[str, Any]] = lambda body: extract_output(),
        consolidate: Callable[[dict[str, Any]], list[FakeResponse]] = lambda body: write_memory(),
    ) -> None:
        self.extract, self.consolidate = extract, consolidate

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        if body.get("tools"):
            turns = self.consolidate(body)
            done = sum(1 for m in body["messages"] if m["role"] == "assistant")
            return turns[min(done, len(turns) - 1)]
        return json_message(self.extract(body))
