"""Phase 2 end to end on an OpenAI-compatible server: the real ``openai`` client against the loopback
fake, the real workspace, checks, repair turn and memory repository. A model that writes a valid
scope commits; one that calls no tool, or only garbage, ends the run truthfully and publishes nothing."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import pytest

from pipeline.clock import FakeClock
from pipeline.consolidate.run import run_phase2
from pipeline.llm.client import build_client
from pipeline.store import Store
from tests.fakes import openai_api as fo
from tests.pipeline.consolidate.support import Env, make_settings, topic


@pytest.fixture
def fake_openai() -> Iterator[fo.FakeOpenAIAPI]:
    api = fo.FakeOpenAIAPI().start()
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture
async def local(
    env: Env, fake_openai: fo.FakeOpenAIAPI, store: Store, clock: FakeClock
) -> AsyncIterator[Env]:
    settings = make_settings(
        env.tmp_path,
        fake_openai.base_url,
        llm={"provider": "openai", "api_key_env": "", "consolidation_model": "qwen3:32b", "local_only": True},
    )
    llm = build_client(settings, store=store, clock=clock, env={}, rng=random.Random(1))
    try:
        yield replace(env, settings=settings, llm=llm)
    finally:
        await llm.aclose()


def call(command: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return ("memory", {"command": command, **fields})


async def test_a_local_model_that_writes_a_valid_scope_commits_it(
    local: Env, fake_openai: fo.FakeOpenAIAPI
) -> None:
    await local.add_extract(
        "sess-1", summary="Fixed the flaky login test.", raw="- run tests with `make test`"
    )
    index = "# Memory index\n\n- [testing.md](testing.md) — about testing.md\n"
    fake_openai.responder = fo.Scripted(
        [
            fo.tool_calls([call("view", path="/memories")]),
            fo.tool_calls(
                [call("create", path="/memories/testing.md", file_text=topic("Testing", "Run `make test`."))]
            ),
            fo.tool_calls(
                [
                    call("create", path="/memories/MEMORY.md", file_text=index),
                    call(
                        "create",
                        path="/memories/memory_summary.md",
                        file_text="# Summary\n\nThe user works on acme.\n",
                    ),
                ]
            ),
            fo.chat("Consolidated."),
        ]
    )
    report = await run_phase2(local.store, local.settings, local.repo, local.clock, local.llm, local.redactor)
    [scope] = report.scopes
    assert scope.outcome == "committed", scope
    assert (local.repo.path / scope.scope / "testing.md").is_file()
    assert all(m["content"] is not None for b in fake_openai.chat_requests() for m in b["messages"])


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (lambda body: fo.chat("I have consolidated the memory."), "failed validation after the repair turn"),
        (
            lambda body: fo.tool_calls(
                [("memory", '{"command": "create", "path": "/memories/x.md", "file_te')]
            ),
            "stopped during its work: 3 turns in a row of malformed",
        ),
    ],
    ids=["no-tool-call", "cut-off-calls"],
)
async def test_a_local_model_that_calls_no_tool_or_garbage_publishes_nothing(
    answer: Any, why: str, local: Env, fake_openai: fo.FakeOpenAIAPI
) -> None:
    await local.add_extract(
        "sess-1", summary="Fixed the flaky login test.", raw="- run tests with `make test`"
    )
    fake_openai.responder = answer
    head_before = [c.sha for c in await local.repo.log()] if (local.repo.path / ".git").exists() else []
    report = await run_phase2(local.store, local.settings, local.repo, local.clock, local.llm, local.redactor)
    [scope] = report.scopes
    assert scope.outcome == "failed", scope
    assert scope.reason is not None
    assert why in scope.reason
    head_after = [c.sha for c in await local.repo.log()] if (local.repo.path / ".git").exists() else []
    assert len(head_after) <= len(head_before) + 1  # at most the repository's first (empty) commit
    folder = local.repo.path / scope.scope
    assert not (folder / "MEMORY.md").exists()
