"""Every request to `memd mcp` is bounded in bytes and in work (issue 32, F8): a JSON-RPC line over
the cap is answered with a JSON-RPC error without being read whole (the SDK never sees it), and
memory stays bounded."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from daemon.mcp.stdio import INVALID_REQUEST, LINE_MAX_BYTES, Output, Pending, TooLong, bounded_lines
from tests.configs import write_config

REPO = Path(__file__).parents[3]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


class Reads(io.BytesIO):
    """A stream that records the largest read asked of it."""

    largest = 0

    def readline(self, size: int | None = -1) -> bytes:  # type: ignore[override]
        self.largest = max(self.largest, size if size is not None and size >= 0 else 1 << 62)
        return super().readline(size)


def huge_call(ident: int, size: int) -> bytes:
    head = (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"'
        % ident
    )
    return head + b"a" * size + b'"}}}\n'


def test_a_line_over_the_cap_is_skipped_in_bounded_reads_and_the_next_one_kept() -> None:
    cap = 1000
    stream = Reads(huge_call(7, 50 * cap) + b'{"id":8}\n' + b"x" * 10)
    got = list(bounded_lines(stream, cap))
    assert isinstance(got[0], TooLong)
    assert got[0].size == len(huge_call(7, 50 * cap))
    assert got[0].head.startswith(b'{"jsonrpc":"2.0","id":7')
    assert got[1:] == [b'{"id":8}\n', b"x" * 10]
    assert stream.largest <= max(cap + 1, 1 << 16)


def test_an_over_long_request_gets_a_json_rpc_error_with_its_id() -> None:
    out = io.BytesIO()
    output = Output(out, Pending())
    output.too_long(
        TooLong(b'{"jsonrpc":"2.0","method":"tools/call","params":{"id":3},"id":"q-9","x":"aaa', 5 << 20)
    )
    output.too_long(TooLong(b'{"jsonrpc":"2.0","params":{"q":"aaaaa', 5 << 20))
    errors = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [e["id"] for e in errors] == ["q-9", None]
    assert {e["error"]["code"] for e in errors} == {INVALID_REQUEST}
    assert str(LINE_MAX_BYTES) in errors[0]["error"]["message"]


def test_a_line_nested_past_the_parser_costs_no_crash() -> None:
    pending = Pending()
    pending.sent(b"[" * 200_000 + b"\n")  # the SDK answers it a parse error
    assert pending.outstanding() == []


def _peak_kib(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1])
    raise AssertionError("no VmHWM")


def _serve(tmp_path: Path, before: list[bytes]) -> tuple[list[dict[str, Any]], int]:
    """Run `memd mcp`, send ``before`` then a search (the SDK answers it), and return its answers and
    its peak RSS (KiB) once the search is answered."""
    (tmp_path / "project").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MEMD_CONFIG": str(write_config(tmp_path)), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path / "project",
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    search = {"name": "memory_search", "arguments": {"query": "deploy"}}
    ping = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": search}).encode() + b"\n"
    lines = [json.dumps(INIT).encode() + b"\n", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n']

    def send() -> None:
        assert proc.stdin is not None
        for chunk in [*lines, *before, ping]:
            proc.stdin.write(chunk)
        proc.stdin.flush()

    writer = threading.Thread(target=send, daemon=True)
    writer.start()
    answers: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            raw = proc.stdout.readline()
            assert raw, "memd mcp ended early"
            answers.append(json.loads(raw))
            if answers[-1].get("id") == 99:
                return answers, _peak_kib(proc.pid)
        raise AssertionError(f"no answer to the search: {answers}")
    finally:
        proc.kill()
        proc.wait(10)
        writer.join(10)


def test_a_64_mib_line_is_refused_and_memory_stays_bounded(tmp_path: Path) -> None:
    # both servers are sent the line that is not JSON (its error and its logging load what they
    # load, rich's traceback drawing included), so the difference is the 64 MiB line's alone
    garbage = b"not json " * 1000 + b"\n"
    base_answers, baseline = _serve(tmp_path / "a", [garbage])
    answers, peak = _serve(tmp_path / "b", [huge_call(5, 64 << 20), garbage])
    by_id = {a.get("id"): a for a in answers}
    assert by_id[5]["error"]["code"] == INVALID_REQUEST
    assert "result" in by_id[99]
    assert peak - baseline < 24 << 10, (baseline, peak)  # KiB: the line's 64 MiB never held whole
