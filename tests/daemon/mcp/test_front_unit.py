"""The front's bookkeeping, in process: what it answers, what it drops of the SDK's, what it passes on."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from daemon.mcp.front import FROZEN, Front

FROZEN_ANSWERS: dict[str, Any] = json.loads(FROZEN.read_text(encoding="utf-8"))
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def written(out: io.BytesIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_the_sdk_s_answer_to_what_the_front_answered_is_dropped_and_the_rest_passed_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = io.BytesIO()
    front = Front(FROZEN_ANSWERS, out)
    front.from_client(line(INIT))
    front.from_client(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    front.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    front.from_client(
        line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_get"}})
    )
    assert front.early == ["initialize", "tools/list"]
    assert [m["id"] for m in written(out)] == [1, 2]
    assert written(out)[0]["result"] == FROZEN_ANSWERS["answers"]["2025-03-26"]["initialize"]
    assert front.lines.qsize() == 4  # every line goes on to the SDK
    front.serving()
    same = FROZEN_ANSWERS["answers"]["2025-03-26"]["initialize"]
    front.from_server(json.dumps({"jsonrpc": "2.0", "id": 1, "result": same}))
    front.from_server(json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}))
    front.from_server(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}))
    front.from_server(json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": []}}))
    front.from_server(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}))  # an id used again later
    assert [m.get("id", m.get("method")) for m in written(out)] == [1, 2, "notifications/message", 3, 1]
    err = capsys.readouterr().err
    assert "tools/list differs from frozen.json" in err
    assert "initialize differs" not in err


def test_once_the_sdk_serves_or_without_frozen_answers_the_front_answers_nothing() -> None:
    out = io.BytesIO()
    front = Front(None, out)
    front.from_client(line(INIT))
    assert out.getvalue() == b""
    serving = Front(FROZEN_ANSWERS, out)
    serving.serving()
    serving.from_client(line(INIT))
    assert out.getvalue() == b""
    assert serving.lines.qsize() == 1


def test_a_failed_sdk_answers_what_is_waiting_and_what_comes_next_with_the_reason() -> None:
    out = io.BytesIO()
    front = Front(FROZEN_ANSWERS, out)
    front.from_client(line(INIT))
    front.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}))
    front.from_client(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    front.stopped("ImportError: no mcp")
    front.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
    answers = written(out)
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert "result" in answers[0]
    for answer in answers[1:]:
        assert answer["error"]["message"] == "memd mcp could not serve: ImportError: no mcp"
    assert front.lines.empty()


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1", "title": "T"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
}
EVERY_CHANGE = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}


def modern(ident: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": {"_meta": MODERN_META, **params}}


def test_a_2026_session_gets_discover_the_lists_and_the_listen_acknowledgement() -> None:
    out = io.BytesIO()
    front = Front(FROZEN_ANSWERS, out)
    front.from_client(line(modern("d", "server/discover")))
    front.from_client(line(modern("l", "subscriptions/listen", notifications=EVERY_CHANGE)))
    for ident, method in enumerate(("tools/list", "prompts/list", "resources/list")):
        front.from_client(line(modern(ident, method)))
    assert front.early == [
        "server/discover",
        "subscriptions/listen",
        "tools/list",
        "prompts/list",
        "resources/list",
    ]
    answers = written(out)
    frozen = FROZEN_ANSWERS["modern"]["2026-07-28"]
    assert answers[0] == {"jsonrpc": "2.0", "id": "d", "result": frozen["server/discover"]}
    assert answers[1]["method"] == "notifications/subscriptions/acknowledged"
    assert answers[1]["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "l"}
    assert answers[2]["result"] == frozen["tools/list"]
    # The SDK's own acknowledgement of that listen is dropped; its later events on it are not.
    front.serving()
    front.from_server(json.dumps(answers[1]))
    event = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": answers[1]["params"]}
    front.from_server(json.dumps(event))
    assert written(out)[5:] == [event]


@pytest.mark.parametrize(
    "message",
    [
        modern(1, "tools/list", cursor="2"),
        modern(
            1, "tools/list", _meta={**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        ),
        modern(1, "tools/list", _meta={**MODERN_META, "vendor/key": 1}),
        modern(1, "tools/list", _meta={k: v for k, v in MODERN_META.items() if "Capabilities" not in k}),
        modern(1, "tools/list", _meta={**MODERN_META, "io.modelcontextprotocol/clientInfo": {"name": "t"}}),
        modern(1, "subscriptions/listen", notifications={"toolsListChanged": True}),
        modern(1, "ping"),
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {**INIT, "id": 1},
    ],
    ids=[
        "cursor",
        "version",
        "vendor-meta",
        "no-capabilities",
        "bad-client",
        "other-filter",
        "ping",
        "bare",
        "initialize",
    ],
)
def test_a_2026_request_whose_answer_is_not_frozen_is_left_to_the_sdk(message: dict[str, Any]) -> None:
    out = io.BytesIO()
    front = Front(FROZEN_ANSWERS, out)
    front.from_client(line(modern("d", "server/discover")))
    front.from_client(line(message))
    assert front.early == ["server/discover"]
    assert front.lines.qsize() == 2


@pytest.mark.parametrize(
    "params",
    [
        {"cursor": "x"},
        {"_meta": {"progressToken": 0, "other": 1}},
        {"_meta": MODERN_META},
        {"_meta": {"progressToken": True}},
    ],
    ids=["cursor", "other-meta", "envelope", "bool-token"],
)
def test_a_handshake_list_with_params_the_sdk_may_answer_otherwise_is_left_to_it(
    params: dict[str, Any],
) -> None:
    out = io.BytesIO()
    front = Front(FROZEN_ANSWERS, out)
    front.from_client(line(INIT))
    front.from_client(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    front.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params}))
    front.from_client(
        line({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {"progressToken": 0}}})
    )
    assert [m["id"] for m in written(out)] == [1, 3]
