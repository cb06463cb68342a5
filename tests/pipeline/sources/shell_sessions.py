"""One session per agent, in the shape each agent writes: the user asks, the agent runs shell commands
through its own shell tool, each tool returns its output, the agent answers; one exchange or many.
For the tests of what a shell call brings in (external context), of how tool output is rendered
(never a turn), and of what phase 1 keeps of a long session (``benchmarks/quality``)."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pipeline.agents.opencode import database as opencode_db
from tests.pipeline.sources.opencode_support import bump, insert, sample_db
from tests.source_names import SourceName

SID = "5e550000-0000-4000-8000-0000000000a1"
CWD = "/home/dev/shop"
START = datetime(2026, 12, 1, 21, 25, tzinfo=UTC)
SHELL_TOOL: dict[SourceName, str] = {
    SourceName.CLAUDE_CODE: "Bash",
    SourceName.CODEX: "exec_command",
    SourceName.GEMINI_CLI: "run_shell_command",
    SourceName.PI: "bash",
    SourceName.OPENCODE: "bash",
    SourceName.COPILOT_CLI: "bash",
    SourceName.QWEN_CODE: "run_shell_command",
    SourceName.OPENHANDS: "terminal",
    SourceName.CLINE: "run_commands",
}
ROOT_UNDER: dict[SourceName, str] = {
    SourceName.CLAUDE_CODE: "projects",
    SourceName.CODEX: "sessions",
    SourceName.GEMINI_CLI: "tmp",
    SourceName.PI: "sessions",
    SourceName.OPENCODE: "",
    SourceName.COPILOT_CLI: "session-state",
    SourceName.QWEN_CODE: "projects",
    SourceName.OPENHANDS: "conversations",
    SourceName.CLINE: "sessions",
}
"""Where the agent's transcripts root is under the folder a writer was given."""


@dataclass(frozen=True)
class Exchange:
    """One turn of the session: what the user said, the shell commands the agent ran with what each
    printed, and the agent's answer."""

    user: str
    calls: tuple[tuple[str, str], ...]
    answer: str = "Done."
    at: datetime | None = None
    """When the user said it (default: a minute after the exchange before, from 2026-12-01 21:25)."""


def _ts(exchange: int, step: int, at: datetime | None = None) -> datetime:
    """Exchange ``exchange`` starts at ``at``, or a minute after the one before; its steps are
    seconds apart (exchange 0's user turn, call, result and answer at 21:25:00, :05, :09, :12 for one call)."""
    seconds = 0 if step == 0 else 5 + 4 * (step - 1)
    return (at or START + timedelta(minutes=exchange)) + timedelta(seconds=seconds)


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def _times(k: int, ex: Exchange) -> tuple[str, list[tuple[str, str]], str]:
    """(user's time, (call's time, result's time) per call, answer's time) of exchange ``k``."""
    calls = [(_iso(_ts(k, 1 + 2 * i, ex.at)), _iso(_ts(k, 2 + 2 * i, ex.at))) for i in range(len(ex.calls))]
    last = 1 + 2 * len(ex.calls)
    return _iso(_ts(k, 0, ex.at)), calls, _iso(_ts(k, last, ex.at) - timedelta(seconds=1))


def _start(exchanges: list[Exchange]) -> str:
    return _times(0, exchanges[0])[0]


def _dashed(cwd: str) -> str:
    """``cwd`` as Claude Code, Pi and Qwen Code name a project folder: ``/home/dev/shop`` -> ``-home-dev-shop``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _claude(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid, "version": "2.1.39"}
    records: list[dict[str, Any]] = []

    def rec(kind: str, ts: str, **fields: Any) -> None:
        n = len(records) + 1
        parent = None if n == 1 else f"{n - 1:08x}-0000-4000-8000-000000000000"
        records.append(
            {
                "parentUuid": parent,
                **base,
                "type": kind,
                **fields,
                "uuid": f"{n:08x}-0000-4000-8000-000000000000",
                "timestamp": ts,
            }
        )

    msg = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        rec("user", user_at, message={"role": "user", "content": ex.user})
        for i, ((command, output), (at_call, at_result)) in enumerate(zip(ex.calls, call_at, strict=True)):
            tid = f"toolu_{k + 1}" if len(ex.calls) == 1 else f"toolu_{k + 1}_{i + 1}"
            call = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}
            msg += 1
            rec("assistant", at_call, message={"id": f"msg_{msg}", "role": "assistant", "content": [call]})
            result = {"tool_use_id": tid, "type": "tool_result", "content": output}
            rec("user", at_result, message={"role": "user", "content": [result]})
        msg += 1
        text = [{"type": "text", "text": ex.answer}]
        rec("assistant", answer_at, message={"id": f"msg_{msg}", "role": "assistant", "content": text})
    return _jsonl(folder / "projects" / _dashed(cwd) / f"{sid}.jsonl", records)


def _codex(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    def cx(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": ts, "type": kind, "payload": payload}

    meta = {
        "id": sid,
        "timestamp": _start(exchanges),
        "cwd": cwd,
        "originator": "codex_cli_rs",
        "cli_version": "0.104.0",
    }
    records = [cx(_start(exchanges), "session_meta", {**meta, "source": "cli"})]
    n = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        records.append(cx(user_at, "event_msg", {"type": "user_message", "message": ex.user}))
        for (command, output), (at_call, at_result) in zip(ex.calls, call_at, strict=True):
            n += 1
            arguments = json.dumps({"cmd": command, "workdir": cwd})
            call = {
                "type": "function_call",
                "name": "exec_command",
                "call_id": f"call_{n}",
                "arguments": arguments,
            }
            records.append(cx(at_call, "response_item", call))
            out = {
                "type": "function_call_output",
                "call_id": f"call_{n}",
                "output": f"Process exited with code 0\nOutput:\n{output}",
            }
            records.append(cx(at_result, "response_item", out))
        records.append(cx(answer_at, "event_msg", {"type": "agent_message", "message": ex.answer}))
    return _jsonl(
        folder / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T21-25-00-{sid}.jsonl", records
    )


def _gemini(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    last = _times(len(exchanges) - 1, exchanges[-1])[2]
    records: list[dict[str, Any]] = [
        {
            "sessionId": sid,
            "projectHash": "ab" * 32,
            "startTime": _start(exchanges),
            "lastUpdated": last,
            "kind": "main",
        }
    ]
    n = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        records.append(
            {"id": f"u{k + 1}", "timestamp": user_at, "type": "user", "content": [{"text": ex.user}]}
        )
        calls = []
        for (command, output), (at_call, _) in zip(ex.calls, call_at, strict=True):
            n += 1
            cid = f"run_shell_command-{n}"
            response = {
                "functionResponse": {"id": cid, "name": "run_shell_command", "response": {"output": output}}
            }
            calls.append(
                {
                    "id": cid,
                    "name": "run_shell_command",
                    "args": {"command": command},
                    "status": "success",
                    "timestamp": at_call,
                    "displayName": "Shell",
                    "result": [response],
                }
            )
        gemini = {"type": "gemini", "model": "gemini-3-flash-preview", "thoughts": []}
        records.append(
            {
                "id": f"g{2 * k + 1}",
                "timestamp": call_at[0][0] if call_at else user_at,
                **gemini,
                "content": "",
                "toolCalls": calls,
            }
        )
        records.append(
            {"id": f"g{2 * k + 2}", "timestamp": answer_at, **gemini, "content": ex.answer, "toolCalls": []}
        )
    projects = folder / "projects.json"  # where Gemini CLI maps the project's folder to "shop"
    if not projects.exists():
        folder.mkdir(parents=True, exist_ok=True)
        projects.write_text(json.dumps({"projects": {cwd: "shop"}}), encoding="utf-8")
    return _jsonl(folder / "tmp" / "shop" / "chats" / f"session-2026-12-01T21-25-{sid[:8]}.jsonl", records)


def _pi(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    # Pi's TUI writes the header when it opens; a person types the first prompt seconds later (a header
    # with its prompt at once reads as `pi -p`, headless: pipeline/agents/pi).
    opened = _iso(_ts(0, 0, exchanges[0].at) - timedelta(seconds=30))
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": sid, "timestamp": opened, "cwd": cwd}
    ]

    def entry(ts: str, message: dict[str, Any]) -> None:
        n = len(records)
        parent = None if n == 1 else f"a{n - 1}"
        records.append(
            {"type": "message", "id": f"a{n}", "parentId": parent, "timestamp": ts, "message": message}
        )

    n = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        entry(user_at, {"role": "user", "content": [{"type": "text", "text": ex.user}]})
        for (command, output), (at_call, at_result) in zip(ex.calls, call_at, strict=True):
            n += 1
            call = {"type": "toolCall", "id": f"tc{n}", "name": "bash", "arguments": {"command": command}}
            entry(at_call, {"role": "assistant", "content": [call], "stopReason": "toolUse"})
            result = {
                "role": "toolResult",
                "toolCallId": f"tc{n}",
                "toolName": "bash",
                "content": [{"type": "text", "text": output}],
                "isError": False,
            }
            entry(at_result, result)
        text = [{"type": "text", "text": ex.answer}]
        entry(answer_at, {"role": "assistant", "content": text, "stopReason": "stop"})
    return _jsonl(
        folder / "sessions" / f"-{_dashed(cwd)}--" / f"2026-12-01T21-25-00-000Z_{sid}.jsonl", records
    )


def _copilot(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    records: list[dict[str, Any]] = []

    def ev(kind: str, ts: str, data: dict[str, Any]) -> None:
        n = len(records)
        records.append(
            {
                "type": kind,
                "data": data,
                "id": f"e{n}",
                "timestamp": ts,
                "parentId": f"e{n - 1}" if n else None,
            }
        )

    start = {
        "sessionId": sid,
        "copilotVersion": "1.0.102",
        "startTime": _start(exchanges),
        "context": {"cwd": cwd, "gitRoot": cwd},
    }
    ev("session.start", _start(exchanges), start)
    n = m = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        m += 1
        ev("user.message", user_at, {"content": ex.user, "messageId": f"m{m}"})
        for (command, output), (at_call, at_result) in zip(ex.calls, call_at, strict=True):
            n += 1
            m += 1
            args = {"command": command}
            request = {"toolCallId": f"call_{n}", "name": "bash", "arguments": args}
            ev("assistant.message", at_call, {"content": "", "messageId": f"m{m}", "toolRequests": [request]})
            ev(
                "tool.execution_start",
                at_call,
                {"toolCallId": f"call_{n}", "toolName": "bash", "arguments": args},
            )
            done = {"toolCallId": f"call_{n}", "success": True, "result": {"content": output}}
            ev("tool.execution_complete", at_result, done)
        m += 1
        ev("assistant.message", answer_at, {"content": ex.answer, "messageId": f"m{m}"})
    return _jsonl(folder / "session-state" / sid / "events.jsonl", records)


def _qwen(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    records: list[dict[str, Any]] = []

    def rec(kind: str, ts: str, message: dict[str, Any], **extra: Any) -> None:
        n = len(records)
        records.append(
            {
                "uuid": f"q{n}",
                "parentUuid": f"q{n - 1}" if n else None,
                "sessionId": sid,
                "timestamp": ts,
                "type": kind,
                "cwd": cwd,
                "version": "0.24.4",
                "message": message,
                **extra,
            }
        )

    n = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        rec("user", user_at, {"role": "user", "parts": [{"text": ex.user}]}, provenance="real_user")
        for (command, output), (at_call, at_result) in zip(ex.calls, call_at, strict=True):
            n += 1
            call = {
                "functionCall": {"id": f"c{n}", "name": "run_shell_command", "args": {"command": command}}
            }
            rec("assistant", at_call, {"role": "model", "parts": [call]})
            response = {
                "functionResponse": {
                    "id": f"c{n}",
                    "name": "run_shell_command",
                    "response": {"output": output},
                }
            }
            rec("tool_result", at_result, {"role": "user", "parts": [response]})
        rec("assistant", answer_at, {"role": "model", "parts": [{"text": ex.answer}]})
    return _jsonl(folder / "projects" / _dashed(cwd) / "chats" / f"{sid}.jsonl", records)


def _local(iso: str) -> str:
    """A UTC time as OpenHands writes its times: local, without a zone."""
    at = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return at.astimezone().replace(tzinfo=None).isoformat()


def _openhands(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    conversation = folder / "conversations" / sid.replace("-", "")
    (conversation / "events").mkdir(parents=True, exist_ok=True)
    state = {"id": sid, "workspace": {"working_dir": cwd}, "confirmation_policy": {"kind": "AlwaysConfirm"}}
    (conversation / "base_state.json").write_text(json.dumps(state))
    events: list[dict[str, Any]] = []

    def text(value: str) -> list[dict[str, Any]]:
        return [{"type": "text", "text": value}]

    n = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        message = {"role": "user", "content": text(ex.user)}
        events.append(
            {"kind": "MessageEvent", "source": "user", "timestamp": _local(user_at), "llm_message": message}
        )
        for (command, output), (at_call, at_result) in zip(ex.calls, call_at, strict=True):
            n += 1
            call = {"id": f"c{n}", "name": "terminal", "arguments": json.dumps({"command": command})}
            events.append(
                {
                    "kind": "ActionEvent",
                    "source": "agent",
                    "timestamp": _local(at_call),
                    "action": {"command": command, "kind": "TerminalAction"},
                    "tool_name": "terminal",
                    "tool_call_id": f"c{n}",
                    "tool_call": call,
                }
            )
            observation = {"content": text(output), "exit_code": 0, "kind": "TerminalObservation"}
            events.append(
                {
                    "kind": "ObservationEvent",
                    "source": "environment",
                    "timestamp": _local(at_result),
                    "tool_name": "terminal",
                    "tool_call_id": f"c{n}",
                    "observation": observation,
                }
            )
        answer = {"role": "assistant", "content": text(ex.answer)}
        events.append(
            {"kind": "MessageEvent", "source": "agent", "timestamp": _local(answer_at), "llm_message": answer}
        )
    for index, event in enumerate(events):
        (conversation / "events" / f"event-{index:05d}-e{index}.json").write_text(json.dumps(event))
    return conversation


def _ms(iso: str) -> int:
    return int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp() * 1000)


def _opencode(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    db = folder / "opencode.db" if (folder / "opencode.db").is_file() else sample_db(folder)
    conn = sqlite3.connect(db, isolation_level=None)
    session_id = "ses_shellsession0000000001" if sid == SID else f"ses_{sid.replace('-', '')[:22]}"
    start = _ms(_start(exchanges))
    end = _ms(_times(len(exchanges) - 1, exchanges[-1])[2])
    session = {
        "id": session_id,
        "project_id": "91cc051c4e213f6cb9dc652810224b0e90288649",
        "parent_id": None,
        "slug": "shell",
        "directory": cwd,
        "title": "shell",
        "version": "1.18.33",
        "time_created": start,
        "time_updated": end,
    }
    insert(conn, "session", session)
    n = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        s = "" if k == 0 else str(k)
        at, done = _ms(user_at), _ms(answer_at)
        user = {"role": "user", "time": {"created": at}, "agent": "build"}
        insert(
            conn,
            "message",
            {
                "id": f"msg_u{s}",
                "session_id": session_id,
                "time_created": at,
                "time_updated": at,
                "data": user,
            },
        )
        text = {"type": "text", "text": ex.user}
        insert(
            conn,
            "part",
            {
                "id": f"prt_u{s}",
                "message_id": f"msg_u{s}",
                "session_id": session_id,
                "time_created": at,
                "time_updated": at,
                "data": text,
            },
        )
        answer = {
            "role": "assistant",
            "parentID": f"msg_u{s}",
            "time": {"created": at + 1, "completed": done},
            "finish": "stop",
        }
        insert(
            conn,
            "message",
            {
                "id": f"msg_a{s}",
                "session_id": session_id,
                "time_created": at + 1,
                "time_updated": done,
                "data": answer,
            },
        )
        for i, ((command, output), (at_call, at_result)) in enumerate(zip(ex.calls, call_at, strict=True)):
            n += 1
            t0, t1 = _ms(at_call), _ms(at_result)
            state = {
                "status": "completed",
                "input": {"command": command},
                "output": output,
                "time": {"start": t0, "end": t1},
            }
            tool = {"type": "tool", "callID": f"call_{n}", "tool": "bash", "state": state}
            pid = f"prt_t{s}" if len(ex.calls) == 1 else f"prt_t{s}_{i}"
            insert(
                conn,
                "part",
                {
                    "id": pid,
                    "message_id": f"msg_a{s}",
                    "session_id": session_id,
                    "time_created": t0,
                    "time_updated": t1,
                    "data": tool,
                },
            )
        said = {"type": "text", "text": ex.answer, "time": {"start": done - 1, "end": done}}
        insert(
            conn,
            "part",
            {
                "id": f"prt_x{s}",
                "message_id": f"msg_a{s}",
                "session_id": session_id,
                "time_created": done - 1,
                "time_updated": done,
                "data": said,
            },
        )
    bump(conn, session_id)
    conn.close()
    return Path(opencode_db.session_path(str(db), session_id))


def _ms(at: str) -> int:
    return int(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000)


def _cline(folder: Path, exchanges: list[Exchange], sid: str, cwd: str) -> Path:
    """Cline CLI 3.0.65: ``sessions/<id>/<id>.messages.json`` (one JSON object) and its manifest
    ``<id>.json``; each command of ``run_commands`` answered by one element of its result."""
    messages: list[dict[str, Any]] = []
    n = 0
    for k, ex in enumerate(exchanges):
        user_at, call_at, answer_at = _times(k, ex)
        text = f'<user_input mode="act">{ex.user}</user_input>'
        messages.append(
            {"id": f"u{k}", "role": "user", "ts": _ms(user_at), "content": [{"type": "text", "text": text}]}
        )
        for (command, output), (at_call, at_result) in zip(ex.calls, call_at, strict=True):
            n += 1
            use = {
                "type": "tool_use",
                "id": f"call_{n}",
                "name": "run_commands",
                "input": {"commands": [command]},
            }
            messages.append({"id": f"a{n}", "role": "assistant", "ts": _ms(at_call), "content": [use]})
            result = {"query": command, "result": output, "success": True}
            block = {
                "type": "tool_result",
                "tool_use_id": f"call_{n}",
                "name": "run_commands",
                "content": [result],
            }
            messages.append({"id": f"r{n}", "role": "user", "ts": _ms(at_result), "content": [block]})
        answer = [{"type": "text", "text": ex.answer}]
        messages.append({"id": f"f{k}", "role": "assistant", "ts": _ms(answer_at), "content": answer})
    session = folder / "sessions" / sid
    session.mkdir(parents=True, exist_ok=True)
    manifest = {"version": 1, "session_id": sid, "source": "cli", "interactive": True, "cwd": cwd}
    (session / f"{sid}.json").write_text(json.dumps(manifest), encoding="utf-8")
    origin = {"source": "cli", "mode": "user", "sessionId": sid, "version": "3.0.65"}
    document = {"version": 1, "agent": "lead", "sessionId": sid, "origin": origin, "messages": messages}
    path = session / f"{sid}.messages.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


_WRITERS = {
    SourceName.CLAUDE_CODE: _claude,
    SourceName.CODEX: _codex,
    SourceName.GEMINI_CLI: _gemini,
    SourceName.PI: _pi,
    SourceName.OPENCODE: _opencode,
    SourceName.COPILOT_CLI: _copilot,
    SourceName.QWEN_CODE: _qwen,
    SourceName.OPENHANDS: _openhands,
    SourceName.CLINE: _cline,
}


def write_exchanges(
    source: SourceName, folder: Path, exchanges: list[Exchange], *, sid: str = SID, cwd: str = CWD
) -> Path:
    """A session of ``source`` in ``cwd`` under ``folder`` made of ``exchanges`` (its transcripts
    root is ``folder / ROOT_UNDER[source]``)."""
    return _WRITERS[source](folder, exchanges, sid, cwd)


def write_session(
    source: SourceName, folder: Path, *, command: str, output: str, user: str = "please check the setup"
) -> Path:
    """A session of ``source`` under ``folder`` in which the agent ran ``command``, which printed ``output``."""
    return write_exchanges(source, folder, [Exchange(user, ((command, output),))])
