"""The fake Messages API itself, driven by the real SDK: scripted turns, tool use, errors, auth."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import pytest

from tests.fakes import anthropic_api as fa
from tests.fakes.fixtures import FAKE_API_KEY

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def sdk(fake_api: fa.FakeAnthropicAPI) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(api_key=FAKE_API_KEY, base_url=fake_api.base_url, max_retries=0)
    yield client
    await client.close()


async def test_scripted_tool_use_turns(fake_api: fa.FakeAnthropicAPI, sdk: anthropic.AsyncAnthropic) -> None:
    script = fa.ScriptedResponder(
        [
            fa.tool_use_message(
                fa.tool_use("memory", {"command": "view", "path": "/memories"}, id_="toolu_1")
            ),
            fa.message("done"),
        ]
    )
    fake_api.responder = script
    first = await sdk.messages.create(model="m", max_tokens=10, messages=MSG)
    assert first.stop_reason == "tool_use"
    block = first.content[0]
    assert block.type == "tool_use"
    assert block.input == {"command": "view", "path": "/memories"}
    second = await sdk.messages.create(model="m", max_tokens=10, messages=MSG)
    assert second.content[0].type == "text"
    assert script.remaining == 0
    assert len(script.calls) == 2
    with pytest.raises(anthropic.InternalServerError, match="script exhausted"):
        await sdk.messages.create(model="m", max_tokens=10, messages=MSG)
    assert script.exhausted


async def test_errors_headers_and_auth(fake_api: fa.FakeAnthropicAPI, sdk: anthropic.AsyncAnthropic) -> None:
    fake_api.default_headers = fa.ratelimit_headers(requests=(10, 3))
    fake_api.responder = fa.ScriptedResponder([fa.rate_limited(7), fa.overloaded(), fa.bad_request("nope")])
    with pytest.raises(anthropic.RateLimitError) as limited:
        await sdk.messages.create(model="m", max_tokens=10, messages=MSG)
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.response.headers["anthropic-ratelimit-requests-remaining"] == "3"
    with pytest.raises(anthropic.APIStatusError) as over:
        await sdk.messages.create(model="m", max_tokens=10, messages=MSG)
    assert over.value.status_code == 529
    with pytest.raises(anthropic.BadRequestError, match="nope"):
        await sdk.messages.create(model="m", max_tokens=10, messages=MSG)
    assert [r.headers["authorization"] for r in fake_api.message_requests()] == [f"Bearer {FAKE_API_KEY}"] * 3

    fake_api.expected_key = "other"
    with pytest.raises(anthropic.AuthenticationError):
        await sdk.messages.create(model="m", max_tokens=10, messages=MSG)
