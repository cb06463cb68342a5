"""``frozen.json``: what the real SDK server answers to ``initialize``, ``tools/list`` and ``ping``
for each protocol version it negotiates, which ``daemon.mcp.front`` answers before the SDK is loaded.

    .venv/bin/python -m daemon.mcp.frozen     # rewrites daemon/mcp/frozen.json

Run it after changing a tool, the server's name, instructions or version, or the ``mcp`` SDK;
``tests/daemon/mcp/test_frozen.py`` fails while the file differs from what the server answers (and
``memd mcp`` answers nothing early while the file names another memd or SDK version).
"""

from __future__ import annotations

import json
import queue
import sys
import tempfile
from pathlib import Path
from typing import Any

from daemon.mcp.front import EARLY, FROZEN, sdk_version


def snapshot() -> dict[str, Any]:
    """What the server answers now, made by the server itself over ``serve_lines``."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from pipeline import __version__

    return {
        "memd": __version__,
        "mcp": sdk_version(),
        "latest": LATEST_HANDSHAKE_VERSION,
        "answers": {version: _answers(version) for version in HANDSHAKE_PROTOCOL_VERSIONS},
    }


def render(frozen: dict[str, Any]) -> str:
    return json.dumps(frozen, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _answers(version: str) -> dict[str, Any]:
    from daemon.mcp.deps import Deps
    from daemon.mcp.server import serve_lines
    from pipeline.clock import SystemClock

    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "frozen", "version": "1"}}
    sent: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    lines: queue.Queue[bytes | None] = queue.Queue()
    for message in sent:
        lines.put(json.dumps(message).encode() + b"\n")
    got: dict[int, Any] = {}

    def emit(text: str) -> None:
        message = json.loads(text)
        if "id" in message and "method" not in message:
            got[message["id"]] = message.get("result", message.get("error"))
            if len(got) == len(EARLY):
                lines.put(None)

    with tempfile.TemporaryDirectory(prefix="memd-frozen-") as tmp:
        root = Path(tmp)
        deps = Deps.make(
            memory_dir=root / "memory",
            state_dir=root / "state",
            state_db=f"sqlite:///{root / 'state.db'}",
            cwd=root,
            clock=SystemClock(),
        )
        serve_lines(deps, lines, emit)
    return {method: got[ident] for ident, method in enumerate(EARLY, start=1)}


def main() -> None:
    FROZEN.write_text(render(snapshot()), encoding="utf-8")
    sys.stderr.write(f"wrote {FROZEN}\n")


if __name__ == "__main__":
    main()
