"""Nothing changed, nothing paid: a whole cycle (scan, extract, consolidate, sync, publish) that
finds no new, changed or removed input makes no request to the model API and no commit in the
memory, in the same runtime and after a restart (a fresh runtime on the same store and memory)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.vocabulary import StepOutcome
from tests.daemon.cycle_support import Answers, agent_folder, home_env, memory_head, running, settings_of
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sources.shell_sessions import Exchange, write_exchanges
from tests.source_names import SourceName

pytestmark = [pytest.mark.timeout(180)]


@pytest.fixture
def api() -> Iterator[FakeAnthropicAPI]:
    fake = FakeAnthropicAPI().start()
    fake.responder = Answers()
    try:
        yield fake
    finally:
        fake.stop()


def sessions(env: dict[str, str]) -> None:
    for n, source in enumerate((SourceName.CLAUDE_CODE, SourceName.CODEX)):
        exchanges = [
            Exchange(f"Use port {8000 + n} for the staging server.", (("make staging", "ok"),)),
            Exchange("Run the tests with make test.", (("make test", "12 passed"),)),
        ]
        write_exchanges(
            source, agent_folder(env, source), exchanges, sid=f"0c0c0000-0000-4000-8000-00000000000{n}"
        )


def test_a_cycle_with_nothing_new_calls_no_model_and_commits_nothing(
    tmp_path: Path, api: FakeAnthropicAPI
) -> None:
    env = home_env(tmp_path, api.base_url)
    sessions(env)
    settings = settings_of(env)

    async def scenario() -> None:
        async with running(settings, env) as cycle:
            first = await cycle()
            assert not first.failures, first.summary()
            paid, head = len(api.requests), memory_head(settings)
            assert api.message_requests()  # the first cycle did the work
            assert head is not None
            again = await cycle()
            assert not again.failures, again.summary()
            assert len(api.requests) == paid, api.paths()[paid:]
            assert memory_head(settings) == head
            outcomes = {r.name: r.outcome for r in again.results}
            assert outcomes["extract"] == outcomes["consolidate"] == StepOutcome.SKIPPED, again.summary()
        async with running(settings, env) as cycle:  # a restart: a fresh runtime, the same store and memory
            restarted = await cycle()
            assert not restarted.failures, restarted.summary()
            assert len(api.requests) == paid, api.paths()[paid:]
            assert memory_head(settings) == head

    asyncio.run(scenario())
