"""`memd mcp`'s front: it answers ``initialize`` before the SDK is loaded, hands everything to the SDK
in order, and never answers a request twice; a real process spoken to over its pipes."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from daemon.mcp.front import END_WAIT_S, FROZEN
from tests.configs import write_config

REPO = Path(__file__).parents[3]
FROZEN_ANSWERS: dict[str, Any] = json.loads(FROZEN.read_text(encoding="utf-8"))
HEAVY = ("pydantic", "pydantic_core", "mcp", "mcp_types", "anyio", "sqlalchemy", "structlog", "rich")


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


def test_requests_sent_before_the_sdk_is_ready_are_each_answered_once(tmp_path: Path) -> None:
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
    frozen = FROZEN_ANSWERS["answers"]["2025-06-18"]
    assert by_id[1]["result"] == frozen["initialize"]
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id["two"]["result"] == frozen["tools/list"]
    assert by_id[3]["result"]["structuredContent"]["results"] == []
    assert by_id[5]["result"]["structuredContent"]["memories"] == []
    assert "differs" not in stderr
    assert [a["id"] for a in answers][:2] == [1, "two"]  # answered before the SDK was there


def test_an_unknown_protocol_version_gets_the_sdk_s_latest_as_the_sdk_answers(tmp_path: Path) -> None:
    answers, status, _ = talk(
        tmp_path, [init("1999-01-01"), INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    )
    assert status == 0
    assert answers[0]["result"]["protocolVersion"] == FROZEN_ANSWERS["latest"]
    assert [a["id"] for a in answers] == [1, 2]


def test_a_request_before_initialize_and_a_repeated_id_are_left_to_the_sdk(tmp_path: Path) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
        init("2025-06-18", ident=8),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
    ]
    answers, status, stderr = talk(tmp_path, messages)
    assert status == 0, stderr
    assert Counter(a["id"] for a in answers) == Counter([7, 8, 9])
    assert (
        next(a for a in answers if a["id"] == 9)["result"]
        == FROZEN_ANSWERS["answers"]["2025-06-18"]["tools/list"]
    )


def test_an_sdk_that_cannot_load_is_named_in_each_answer_and_the_exit_status(tmp_path: Path) -> None:
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


def test_the_front_answers_initialize_with_nothing_heavy_imported() -> None:
    """The front's whole path (the CLI, the settings, the front) then, at the moment ``initialize`` is
    answered, what is loaded: an SDK thread that only waits for that moment and reports."""
    code = f"""
import json, sys, time
import daemon.cli, daemon.cli.mcp, daemon.config
from daemon.mcp.front import load_frozen, run
from pipeline import __version__

def sdk(front):
    deadline = time.monotonic() + 60
    while "initialize" not in front.early and time.monotonic() < deadline:
        time.sleep(0.005)
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
    print("HEAVY", json.dumps(heavy), file=sys.stderr)

sys.exit(run(load_frozen(__version__), sdk))
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(json.dumps(init("2025-11-25")) + "\n")
    proc.stdin.flush()
    started = time.monotonic()
    answer = json.loads(proc.stdout.readline())
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert time.monotonic() - started < 30
    assert proc.stderr is not None
    heavy = next(line for line in iter(proc.stderr.readline, "") if line.startswith("HEAVY"))
    proc.communicate(timeout=60)
    assert json.loads(heavy.removeprefix("HEAVY ")) == []


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
    started = time.monotonic()
    answers, status, stderr = talk(tmp_path, messages)
    assert time.monotonic() - started < END_WAIT_S
    assert status == 0, stderr
    assert {a["id"] for a in answers} >= {1, 4}
    assert next(a for a in answers if a["id"] == 4)["error"]["code"] == -32601


def test_a_session_that_calls_no_tool_ends_without_waiting_for_the_sdk(tmp_path: Path) -> None:
    """Only the front was needed: the process ends as soon as stdin does, using a fraction of the CPU
    the SDK's import alone takes (measured in the same test)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import mcp.server.mcpserver"], check=True, timeout=120)
    middle = resource.getrusage(resource.RUSAGE_CHILDREN)
    answers, status, stderr = talk(
        tmp_path, [init("2025-06-18"), INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert status == 0, stderr
    assert [a["id"] for a in answers] == [1, 2]
    sdk_cpu = middle.ru_utime + middle.ru_stime - before.ru_utime - before.ru_stime
    front_cpu = after.ru_utime + after.ru_stime - middle.ru_utime - middle.ru_stime
    assert front_cpu < sdk_cpu / 2


def test_claude_code_s_2026_opening_then_a_call_is_answered_once_each_and_acknowledged_once(
    tmp_path: Path,
) -> None:
    """Claude Code's real opening (``benchmarks/data/mcp_handshakes.json``), then a tool call: the
    front answers the opening, the SDK the call; the SDK's own answers to the opening and its
    acknowledgement of the listen are dropped, and the listen's stream ends with the session."""
    handshakes = json.loads((REPO / "benchmarks" / "data" / "mcp_handshakes.json").read_text())["handshakes"]
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
    assert ids.index(3) < ids.index(9)  # the tools were listed before the SDK was there
    assert next(a for a in answers if a.get("id") == 9)["result"]["structuredContent"]["results"] == []
    assert "differs" not in stderr


def test_the_process_ends_without_the_interpreter_s_exit_whatever_threads_are_left() -> None:
    """The SDK's workers and the index's warm-up may still be there when the client is done; the
    interpreter's exit would stop them mid-call, which aborted 1 run in 45 ("FATAL: exception not
    rethrown"). A thread the exit would wait for forever shows the exit is not the interpreter's."""
    code = """
import sys, threading
from daemon.mcp.front import run

def sdk(front):
    threading.Thread(target=threading.Event().wait, daemon=False).start()  # never ends
    front.serving()
    front.from_server('{"serving": true}')
    while front.lines.get() is not None:
        pass

sys.exit(run(None, sdk))
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        assert json.loads(proc.stdout.readline()) == {"serving": True}
        proc.stdin.close()
        assert proc.wait(timeout=END_WAIT_S * 2) == 0
    finally:
        proc.kill()
        proc.wait()
