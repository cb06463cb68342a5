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
