"""Both phases on local servers: the real ``openai`` client against a loopback fake of Chat Completions
(with and without json_schema), the real ``anthropic`` client against an Anthropic-compatible fake
without batches, built-in tool types or ``output_config``; a real state store."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.clock import FakeClock
from pipeline.errors import LocalOnlyRefused
from pipeline.extract.request import EXTRACT_MAX_TOKENS
from pipeline.extract.run import run_phase1
from pipeline.extract.schema import output_schema
from pipeline.llm import endpoint as endpoints
from pipeline.llm.client import LLMClient, build_client
from pipeline.llm.endpoint import endpoint_for
from pipeline.llm.ratelimit import gate_state
from pipeline.store import Store
from pipeline.store import llm_calls as calls
from tests.fakes import anthropic_api as fa
from tests.fakes import openai_api as fo
from tests.pipeline.extract.support import (
    FakeLoader,
    TagRedactor,
    add_transcript,
    conversation,
    extract_output,
    make_settings,
    transcript_state,
)


@pytest.fixture
def fake_openai() -> Iterator[fo.FakeOpenAIAPI]:
    api = fo.FakeOpenAIAPI().start()
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture
async def clients() -> AsyncIterator[list[Any]]:
    made: list[Any] = []
    yield made
    for c in made:
        await c.aclose()


def openai_settings(tmp_path: Path, base_url: str, **llm: Any) -> Any:
    return make_settings(
        tmp_path,
        base_url,
        llm={
            "provider": "openai",
            "api_key_env": "",
            "extract_model": "qwen3:8b",
            "consolidation_model": "qwen3:32b",
            "local_only": True,
            **llm,
        },
    )


def make(clients: list[Any], settings: Any, store: Store, clock: FakeClock, **env: str) -> LLMClient:
    client = build_client(settings, store=store, clock=clock, env=env, rng=random.Random(7))
    clients.append(client)
    return client


def params(model: str = "qwen3:8b") -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": EXTRACT_MAX_TOKENS,
        "system": [{"type": "text", "text": "Extract.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "<transcript>hello</transcript>"}],
        "output_config": {"format": {"type": "json_schema", "schema": output_schema()}},
    }


async def one_session(store: Store, clock: FakeClock) -> tuple[FakeLoader, int]:
    loader = FakeLoader()
    loader.files["/t/s0.jsonl"] = conversation(2, secret="SECRET-hunter2xyz")
    tid = await add_transcript(store, now=clock.now(), path="/t/s0.jsonl", session_id="sess-0")
    return loader, tid


# ---------------------------------------------------------------- phase 1, OpenAI-compatible


async def test_phase1_on_a_json_schema_server_is_extracted_counted_and_free(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    settings = openai_settings(tmp_path, fake_openai.base_url, batch="on")
    llm = make(clients, settings, store, clock)
    fake_openai.responder = fo.Scripted([fo.chat(json.dumps(extract_output()), prompt=900, completion=300)])
    loader, tid = await one_session(store, clock)

    report = await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)

    assert (report.extracted, report.failed, report.batch) == (
        1,
        0,
        False,
    )  # batch = "on": never batches here
    [body] = fake_openai.chat_requests()
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == output_schema()
    assert body["messages"][0]["role"] == "system"
    assert "SECRET-hunter2xyz" not in json.dumps(body)
    [row] = [r for r in await calls.calls_for(store, str(tid)) if r.outcome == "ok"]
    assert (row.input_tokens, row.output_tokens, row.cost_usd) == (900, 300, 0.0)
    assert (await transcript_state(store, tid))[0] == "extracted"


async def test_llama_cpp_json_schema_500_falls_back_to_its_json_object_form_without_closing_the_gate(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    fake_openai.json_schema = False  # 500 naming response_format, as llama-cpp-python answers
    fake_openai.responder = lambda body: fo.chat(json.dumps(extract_output()))
    llm = make(clients, openai_settings(tmp_path, fake_openai.base_url), store, clock)

    reply = await llm.create(params(), phase="phase1")
    assert json.loads(reply.text) == extract_output()
    kinds = [b.get("response_format", {}).get("type") for b in fake_openai.chat_requests()]
    assert kinds == ["json_schema", "json_object"]
    assert fake_openai.chat_requests()[1]["response_format"]["schema"] == output_schema()
    assert not (await gate_state(store, llm.settings, clock.now())).gated  # a refusal is no outage
    assert (await endpoints.learned(store, llm.endpoint))["structured"] == "json_object"

    await llm.create(params(), phase="phase1")  # learned: straight to the form that works
    assert [b["response_format"]["type"] for b in fake_openai.chat_requests()[2:]] == ["json_object"]


async def test_a_server_refusing_response_format_gets_a_forced_call_whose_cut_off_arguments_fail_the_item(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    def server(body: dict[str, Any]) -> fo.FakeResponse:
        if "response_format" in body:
            return fo.error(400, "response_format is not supported")
        # Arguments cut off by max_tokens, yet finish_reason says tool_calls (llama-cpp-python does).
        return fo.tool_calls([("emit_extract", '{"rollout_summary": "half')])

    fake_openai.responder = server
    settings = openai_settings(tmp_path, fake_openai.base_url)
    llm = make(clients, settings, store, clock)
    loader, tid = await one_session(store, clock)

    report = await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)

    assert (report.extracted, report.failed) == (0, 1)
    state, reason, _ = await transcript_state(store, tid)
    assert state == "failed"
    assert reason is not None
    assert "model output invalid after 2 tries" in reason
    forced = [b for b in fake_openai.chat_requests() if "tool_choice" in b]
    assert len(forced) == 2  # the bad answer retried once, then recorded as a failure
    assert forced[0]["tool_choice"] == {"type": "function", "function": {"name": "emit_extract"}}
    assert (await endpoints.learned(store, llm.endpoint))["structured"] == "function"


async def test_plain_json_in_the_text_is_the_last_way_and_is_validated(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    def server(body: dict[str, Any]) -> fo.FakeResponse:
        if "response_format" in body or "tools" in body:
            return fo.error(422, "unsupported field")
        return fo.chat("```json\n" + json.dumps(extract_output()) + "\n```")

    fake_openai.responder = server
    settings = openai_settings(tmp_path, fake_openai.base_url)
    llm = make(clients, settings, store, clock)
    loader, tid = await one_session(store, clock)
    report = await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)
    assert (report.extracted, report.failed) == (1, 0)
    last = fake_openai.chat_requests()[-1]
    assert "JSON schema" in last["messages"][0]["content"]
    assert "response_format" not in last


async def test_a_429_from_a_local_server_closes_the_gate_as_today(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    fake_openai.responder = lambda body: fo.FakeResponse(
        429, {"error": {"message": "busy"}}, {"retry-after": "120"}
    )
    llm = make(clients, openai_settings(tmp_path, fake_openai.base_url), store, clock)
    with pytest.raises(Exception, match="429"):
        await llm.create(params(), phase="phase1")
    assert (await gate_state(store, llm.settings, clock.now())).gated


# ---------------------------------------------------------------- phase 2, OpenAI-compatible


def memory_root(tmp_path: Path) -> Path:
    root = tmp_path / "ws" / "memories"
    root.mkdir(parents=True)
    return root


def agent_for(llm: LLMClient, root: Path, max_turns: int = 10) -> Any:
    return llm.memory_agent(
        root,
        model="qwen3:32b",
        system="Consolidate.",
        max_bytes_for=lambda rel: 10_000,
        read_only=lambda rel: rel == "raw_memories.md",
        max_turns=max_turns,
        token_budget=1_000_000,
        phase="phase2",
        job_key="global",
    )


async def test_phase2_writes_through_the_memory_function_and_sends_tool_turns_with_empty_content(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    fake_openai.responder = fo.Scripted(
        [
            fo.tool_calls(
                [
                    ("memory", {"command": "create", "path": "/memories/notes.md", "file_text": "# Notes\n"}),
                    ("memory", {"command": "create", "path": "/etc/passwd.md", "file_text": "x"}),
                ]
            ),
            fo.chat("Done."),
        ]
    )
    llm = make(clients, openai_settings(tmp_path, fake_openai.base_url), store, clock)
    root = memory_root(tmp_path)
    agent = agent_for(llm, root)
    outcome = await agent.run("Go.")
    assert (outcome.stopped, outcome.turns) == ("done", 2)
    assert (root / "notes.md").read_text() == "# Notes\n"
    assert not (tmp_path / "etc").exists()
    first, second = fake_openai.chat_requests()
    [tool] = first["tools"]
    assert tool["function"]["name"] == "memory"
    assert set(tool["function"]["parameters"]["properties"]) == {
        "command", "path", "file_text", "old_str", "new_str", "insert_line", "insert_text", "old_path", "new_path",
    }  # fmt: skip
    assistant = second["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == ""
    results = [m for m in second["messages"] if m["role"] == "tool"]
    assert "successfully" in results[0]["content"]
    assert results[1]["content"].startswith("Error: paths must be")
    assert agent.usage.total_tokens == 2 * 160


async def test_phase2_without_any_tool_call_changes_nothing_and_says_done(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    fake_openai.responder = fo.Scripted(
        [fo.chat("", completion=0)]
    )  # tools ignored (llama-cpp default format)
    llm = make(clients, openai_settings(tmp_path, fake_openai.base_url), store, clock)
    root = memory_root(tmp_path)
    outcome = await agent_for(llm, root).run("Go.")
    assert outcome.stopped == "done"
    assert list(root.iterdir()) == []


_n = iter(range(1 << 30))


@pytest.mark.parametrize(
    ("answer", "stopped"),
    [
        (lambda: fo.tool_calls([("memory", '{"command": "view", "pa')]), "malformed"),
        (lambda: fo.tool_calls([("memory", {"command": "delete", "path": f"p{next(_n)}"})]), "malformed"),
        (lambda: fo.tool_calls([("memory", {"command": "view", "path": "/memories"})]), "loop"),
    ],
    ids=["cut-off-arguments", "garbage-paths", "same-call"],
)
async def test_phase2_malformed_calls_and_loops_end_the_run_with_the_reason(
    answer: Any,
    stopped: str,
    tmp_path: Path,
    store: Store,
    clock: FakeClock,
    fake_openai: fo.FakeOpenAIAPI,
    clients: list[Any],
) -> None:
    fake_openai.responder = lambda body: answer()
    llm = make(clients, openai_settings(tmp_path, fake_openai.base_url), store, clock)
    root = memory_root(tmp_path)
    outcome = await agent_for(llm, root).run("Go.")
    assert outcome.stopped == stopped
    assert outcome.turns == 3
    assert outcome.final_text
    assert list(root.iterdir()) == []


async def test_the_consolidation_check_turns_a_stopped_agent_into_a_failed_run() -> None:
    from pipeline.consolidate.agent import _check_outcome
    from pipeline.errors import ConsolidationFailed

    with pytest.raises(ConsolidationFailed, match="stopped during its work: the model made the same"):
        _check_outcome("loop", "its work", "the model made the same tool call 3 times in a row")


# ---------------------------------------------------------------- Anthropic-compatible, no batches etc.


def refusing_anthropic(api: fa.FakeAnthropicAPI) -> None:
    def interceptor(rec: fa.RecordedRequest) -> fa.FakeResponse | None:
        if rec.path == "/v1/messages/batches":
            return fa.bad_request("Not Found", 404)
        body = rec.json or {}
        if "output_config" in body:
            return fa.bad_request("output_config: Extra inputs are not permitted")
        if any(t.get("type") == "memory_20250818" for t in body.get("tools", [])):
            return fa.bad_request("tools.0: unknown tool type memory_20250818")
        return None

    api.interceptor = interceptor


async def test_anthropic_compatible_server_without_batches_or_output_config_extracts_directly(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, clients: list[Any]
) -> None:
    refusing_anthropic(fake_api)
    fake_api.responder = lambda body, headers: fa.tool_use_message(
        fa.tool_use("emit_extract", extract_output()), model="qwen3:8b"
    )
    settings = make_settings(
        tmp_path, fake_api.base_url, llm={"batch": "on", "api_key_env": "", "extract_model": "qwen3:8b"}
    )
    llm = make(clients, settings, store, clock)
    loader, tid = await one_session(store, clock)

    report = await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)

    assert (report.extracted, report.failed, report.batch) == (1, 0, False)
    assert (await transcript_state(store, tid))[0] == "extracted"
    facts = await endpoints.learned(store, llm.endpoint)
    assert (facts["batches"], facts["output_config"]) == (False, False)
    forced = fake_api.message_requests()[-1].json
    assert forced["tool_choice"] == {"type": "tool", "name": "emit_extract"}
    assert "output_config" not in forced
    assert endpoints.describe(facts) == "no Message Batches, no output_config"

    # Learned: the next run neither tries a batch nor output_config.
    before = len(fake_api.requests)
    await llm.create(params("qwen3:8b"), phase="phase1")
    assert [r.path for r in fake_api.requests[before:]] == ["/v1/messages"]
    assert not await llm.can_batch()


async def test_anthropic_compatible_server_refusing_the_builtin_memory_tool_gets_the_function_tool(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, clients: list[Any]
) -> None:
    refusing_anthropic(fake_api)
    fake_api.responder = fa.ScriptedResponder(
        [
            fa.tool_use_message(
                fa.tool_use("memory", {"command": "create", "path": "/memories/a.md", "file_text": "A\n"})
            ),
            fa.message("Done."),
        ]
    )
    settings = make_settings(tmp_path, fake_api.base_url, llm={"api_key_env": ""})
    llm = make(clients, settings, store, clock)
    root = memory_root(tmp_path)
    outcome = await agent_for(llm, root).run("Go.")
    assert outcome.stopped == "done"
    assert (root / "a.md").read_text() == "A\n"
    [tool] = fake_api.message_requests()[1].json["tools"]
    assert tool["name"] == "memory"
    assert "type" not in tool
    assert "command" in tool["input_schema"]["properties"]
    assert (await endpoints.learned(store, llm.endpoint))["builtin_tools"] is False


# ---------------------------------------------------------------- local only, phase-2 endpoint


def test_local_only_refuses_a_hosted_endpoint_in_the_settings(tmp_path: Path) -> None:
    from pipeline.settings import SettingsError as ValidationError

    with pytest.raises(ValidationError, match=r"local_only = true refuses \[llm\] base_url"):
        openai_settings(tmp_path, "https://api.openai.com/v1")
    with pytest.raises(ValidationError, match=r"\[llm.consolidation\] base_url"):
        openai_settings(
            tmp_path, "http://127.0.0.1:1/v1", consolidation={"base_url": "http://gpu.example.com/v1"}
        )
    with pytest.raises(ValidationError, match="is unset"):
        make_settings(tmp_path, None, llm={"local_only": True, "base_url": None})  # type: ignore[arg-type]


async def test_local_only_refuses_settings_made_in_code_before_any_connection(
    tmp_path: Path, store: Store, clock: FakeClock, clients: list[Any]
) -> None:
    import copy

    from pipeline.settings import SettingsError

    settings = openai_settings(tmp_path, "http://127.0.0.1:1/v1")
    with pytest.raises(SettingsError, match="local_only"):  # a changed copy is checked again
        settings.llm.model_copy(update={"base_url": "http://8.8.8.8/v1"})
    llm = copy.copy(settings.llm)
    object.__setattr__(llm, "base_url", "http://8.8.8.8/v1")  # past the settings' own check
    sneaky = copy.copy(settings)
    object.__setattr__(sneaky, "llm", llm)
    with pytest.raises(LocalOnlyRefused, match="local_only"):
        make(clients, sneaky, store, clock)


async def test_a_consolidation_endpoint_of_its_own_takes_phase_2_only(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    second = fo.FakeOpenAIAPI().start()
    try:
        settings = openai_settings(
            tmp_path, fake_openai.base_url, consolidation={"base_url": second.base_url}
        )
        assert endpoint_for(settings.llm, "consolidation").base_url == second.base_url
        llm = make(clients, settings, store, clock)
        fake_openai.responder = lambda body: fo.chat(json.dumps(extract_output()))
        second.responder = lambda body: fo.chat("Nothing to do.")
        await llm.create(params(), phase="phase1")
        await agent_for(llm, memory_root(tmp_path)).run("Go.")
        assert len(fake_openai.chat_requests()) == 1
        assert len(second.chat_requests()) == 1
        assert second.chat_requests()[0]["model"] == "qwen3:32b"
    finally:
        second.stop()


def test_the_sdks_loggers_stay_above_debug_even_when_the_root_logs_everything() -> None:
    import logging

    from pipeline.llm.messages import SDK_LOGGERS, quiet_sdk_loggers

    logging.getLogger("openai").setLevel(logging.DEBUG)
    quiet_sdk_loggers()
    assert "openai" in SDK_LOGGERS
    assert all(logging.getLogger(n).getEffectiveLevel() > logging.DEBUG for n in SDK_LOGGERS)


async def test_the_openai_sdk_retries_nothing_itself(
    tmp_path: Path, store: Store, clock: FakeClock, fake_openai: fo.FakeOpenAIAPI, clients: list[Any]
) -> None:
    fake_openai.responder = lambda body: fo.FakeResponse(
        503, {"error": {"message": "loading"}}, {"retry-after": "1"}
    )
    llm = make(clients, openai_settings(tmp_path, fake_openai.base_url), store, clock)
    with pytest.raises(Exception, match="503"):
        await llm.create(params(), phase="phase1")
    assert len(fake_openai.chat_requests()) == 1  # one request: no SDK retry behind memd's back
    assert (await gate_state(store, llm.settings, clock.now())).gated


def test_estimates_price_a_local_model_at_0_unless_configured(tmp_path: Path) -> None:
    from pipeline.consolidate.dry import first_request_usd, run_cap
    from pipeline.llm.endpoint import phase_cost
    from pipeline.llm.pricing import Usage

    local = openai_settings(tmp_path, "http://127.0.0.1:11434/v1")
    assert run_cap(local, 12_000).usd == 0.0
    assert first_request_usd(local, 50_000) == 0.0
    priced = openai_settings(
        tmp_path, "http://127.0.0.1:11434/v1", input_price_per_mtok=1.0, output_price_per_mtok=2.0
    )
    assert phase_cost(priced.llm, "extract", "qwen3:8b", Usage(1_000_000, 1_000_000)) == 3.0
    # A Claude model behind a local address is a proxy to the paid API: the table's price.
    proxy = make_settings(tmp_path, "http://127.0.0.1:4000")
    assert phase_cost(proxy.llm, "extract", "claude-haiku-5-5", Usage(1_000_000, 0)) == 1.0
