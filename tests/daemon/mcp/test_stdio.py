"""`memd mcp` on its pipes: the SDK answers everything, once each, whenever the requests come; a
server that cannot start says why in each answer and its exit status; the process ends with status
0 whatever threads are left. A real process spoken to over its pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from daemon.mcp.stdio import Pending
from tests.configs import write_config

REPO = Path(__file__).parents[3]
HANDSHAKES = REPO / "benchmarks" / "data" / "mcp_handshakes.json"


def init(version: str, ident: int = 1) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return {"jsonrpc": "2.0", "id": ident, "method": "initialize", "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def talk(
    tmp_path: Path, messages: list[dict[str, Any]], *, pythonpath: str = str(REPO)
) -> tuple[list[Any], int, str]:
    """Send every message at once, close stdin, and return every message written, the exit status
    and stderr."""
    (tmp_path / "project").mkdir(exist_ok=True)
    env = {**os.environ, "MEMD_CONFIG": str(write_config(tmp_path)), "PYTHONPATH": pythonpath}
    lines = "".join(json.dumps(m) + "\n" for m in messages)
    done = subprocess.run(
        [sys.executable, "-m", "daemon", "mcp"],
        input=lines,
        env=env,
        cwd=tmp_path / "project",
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [json.loads(line) for line in done.stdout.splitlines()], done.returncode, done.stderr


def test_requests_sent_at_once_then_the_end_of_input_are_each_answered_once(tmp_path: Path) -> None:
    search = {"name": "memory_search", "arguments": {"query": "deploy"}}
    messages = [
        init("2025-06-18"),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": search},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "memory_get", "arguments": {"ids": ["global/x.md"]}},
        },
    ]
    answers, status, stderr = talk(tmp_path, messages)
    assert status == 0, stderr
    assert Counter(a["id"] for a in answers) == Counter([1, "two", 3, 4, 5])
    by_id = {a["id"]: a for a in answers}
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[1]["result"]["serverInfo"]["name"] == "memd"
    names = [t["name"] for t in by_id["two"]["result"]["tools"]]
    assert names[:2] == ["memory_search", "memory_get"]
    assert by_id[3]["result"]["structuredContent"]["results"] == []
    assert by_id[5]["result"]["structuredContent"]["memories"] == []


def test_a_request_before_initialize_and_an_unknown_version_are_answered_by_the_sdk(tmp_path: Path) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
        init("1999-01-01", ident=8),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 10, "method": "no/such/method"},
    ]
    answers, status, stderr = talk(tmp_path, messages)
    assert status == 0, stderr
    assert Counter(a["id"] for a in answers) == Counter([7, 8, 9, 10])
    by_id = {a["id"]: a for a in answers}
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    assert by_id[8]["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION
    assert len(by_id[9]["result"]["tools"]) == 4
    assert by_id[10]["error"]["code"] == -32601


def test_a_server_that_cannot_load_is_named_in_each_answer_and_the_exit_status(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "mcp").mkdir(parents=True)
    (broken / "mcp" / "__init__.py").write_text('raise ImportError("mcp broken on purpose")\n')
    messages = [init("2025-06-18"), INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    answers, status, stderr = talk(tmp_path, messages, pythonpath=f"{broken}{os.pathsep}{REPO}")
    assert status == 1
    assert [a["id"] for a in answers] == [1, 2]
    for answer in answers:
        assert "mcp broken on purpose" in answer["error"]["message"]
    assert "mcp broken on purpose" in stderr


def test_claude_code_s_2026_opening_then_a_call_is_answered_once_each_and_acknowledged_once(
    tmp_path: Path,
) -> None:
    """Claude Code's real opening (``benchmarks/data/mcp_handshakes.json``), then a tool call, all
    sent at once: each request answered once, the listen acknowledged once (its stream ends with
    the session)."""
    handshakes = json.loads(HANDSHAKES.read_text())["handshakes"]
    opening = [json.loads(step["send"]) for step in handshakes["claude-code 2.1.332"] if "send" in step]
    meta = opening[-1]["params"]["_meta"]
    search = {"name": "memory_search", "arguments": {"query": "deploy"}, "_meta": meta}
    answers, status, stderr = talk(
        tmp_path, [*opening, {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": search}]
    )
    assert status == 0, stderr
    acks = [a for a in answers if a.get("method") == "notifications/subscriptions/acknowledged"]
    assert len(acks) == 1
    ids = [a["id"] for a in answers if "id" in a]
    assert Counter(ids) == Counter(["server-discover-probe-1", 0, 1, 2, 3, 9, "listen:0"])
    assert next(a for a in answers if a.get("id") == 9)["result"]["structuredContent"]["results"] == []


def test_the_process_ends_without_the_interpreter_s_exit_whatever_threads_are_left() -> None:
    """The SDK's workers and the index's warm-up may still be there when the client is done; the
    interpreter's exit would stop them mid-call, which aborted 1 run in 45 ("FATAL: exception not
    rethrown"). A thread the exit would wait for forever shows the exit is not the interpreter's."""
    code = """
import anyio, threading
from daemon.mcp import stdio

def serve(stdin, stdout):
    threading.Thread(target=threading.Event().wait, daemon=False).start()  # never ends

    async def main():
        stdout.line('{"serving": true}')
        async for _ in stdin:
            pass

    anyio.run(main)

stdio.run(serve)
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        assert json.loads(proc.stdout.readline()) == {"serving": True}
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


def test_requests_the_sdk_drops_unanswered_do_not_hold_the_end(tmp_path: Path) -> None:
    search = {"name": "memory_search", "arguments": {"query": "x"}}
    messages = [
        init("2025-06-18"),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": "not an object"},
        {"jsonrpc": "1.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": search},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}},
    ]
    answers, status, stderr = talk(tmp_path, messages)
    assert status == 0, stderr
    assert {a["id"] for a in answers} >= {1, 4}
    assert next(a for a in answers if a["id"] == 4)["error"]["code"] == -32601
    pending = Pending()
    for message in messages:
        pending.sent(json.dumps(message).encode())
    for ident in (1, 4):
        pending.written(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {}}) + "\n")
    assert pending.outstanding() == []  # what the SDK drops or was cancelled holds nothing


def test_the_end_waits_for_the_requests_given_but_not_a_listen_or_a_notification() -> None:
    pending = Pending()
    for message in [
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {}},
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]:
        pending.sent(json.dumps(message).encode())
    assert pending.outstanding() == ['"a"', '"a"']
    pending.written('{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}\n')
    pending.written('{"jsonrpc":"2.0","method":"notifications/message","params":{"id":"a"}}\n')
    assert pending.outstanding() == ['"a"']
