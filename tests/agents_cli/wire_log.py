"""Stands between an agent and the MCP server it starts, logging every line each side writes.

    python wire_log.py LOG SERVER_COMMAND...

Each line the agent (``C``) or the server (``S``) writes is passed on unchanged and appended to
LOG as one JSON object ``{"t": seconds since start, "who": "C" | "S", "line": text}``; the agent
closing stdin is logged as ``"line": null``. ``opening`` turns such a log into what
``benchmarks/data/mcp_handshakes.json`` records: the agent's lines up to its ``tools/list``, and
where it waited for an answer before it sent more. Standard library only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def opening(log: Path) -> list[dict[str, Any]]:
    """The agent's first lines up to its ``tools/list`` (``{"send": line}``), with an ``{"await":
    id}`` before a line wherever an answer to request ``id`` (or the acknowledgement of the listen
    ``id``) had arrived and not been waited for yet: the agent may have waited for it."""
    steps: list[dict[str, Any]] = []
    arrived: list[Any] = []
    for row in map(json.loads, log.read_text(encoding="utf-8").splitlines()):
        if row["line"] is None:
            break
        message = json.loads(row["line"])
        if row["who"] == "S":
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            if "id" in message and "method" not in message:
                arrived.append(message["id"])
            elif isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
                arrived.append(meta[SUBSCRIPTION_ID])
            continue
        steps += [{"await": ident} for ident in arrived]
        arrived = []
        steps.append({"send": row["line"]})
        if message.get("method") == "tools/list":
            steps.append({"await": message["id"]})
            return steps
    raise AssertionError(f"the agent sent no tools/list: {steps}")


def main(argv: list[str]) -> int:
    started = time.monotonic()
    log = open(argv[0], "a", encoding="utf-8")  # noqa: SIM115 - open while the server runs
    lock = threading.Lock()

    def record(who: str, line: bytes | None) -> None:
        text = None if line is None else line.decode("utf-8", "replace").rstrip("\r\n")
        with lock:
            log.write(
                json.dumps({"t": round(time.monotonic() - started, 4), "who": who, "line": text}) + "\n"
            )
            log.flush()

    server = subprocess.Popen(argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None
    assert server.stdout is not None
    out: BinaryIO = sys.stdout.buffer

    def relay() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            record("S", line)
            out.write(line)
            out.flush()

    threading.Thread(target=relay, daemon=True).start()
    for line in sys.stdin.buffer:
        record("C", line)
        server.stdin.write(line)
        server.stdin.flush()
    record("C", None)
    server.stdin.close()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
