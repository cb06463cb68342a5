"""``daemon/mcp/frozen.json`` is what the real SDK server answers, so the front never drifts from it;
and the front answers each real agent's opening (``benchmarks/data/mcp_handshakes.json``: the lines
Claude Code, Codex and Qwen Code sent `memd mcp`, captured through a logging wrapper) up to its
``tools/list``, each answer exactly the SDK's."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from daemon.mcp.front import ACKNOWLEDGED, FROZEN, SUBSCRIPTION_ID, Front, load_frozen
from daemon.mcp.frozen import render, sdk_answers, snapshot
from pipeline import __version__

HANDSHAKES_FILE = Path(__file__).parents[3] / "benchmarks" / "data" / "mcp_handshakes.json"
HANDSHAKES: dict[str, list[dict[str, Any]]] = json.loads(HANDSHAKES_FILE.read_text(encoding="utf-8"))[
    "handshakes"
]


def test_the_frozen_answers_are_what_the_sdk_server_answers_now() -> None:
    made = snapshot()
    assert render(made) == FROZEN.read_text(encoding="utf-8"), (
        "daemon/mcp/frozen.json is stale: regenerate it with `.venv/bin/python -m daemon.mcp.frozen`"
    )
    tools = [tool["name"] for tool in made["answers"][made["latest"]]["tools/list"]["tools"]]
    assert tools == ["memory_search", "memory_get", "memory_remember", "memory_feedback"]
    for version in made["modern"]:
        assert (
            made["modern"][version]["tools/list"]["tools"]
            == made["answers"][made["latest"]]["tools/list"]["tools"]
        )


def test_the_front_uses_the_file_only_when_it_was_made_by_this_memd_and_this_sdk() -> None:
    assert load_frozen(__version__) == json.loads(FROZEN.read_text(encoding="utf-8"))
    assert load_frozen("0.0.0-other") is None


def _for(message: dict[str, Any]) -> str:
    """The request a message the server wrote answers: its id, or the subscription it acknowledges."""
    if "method" in message:
        return json.dumps(message["params"]["_meta"][SUBSCRIPTION_ID])
    return json.dumps(message["id"])


@pytest.mark.parametrize("agent", sorted(HANDSHAKES))
def test_the_front_answers_an_agent_s_real_opening_up_to_its_tools_as_the_sdk_does(agent: str) -> None:
    lines = [step["send"].encode() for step in HANDSHAKES[agent] if "send" in step]
    awaited = [json.dumps(step["await"]) for step in HANDSHAKES[agent] if "await" in step]
    sdk: dict[str, dict[str, Any]] = {}
    for message in sdk_answers(lines):  # a listen's acknowledgement, not the end of its stream
        if "id" in message or message.get("method") == ACKNOWLEDGED:
            sdk.setdefault(_for(message), message)
    out = io.BytesIO()
    front = Front(load_frozen(__version__), out)
    for line in lines:
        front.from_client(line)
    written = [json.loads(x) for x in out.getvalue().splitlines()]
    # Everything the agent waited for before it had memd's tools, the tools list last, came from the front,
    assert [_for(m) for m in written if _for(m) in awaited] == awaited, (agent, front.early)
    # each exactly as the SDK wrote it.
    for message in written:
        assert message == sdk[_for(message)], (agent, message)
    assert front.lines.qsize() == len(lines)  # every line still goes on to the SDK


_CLAUDE_CAPABILITIES = {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}
CAPABILITIES = [
    _CLAUDE_CAPABILITIES,
    {},
    {"experimental": {"codex/auth-change": {}}, "elicitation": {"form": {}, "url": {}}},
    {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}, "roots": {}},
    {"roots": 5},
    {"sampling": "yes"},
    {"elicitation": []},
    {"roots": {"listChanged": "yes"}},
    {"elicitation": {"form": 1}},
    {"sampling": {"tools": True}},
    {"experimental": {"x": 1}},
    {"extensions": []},
    {"roots": None},
    {"tasks": 5, "custom": "x"},
    {"sampling": {"context": {}, "tools": {}, "other": 1}, "roots": {"listChanged": False}},
]


def _modern(ident: int, method: str, capabilities: Any, **params: Any) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": ident, "method": method, "params": {"_meta": meta, **params}}
    ).encode()


@pytest.mark.parametrize("capabilities", CAPABILITIES, ids=json.dumps)
def test_the_front_answers_a_2026_request_early_only_when_the_sdk_accepts_its_capabilities(
    capabilities: Any,
) -> None:
    frozen = load_frozen(__version__)
    assert frozen is not None
    listen = frozen["modern"]["2026-07-28"]["subscriptions/listen"]["notifications"]
    lines = [
        _modern(1, "tools/list", capabilities),
        _modern(2, "subscriptions/listen", capabilities, notifications=listen),
    ]
    sdk: dict[str, dict[str, Any]] = {}
    for message in sdk_answers(lines):  # a listen's acknowledgement, not the end of its stream
        if "id" in message or message.get("method") == ACKNOWLEDGED:
            sdk.setdefault(_for(message), message)
    out = io.BytesIO()
    front = Front(frozen, out)
    for line in lines:
        front.from_client(line)
    written = [json.loads(x) for x in out.getvalue().splitlines()]
    for message in written:
        assert message == sdk[_for(message)], message  # never an answer the SDK would not give
    if capabilities in CAPABILITIES[:4]:  # what the agents send is still answered early
        assert [_for(m) for m in written] == ["1", "2"]
    if all("error" in m for m in sdk.values()):
        assert written == []
