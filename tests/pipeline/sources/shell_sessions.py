"""One small session per agent, in the shape each agent writes: the user asks, the agent runs one
shell command through its own shell tool, the tool returns ``output``. For the tests of what a shell
call brings in (external context) and of how tool output is rendered (never a turn)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pipeline.sources import opencode_db
from pipeline.vocabulary import SourceName
from tests.pipeline.sources.opencode_support import bump, insert, sample_db

SID = "5e550000-0000-4000-8000-0000000000a1"
CWD = "/home/dev/shop"
T0 = "2026-12-01T21:25:00.000Z"
T1 = "2026-12-01T21:25:05.000Z"
T2 = "2026-12-01T21:25:09.000Z"
T3 = "2026-12-01T21:25:12.000Z"
SHELL_TOOL: dict[SourceName, str] = {
    SourceName.CLAUDE_CODE: "Bash",
    SourceName.CODEX: "exec_command",
    SourceName.GEMINI_CLI: "run_shell_command",
    SourceName.PI: "bash",
    SourceName.OPENCODE: "bash",
    SourceName.COPILOT_CLI: "bash",
    SourceName.QWEN_CODE: "run_shell_command",
}


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _claude(folder: Path, command: str, output: str, user: str) -> Path:
    base = {"isSidechain": False, "userType": "external", "cwd": CWD, "sessionId": SID, "version": "2.1.39"}

    def rec(n: int, kind: str, ts: str, **fields: Any) -> dict[str, Any]:
        parent = None if n == 1 else f"0000000{n - 1}-0000-4000-8000-000000000000"
        return {
            "parentUuid": parent,
            **base,
            "type": kind,
            **fields,
            "uuid": f"0000000{n}-0000-4000-8000-000000000000",
            "timestamp": ts,
        }

    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": command}}
    result = {"tool_use_id": "toolu_1", "type": "tool_result", "content": output}
    records = [
        rec(1, "user", T0, message={"role": "user", "content": user}),
        rec(2, "assistant", T1, message={"id": "msg_1", "role": "assistant", "content": [call]}),
        rec(3, "user", T2, message={"role": "user", "content": [result]}),
        rec(
            4,
            "assistant",
            T3,
            message={"id": "msg_2", "role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        ),
    ]
    return _jsonl(folder / "projects" / "-home-dev-shop" / f"{SID}.jsonl", records)


def _codex(folder: Path, command: str, output: str, user: str) -> Path:
    def cx(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": ts, "type": kind, "payload": payload}

    meta = {
        "id": SID,
        "timestamp": T0,
        "cwd": CWD,
        "originator": "codex_cli_rs",
        "cli_version": "0.104.0",
        "source": "cli",
    }
    records = [
        cx(T0, "session_meta", meta),
        cx(T0, "event_msg", {"type": "user_message", "message": user}),
        cx(
            T1,
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "call_1",
                "arguments": json.dumps({"cmd": command, "workdir": CWD}),
            },
        ),
        cx(
            T2,
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": f"Process exited with code 0\nOutput:\n{output}",
            },
        ),
        cx(T3, "event_msg", {"type": "agent_message", "message": "Done."}),
    ]
    return _jsonl(
        folder / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T21-25-00-{SID}.jsonl", records
    )


def _gemini(folder: Path, command: str, output: str, user: str) -> Path:
    call = {
        "id": "run_shell_command-1",
        "name": "run_shell_command",
        "args": {"command": command},
        "status": "success",
        "timestamp": T1,
        "displayName": "Shell",
        "result": [
            {
                "functionResponse": {
                    "id": "run_shell_command-1",
                    "name": "run_shell_command",
                    "response": {"output": output},
                }
            }
        ],
    }
    records = [
        {"sessionId": SID, "projectHash": "ab" * 32, "startTime": T0, "lastUpdated": T3, "kind": "main"},
        {"id": "u1", "timestamp": T0, "type": "user", "content": [{"text": user}]},
        {
            "id": "g1",
            "timestamp": T1,
            "type": "gemini",
            "content": "",
            "model": "gemini-3-flash-preview",
            "thoughts": [],
            "toolCalls": [call],
        },
        {
            "id": "g2",
            "timestamp": T3,
            "type": "gemini",
            "content": "Done.",
            "model": "gemini-3-flash-preview",
            "thoughts": [],
            "toolCalls": [],
        },
    ]
    return _jsonl(folder / "tmp" / "shop" / "chats" / "session-2026-12-01T21-25-5e550000.jsonl", records)


def _pi(folder: Path, command: str, output: str, user: str) -> Path:
    def entry(eid: str, parent: str | None, ts: str, message: dict[str, Any]) -> dict[str, Any]:
        return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": message}

    call = {"type": "toolCall", "id": "tc1", "name": "bash", "arguments": {"command": command}}
    records = [
        {"type": "session", "version": 3, "id": SID, "timestamp": T0, "cwd": CWD},
        entry("a1", None, T0, {"role": "user", "content": [{"type": "text", "text": user}]}),
        entry("a2", "a1", T1, {"role": "assistant", "content": [call], "stopReason": "toolUse"}),
        entry(
            "a3",
            "a2",
            T2,
            {
                "role": "toolResult",
                "toolCallId": "tc1",
                "toolName": "bash",
                "content": [{"type": "text", "text": output}],
                "isError": False,
            },
        ),
        entry(
            "a4",
            "a3",
            T3,
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}], "stopReason": "stop"},
        ),
    ]
    return _jsonl(
        folder / "sessions" / "--home-dev-shop--" / f"2026-12-01T21-25-00-000Z_{SID}.jsonl", records
    )


def _copilot(folder: Path, command: str, output: str, user: str) -> Path:
    def ev(n: int, kind: str, ts: str, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": kind,
            "data": data,
            "id": f"e{n}",
            "timestamp": ts,
            "parentId": f"e{n - 1}" if n else None,
        }

    records = [
        ev(
            0,
            "session.start",
            T0,
            {
                "sessionId": SID,
                "copilotVersion": "1.0.102",
                "startTime": T0,
                "context": {"cwd": CWD, "gitRoot": CWD},
            },
        ),
        ev(1, "user.message", T0, {"content": user, "messageId": "m1"}),
        ev(
            2,
            "assistant.message",
            T1,
            {
                "content": "",
                "messageId": "m2",
                "toolRequests": [{"toolCallId": "call_1", "name": "bash", "arguments": {"command": command}}],
            },
        ),
        ev(
            3,
            "tool.execution_start",
            T1,
            {"toolCallId": "call_1", "toolName": "bash", "arguments": {"command": command}},
        ),
        ev(
            4,
            "tool.execution_complete",
            T2,
            {"toolCallId": "call_1", "success": True, "result": {"content": output}},
        ),
        ev(5, "assistant.message", T3, {"content": "Done.", "messageId": "m3"}),
    ]
    return _jsonl(folder / "session-state" / SID / "events.jsonl", records)


def _qwen(folder: Path, command: str, output: str, user: str) -> Path:
    def rec(n: int, kind: str, ts: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "uuid": f"q{n}",
            "parentUuid": f"q{n - 1}" if n else None,
            "sessionId": SID,
            "timestamp": ts,
            "type": kind,
            "cwd": CWD,
            "version": "0.24.4",
            "message": message,
            **extra,
        }

    call = {"functionCall": {"id": "c1", "name": "run_shell_command", "args": {"command": command}}}
    response = {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": output}}}
    records = [
        rec(0, "user", T0, {"role": "user", "parts": [{"text": user}]}, provenance="real_user"),
        rec(1, "assistant", T1, {"role": "model", "parts": [call]}),
        rec(2, "tool_result", T2, {"role": "user", "parts": [response]}),
        rec(3, "assistant", T3, {"role": "model", "parts": [{"text": "Done."}]}),
    ]
    return _jsonl(folder / "projects" / "-home-dev-shop" / "chats" / f"{SID}.jsonl", records)


def _opencode(folder: Path, command: str, output: str, user: str) -> Path:
    db = sample_db(folder)
    conn = sqlite3.connect(db, isolation_level=None)
    sid, at = "ses_shellsession0000000001", 1_796_160_300_000
    insert(
        conn,
        "session",
        {
            "id": sid,
            "project_id": "91cc051c4e213f6cb9dc652810224b0e90288649",
            "parent_id": None,
            "slug": "shell",
            "directory": CWD,
            "title": "shell",
            "version": "1.18.33",
            "time_created": at,
            "time_updated": at + 30,
        },
    )
    insert(
        conn,
        "message",
        {
            "id": "msg_u",
            "session_id": sid,
            "time_created": at,
            "time_updated": at,
            "data": {"role": "user", "time": {"created": at}, "agent": "build"},
        },
    )
    insert(
        conn,
        "part",
        {
            "id": "prt_u",
            "message_id": "msg_u",
            "session_id": sid,
            "time_created": at,
            "time_updated": at,
            "data": {"type": "text", "text": user},
        },
    )
    insert(
        conn,
        "message",
        {
            "id": "msg_a",
            "session_id": sid,
            "time_created": at + 1,
            "time_updated": at + 20,
            "data": {
                "role": "assistant",
                "parentID": "msg_u",
                "time": {"created": at + 1, "completed": at + 20},
                "finish": "stop",
            },
        },
    )
    tool = {
        "type": "tool",
        "callID": "call_1",
        "tool": "bash",
        "state": {
            "status": "completed",
            "input": {"command": command},
            "output": output,
            "time": {"start": at + 2, "end": at + 10},
        },
    }
    insert(
        conn,
        "part",
        {
            "id": "prt_t",
            "message_id": "msg_a",
            "session_id": sid,
            "time_created": at + 2,
            "time_updated": at + 10,
            "data": tool,
        },
    )
    insert(
        conn,
        "part",
        {
            "id": "prt_x",
            "message_id": "msg_a",
            "session_id": sid,
            "time_created": at + 11,
            "time_updated": at + 20,
            "data": {"type": "text", "text": "Done.", "time": {"start": at + 11, "end": at + 20}},
        },
    )
    bump(conn, sid)
    conn.close()
    return Path(opencode_db.session_path(str(db), sid))


_WRITERS = {
    SourceName.CLAUDE_CODE: _claude,
    SourceName.CODEX: _codex,
    SourceName.GEMINI_CLI: _gemini,
    SourceName.PI: _pi,
    SourceName.OPENCODE: _opencode,
    SourceName.COPILOT_CLI: _copilot,
    SourceName.QWEN_CODE: _qwen,
}


def write_session(
    source: SourceName, folder: Path, *, command: str, output: str, user: str = "please check the setup"
) -> Path:
    """A session of ``source`` under ``folder`` in which the agent ran ``command``, which printed ``output``."""
    return _WRITERS[source](folder, command, output, user)
