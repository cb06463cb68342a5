"""``frozen.json``: what the real SDK server answers to the requests ``daemon.mcp.front`` may answer
before the SDK is loaded (``front.EARLY``), in both eras the SDK serves:

- ``answers``: per protocol version the ``initialize`` handshake negotiates, the answers of a
  handshake session (``initialize``, then ``tools/list``, ``prompts/list``, ``resources/list``,
  ``ping``);
- ``modern``: per 2026 protocol version (no handshake: every request carries its envelope in
  ``params._meta``), the answers to ``server/discover`` and the three lists, and the
  acknowledgement of a ``subscriptions/listen`` asking for every list change (what Claude Code
  asks for), with the filter it was made for.

    .venv/bin/python -m daemon.mcp.frozen     # rewrites daemon/mcp/frozen.json

Run it after changing a tool, the server's name, instructions or version, or the ``mcp`` SDK;
``tests/daemon/mcp/test_frozen.py`` fails while the file differs from what the server answers, and
while the front answers a real agent's handshake (``benchmarks/data/mcp_handshakes.json``) other
than the SDK does (``memd mcp`` answers nothing early while the file names another memd or SDK).
"""

from __future__ import annotations

import json
import queue
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from daemon.mcp.front import ACKNOWLEDGED, EARLY, FROZEN, LISTEN, MODERN_EARLY, SUBSCRIPTION_ID, sdk_version

CLIENT = {"name": "frozen", "version": "1"}
"""The client the snapshot's requests name (the answers do not depend on it)."""
EVERY_LIST_CHANGE = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
"""The ``subscriptions/listen`` filter whose acknowledgement is frozen."""


def snapshot() -> dict[str, Any]:
    """What the server answers now, made by the server itself over ``serve_lines``."""
    from mcp_types.version import (
        HANDSHAKE_PROTOCOL_VERSIONS,
        LATEST_HANDSHAKE_VERSION,
        MODERN_PROTOCOL_VERSIONS,
    )

    from pipeline import __version__

    return {
        "memd": __version__,
        "mcp": sdk_version(),
        "latest": LATEST_HANDSHAKE_VERSION,
        "answers": {version: _handshake_answers(version) for version in HANDSHAKE_PROTOCOL_VERSIONS},
        "modern": {version: _modern_answers(version) for version in MODERN_PROTOCOL_VERSIONS},
    }


def render(frozen: dict[str, Any]) -> str:
    return json.dumps(frozen, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def sdk_answers(lines: Sequence[bytes]) -> list[dict[str, Any]]:
    """Every message the real server writes when a client sends ``lines`` (JSON-RPC lines), in the
    order written; the lines end once it answered each request (a ``subscriptions/listen`` once it
    was acknowledged: its stream stays open until the client goes)."""
    from daemon.mcp.deps import Deps
    from daemon.mcp.server import serve_lines
    from pipeline.clock import SystemClock

    waiting: set[str] = set()
    for line in lines:
        message = json.loads(line)
        if "id" in message:
            waiting.add(json.dumps(message["id"]))
    feed: queue.Queue[bytes | None] = queue.Queue()
    for line in lines:
        feed.put(line if line.endswith(b"\n") else line + b"\n")
    written: list[dict[str, Any]] = []
    ended = [False]

    def end_when_answered() -> None:
        if not waiting and not ended[0]:
            ended[0] = True
            feed.put(None)

    end_when_answered()

    def emit(text: str) -> None:
        message = json.loads(text)
        written.append(message)
        if "id" in message and "method" not in message:
            waiting.discard(json.dumps(message["id"]))
        elif message.get("method") == ACKNOWLEDGED:
            waiting.discard(json.dumps(message["params"]["_meta"][SUBSCRIPTION_ID]))
        end_when_answered()

    with tempfile.TemporaryDirectory(prefix="memd-frozen-") as tmp:
        root = Path(tmp)
        deps = Deps.make(
            memory_dir=root / "memory",
            state_dir=root / "state",
            state_db=f"sqlite:///{root / 'state.db'}",
            cwd=root,
            clock=SystemClock(),
        )
        serve_lines(deps, feed, emit)
    return written


def _results(sent: list[dict[str, Any]], methods: Sequence[str]) -> dict[str, Any]:
    lines = [json.dumps(message).encode() for message in sent]
    by_id = {m["id"]: m for m in sdk_answers(lines) if "id" in m and "method" not in m}
    ids = {m["method"]: m["id"] for m in sent if "id" in m}
    return {method: by_id[ids[method]]["result"] for method in methods}


def _handshake_answers(version: str) -> dict[str, Any]:
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}
    sent: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    sent += [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(EARLY[1:], start=1)]
    return _results(sent, EARLY)


def _modern_answers(version: str) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": CLIENT,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    sent = [
        {"jsonrpc": "2.0", "id": i, "method": m, "params": {"_meta": meta}}
        for i, m in enumerate(MODERN_EARLY)
    ]
    answers = _results(sent, MODERN_EARLY)
    listen = {"_meta": meta, "notifications": EVERY_LIST_CHANGE}
    line = json.dumps({"jsonrpc": "2.0", "id": "listen", "method": LISTEN, "params": listen}).encode()
    acknowledged = next(m for m in sdk_answers([line]) if m.get("method") == ACKNOWLEDGED)
    answers[LISTEN] = {"notifications": EVERY_LIST_CHANGE, "acknowledged": acknowledged}
    return answers


def main() -> None:
    FROZEN.write_text(render(snapshot()), encoding="utf-8")
    sys.stderr.write(f"wrote {FROZEN}\n")


if __name__ == "__main__":
    main()
