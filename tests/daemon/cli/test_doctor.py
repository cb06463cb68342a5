"""`memd doctor` against loopback fakes: the real CLI, the real ``openai`` / ``anthropic`` clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from daemon.cli import cli
from tests.fakes import anthropic_api as fa
from tests.fakes import openai_api as fo


@pytest.fixture
def fake_openai() -> Iterator[fo.FakeOpenAIAPI]:
    api = fo.FakeOpenAIAPI().start()
    try:
        yield api
    finally:
        api.stop()


def capable(body: dict[str, Any]) -> fo.FakeResponse:
    if body.get("tool_choice") == "auto":
        return fo.tool_calls([("memory", {"command": "view", "path": "/memories"})])
    if "tool_choice" in body:
        return fo.tool_calls([("answer", {"ok": True})])
    return fo.chat('{"ok": true}')


def doctor(tmp_path: Path, llm: str, *args: str) -> Result:
    config = tmp_path / "config.toml"
    config.write_text("[llm]\n" + llm)
    env = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "st"),
    }
    return CliRunner().invoke(cli, ["--config", str(config), "doctor", *args], env=env)


def openai_llm(base_url: str, **extra: str) -> str:
    values = {
        "provider": "openai",
        "base_url": base_url,
        "api_key_env": "",
        "extract_model": "qwen3:8b",
        "consolidation_model": "qwen3:32b",
        **extra,
    }
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()) + "local_only = true\n"


def test_a_capable_local_server_runs_both_phases(tmp_path: Path, fake_openai: fo.FakeOpenAIAPI) -> None:
    fake_openai.responder = capable
    told = doctor(tmp_path, openai_llm(fake_openai.base_url))
    assert told.exit_code == 0, told.output
    assert "phase 1 (extraction) can run" in told.output
    assert "phase 2 (consolidation) can run" in told.output
    assert "yes (response_format json_schema)" in told.output
    assert "not used (OpenAI-compatible server)" in told.output


def test_llama_cpp_like_server_without_tool_calling_names_the_setting(
    tmp_path: Path, fake_openai: fo.FakeOpenAIAPI
) -> None:
    fake_openai.json_schema = False  # 500 naming response_format
    fake_openai.responder = lambda body: fo.chat('{"ok": true}')  # tools ignored
    told = doctor(tmp_path, openai_llm(fake_openai.base_url), "--json")
    assert told.exit_code == 1, told.output
    extract, consolidation = json.loads(told.output)
    assert extract["ok"] is True
    assert extract["structured_output"] == "yes (response_format json_object with a schema)"
    assert consolidation["ok"] is False
    assert "no tool calling" in consolidation["verdict"]
    assert "[llm.consolidation]" in consolidation["verdict"]


def test_a_wrong_model_name_names_the_model_setting(tmp_path: Path, fake_openai: fo.FakeOpenAIAPI) -> None:
    fake_openai.responder = capable
    told = doctor(tmp_path, openai_llm(fake_openai.base_url, extract_model="qwen3:80b"))
    assert told.exit_code == 1
    assert "does not have the model 'qwen3:80b': set [llm] extract_model" in told.output
    assert "qwen3:8b" in told.output  # what the server lists


def test_an_unreachable_server_names_the_url_setting(tmp_path: Path) -> None:
    told = doctor(tmp_path, openai_llm("http://127.0.0.1:9/v1"))
    assert told.exit_code == 1
    assert "unreachable: check that it runs, or set [llm] base_url" in told.output


def test_local_only_refuses_a_hosted_endpoint_with_exit_2_naming_the_key(tmp_path: Path) -> None:
    told = doctor(tmp_path, openai_llm("https://api.openai.com/v1"))
    assert told.exit_code == 2
    assert "local_only = true refuses [llm] base_url" in told.output


def test_an_anthropic_compatible_server_without_batches_or_output_config(
    tmp_path: Path, fake_api: fa.FakeAnthropicAPI
) -> None:
    def interceptor(rec: fa.RecordedRequest) -> fa.FakeResponse | None:
        if rec.path.startswith("/v1/messages/batches") or rec.path == "/v1/models":
            return fa.bad_request("Not Found", 404)
        if "output_config" in (rec.json or {}):
            return fa.bad_request("output_config: Extra inputs are not permitted")
        return None

    fake_api.interceptor = interceptor
    fake_api.responder = lambda body, headers: fa.tool_use_message(
        fa.tool_use(body["tools"][0]["name"], {"ok": True})
    )
    llm = f'base_url = "{fake_api.base_url}"\napi_key_env = ""\nlocal_only = true\n'
    told = doctor(tmp_path, llm, "--json")
    assert told.exit_code == 0, told.output
    extract, _ = json.loads(told.output)
    assert extract["batches"].startswith("no (404")
    assert extract["structured_output"].startswith("yes (a forced tool call")
    assert extract["tool_calling"] == "yes"
