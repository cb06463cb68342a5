"""The LLM client against the loopback fake API: what it sends, what it records, how it fails."""

from __future__ import annotations

import logging
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from pipeline import ratelimit_rule as rule
from pipeline.clock import FakeClock
from pipeline.errors import LLMAuthFailed, LLMRejected, LLMUnavailable, NoAPIKey
from pipeline.llm import gate_state
from pipeline.llm.backoff import translate
from pipeline.llm.client import build_client
from pipeline.llm.pricing import Usage, cost_usd
from pipeline.store import Store, kv
from pipeline.store import llm_calls as calls
from pipeline.store.read.gate import gate
from pipeline.store.read.rows import on_store
from tests.conftest import sqlite_only
from tests.fakes import anthropic_api as fa
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.extract.support import make_settings

PARAMS = {"model": "claude-haiku-5-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


@sqlite_only
async def test_no_key_names_the_variable(tmp_path: Path, store: Store, clock: FakeClock) -> None:
    settings = make_settings(tmp_path, llm={"api_key_env": "MEMD_TEST_KEY"})
    with pytest.raises(NoAPIKey, match="MEMD_TEST_KEY") as err:
        build_client(settings, store=store, clock=clock, env={})
    assert "\n" not in str(err.value)


@sqlite_only
async def test_the_key_comes_from_api_key_env_and_the_url_from_anthropic_base_url(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    settings = make_settings(tmp_path, llm={"base_url": None, "api_key_env": "MY_ANTHROPIC_KEY"})
    env = {
        "MY_ANTHROPIC_KEY": FAKE_API_KEY,
        "ANTHROPIC_API_KEY": "not-this-one",
        "ANTHROPIC_BASE_URL": fake_api.base_url,
    }
    fake_api.expected_key = FAKE_API_KEY
    llm = llm_factory(settings, store, clock, env=env)
    assert (await llm.create(PARAMS, phase="extract")).text == "ok"
    [sent] = fake_api.message_requests()
    assert sent.headers["authorization"] == f"Bearer {FAKE_API_KEY}"


async def test_call_records_usage_cost_and_rate_limits(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    reset = clock.now() + timedelta(seconds=40)
    headers = fa.ratelimit_headers(requests=(50, 40), input_tokens=(100_000, 30_000), reset=reset)
    usage = fa.usage(1200, 300, cache_read=800, cache_write=100)
    fake_api.responder = fa.ScriptedResponder([fa.message("hello", usage_=usage, headers=headers)])
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)

    reply = await llm.create(PARAMS, phase="extract", job_key="7", prompt_hash="abc")

    assert reply.text == "hello"
    assert reply.usage == Usage(1200, 300, 800, 100)
    [sent] = fake_api.message_requests()
    assert sent.headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert sent.json["model"] == "claude-haiku-5-5"
    [row] = await calls.calls_for(store, "7")
    assert (row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cache_write_tokens) == (
        1200,
        300,
        800,
        100,
    )
    assert row.cost_usd == pytest.approx(cost_usd("claude-haiku-5-5", reply.usage))
    assert row.cost_usd > 0
    assert (row.phase, row.outcome, row.batch, row.prompt_hash) == ("extract", "ok", False, "abc")
    families = rule.families_from_json(await kv.get(store, rule.KV_RATE_LIMIT))
    assert families["requests"].remaining == 40
    assert families["input_tokens"].reset == reset.replace(microsecond=0)
    seen = await on_store(
        store,
        lambda rows: gate(rows, threshold=0, daily_token_budget=None, daily_budget_usd=None, now=clock.now()),
    )
    assert seen.remaining_percent == pytest.approx(30.0)  # what the gate reads of it


async def test_429_gives_not_before_from_retry_after_without_sdk_retry(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    fake_api.responder = fa.ScriptedResponder([fa.rate_limited(120)])
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)

    with pytest.raises(LLMUnavailable) as err:
        await llm.create(PARAMS, phase="extract", job_key="1")

    assert err.value.status == 429
    assert err.value.not_before is not None
    wait = (err.value.not_before - clock.now()).total_seconds()
    assert 120 <= wait <= 120 * 1.2
    assert len(fake_api.message_requests()) == 1  # memd schedules the retry, not the SDK
    gate = await gate_state(store, llm.settings, clock.now())
    assert gate.gated
    assert gate.reset_at == err.value.not_before
    assert "backing off" in (gate.reason or "")
    clock.advance(wait + 1)
    assert not (await gate_state(store, llm.settings, clock.now())).gated
    [row] = await calls.calls_for(store, "1")
    assert row.outcome == "LLMUnavailable"
    assert row.input_tokens == 0


async def test_retry_after_is_capped_and_reset_headers_are_used(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    reset = clock.now() + timedelta(seconds=300)
    exhausted = fa.ratelimit_headers(requests=(50, 0), reset=reset)
    fake_api.responder = fa.ScriptedResponder(
        [
            fa.rate_limited(86_400),
            fa.rate_limited(None, headers=exhausted),
            fa.overloaded(),
            fa.server_error(503),
        ]
    )
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url, llm={"max_backoff_s": 900}), store, clock)

    waits = []
    statuses = []
    for _ in range(4):
        with pytest.raises(LLMUnavailable) as err:
            await llm.create(PARAMS, phase="extract")
        assert err.value.not_before is not None
        waits.append((err.value.not_before - clock.now()).total_seconds())
        statuses.append(err.value.status)

    assert waits[0] == 900  # a day asked for, capped by llm.max_backoff_s
    assert 300 <= waits[1] <= 360  # from the exhausted family's reset
    assert 30 <= waits[2] <= 36
    assert 30 <= waits[3] <= 36
    assert statuses == [429, 429, 529, 503]


@sqlite_only
async def test_400_is_rejected_with_the_api_message(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    fake_api.responder = fa.ScriptedResponder(
        [fa.bad_request("prompt is too long: 250000 tokens > 200000 maximum")]
    )
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)
    with pytest.raises(LLMRejected, match="prompt is too long: 250000 tokens") as err:
        await llm.create(PARAMS, phase="extract")
    assert err.value.status == 400
    assert not (await gate_state(store, llm.settings, clock.now())).gated


@sqlite_only
async def test_bad_key_stops_instead_of_failing_items(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    fake_api.expected_key = "another-key"
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)
    with pytest.raises(LLMAuthFailed, match="401"):
        await llm.create(PARAMS, phase="extract")


def test_timeouts_and_connection_errors_are_retryable(clock: FakeClock) -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    for exc in (anthropic.APITimeoutError(request), anthropic.APIConnectionError(request=request)):
        err = translate(exc, now=clock.now(), attempt=3, max_backoff_s=3600, rng=random.Random(1))
        assert isinstance(err, LLMUnavailable)
        assert err.not_before is not None
        assert 120 <= (err.not_before - clock.now()).total_seconds() <= 144  # 30 s * 2**2, +<=20 % jitter


async def test_batches_create_poll_and_read(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    fake_api.auto_end_batches = False
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)
    batch_id = await llm.submit_batch([("a", PARAMS), ("b", PARAMS), ("c", PARAMS)], phase="extract")
    assert not (await llm.batch_info(batch_id, phase="extract")).ended

    fake_api.responder = lambda body, headers: fa.message("done", usage_=fa.usage(10, 5))
    fake_api.end_batch(batch_id, {"b": fa.expired(), "c": fa.errored("boom", "invalid_request_error")})
    info = await llm.batch_info(batch_id, phase="extract")
    assert info.ended
    assert info.counts["succeeded"] == 1
    assert info.counts["expired"] == 1
    entries = {e.custom_id: e for e in await llm.batch_results(batch_id, phase="extract")}

    assert entries["a"].kind == "succeeded"
    assert entries["a"].reply is not None
    assert entries["a"].reply.text == "done"
    assert entries["a"].reply.usage == Usage(10, 5)
    assert entries["b"].kind == "expired"
    assert (entries["c"].kind, entries["c"].error_type, entries["c"].error) == (
        "errored",
        "invalid_request_error",
        "boom",
    )
    [create] = [r for r in fake_api.requests if r.path == "/v1/messages/batches" and r.method == "POST"]
    assert [r["custom_id"] for r in create.json["requests"]] == ["a", "b", "c"]


@sqlite_only
async def test_count_tokens_uses_the_api(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    fake_api.count_tokens = lambda body: 4242
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)
    assert await llm.count_tokens({**PARAMS, "system": "s"}) == 4242
    [sent] = [r for r in fake_api.requests if r.path == "/v1/messages/count_tokens"]
    assert "max_tokens" not in sent.json
    assert sent.json["system"] == "s"


@sqlite_only
async def test_the_sdk_logger_never_logs_bodies(
    tmp_path: Path, store: Store, clock: FakeClock, llm_factory: Any
) -> None:
    llm_factory(make_settings(tmp_path), store, clock)
    assert logging.getLogger("anthropic").getEffectiveLevel() >= logging.WARNING


@sqlite_only
async def test_rate_limit_snapshot_is_plain_json(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    fake_api.default_headers = fa.ratelimit_headers(output_tokens=(20_000, 1_000))
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)
    await llm.create(PARAMS, phase="extract")
    value = await kv.get(store, "rate_limit")
    assert value["families"]["output_tokens"] == {
        "limit": 20_000,
        "remaining": 1_000,
        "reset": value["families"]["output_tokens"]["reset"],
    }
    assert value["observed_at"] == clock.now().isoformat()


@pytest.mark.parametrize(
    ("provider", "env", "sdk_class"),
    [
        ("bedrock", {"AWS_REGION": "us-east-1"}, "AsyncAnthropicBedrock"),
        (
            "vertex",
            {"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "p"},
            "AsyncAnthropicVertex",
        ),
    ],
)
async def test_other_clouds_use_the_sdks_own_clients_without_batches(
    provider: str, env: dict[str, str], sdk_class: str, tmp_path: Path, clock: FakeClock, llm_factory: Any
) -> None:
    settings = make_settings(tmp_path, llm={"provider": provider, "base_url": None})
    llm = llm_factory(settings, None, clock, env=env)  # no Anthropic key needed
    assert type(llm.sdk).__name__ == sdk_class
    assert not llm.supports_batches


async def test_memory_agent_works_in_its_root_and_ledgers_every_turn_and_failure(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    root = tmp_path / "scratch" / "global"
    root.mkdir(parents=True)
    fake_api.responder = fa.ScriptedResponder(
        [
            fa.tool_use_message(
                fa.tool_use("memory", {"command": "create", "path": "/memories/a.md", "file_text": "x\n"}),
                fa.tool_use("memory", {"command": "create", "path": "/memories/raw.md", "file_text": "y\n"}),
            ),
            fa.message("done", usage_=fa.usage(10, 5)),
            fa.rate_limited(60),
        ]
    )
    llm = llm_factory(make_settings(tmp_path, fake_api.base_url), store, clock)
    agent = llm.memory_agent(
        root,
        model="claude-sonnet-5-5",
        system="sys",
        max_bytes_for=lambda _rel: 1_000,
        read_only=lambda rel: rel == "raw.md",
        max_turns=5,
        token_budget=100_000,
        phase="phase2",
        job_key="global",
        prompt_hash="h",
    )

    outcome = await agent.run("consolidate")

    assert (outcome.stopped, outcome.turns, agent.turns) == ("done", 2, 2)
    assert (root / "a.md").read_text() == "x\n"
    assert not (root / "raw.md").exists()  # read_only reached the tool
    [first, _second] = fake_api.message_requests()
    assert first.json["system"] == "sys"
    rows = await calls.calls_for(store, "global")
    assert [(r.phase, r.outcome, r.prompt_hash) for r in rows] == [("phase2", "ok", "h")] * 2
    assert agent.usage == Usage(
        input_tokens=sum(r.input_tokens for r in rows), output_tokens=sum(r.output_tokens for r in rows)
    )
    with pytest.raises(LLMUnavailable):
        await agent.run("repair")
    assert [r.outcome for r in await calls.calls_for(store, "global")][-1] == "LLMUnavailable"
    assert (await gate_state(store, llm.settings, clock.now())).gated
