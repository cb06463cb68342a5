"""Qwen Code 0.24: ``~/.qwen/projects/<encoded cwd>/chats/<session>.jsonl`` (``$QWEN_RUNTIME_DIR``
or ``$QWEN_HOME`` move ``~/.qwen``).

- Every line is ``{uuid, parentUuid, sessionId, timestamp, type, provenance, cwd, version,
  gitBranch, ...}``; the cwd is the working directory (the folder's name encodes it, every
  character that is not an ASCII letter or digit made ``-``).
- ``user`` with ``provenance: real_user`` (no ``subtype``, or ``mid_turn_user_message``: typed
  while a turn ran) is the user's words; a ``user`` record with ``provenance: system`` is the
  harness's (a background sub-agent's ``<task-notification>``), as are ``goal_runtime`` messages.
- ``assistant`` (``message.role: model``) parts: ``text`` (``thought`` parts skipped) and
  ``functionCall {id, name, args}``; ``tool_result`` parts: ``functionResponse {id, name,
  response: {output | error}}`` with ``toolCallResult.status``.
- ``system`` records: ``chat_compression`` (a compaction: ``compressedHistory`` holds the model's
  summary, never the user's words), ``parent_session`` (the session was spawned by another one: a
  sub-session), ``ui_telemetry``, ``attribution_snapshot`` and the rest are skipped.
- Sub-agents: ``subagents/<parent session id>/agent-<type>-<call id>.jsonl`` (beside a
  ``.meta.json``); their records carry ``isSidechain`` and ``agentId`` and the parent's
  ``sessionId``, so the file, not the session id, is the identity.
- Instruction files (``QWEN.md``, ``AGENTS.md``) and Qwen's memory (``MEMORY.md``, memd's block
  in it included) go into the system prompt, which is not recorded; a ``--- Context from: ---``
  block met in any text is stripped all the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.agents.qwen_code import NAME, discover
from pipeline.sources._collector import Collector
from pipeline.sources._jsonl import JsonlAdapter
from pipeline.sources._time import parse_ts
from pipeline.sources._tools import compact_json

_KNOWN_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
_USER_SUBTYPES = frozenset({"mid_turn_user_message"})
_NOT_USER_PROVENANCES = frozenset({"system", "goal_runtime", "goal_control", "subagent"})
_EXIT_CODE_RE = re.compile(r"^Exit Code: (-?\d+)$", re.M)


def parts_text(message: Any) -> str:
    """The text parts of a ``{role, parts}`` message (thoughts left out)."""
    parts = message.get("parts") if isinstance(message, dict) else None
    texts = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        elif isinstance(part, dict) and "inlineData" in part:
            texts.append("[image]")
    return "\n".join(texts)


def _parts(message: Any) -> list[dict[str, Any]]:
    parts = message.get("parts") if isinstance(message, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


class QwenCodeAdapter(JsonlAdapter):
    source: str = NAME

    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover(root)

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, self.discover_paths(root))

    def begin(self, c: Collector, path: Path) -> None:
        if path.parent.parent.name == "subagents":
            c.s.x["sub_file"] = True
            c.s.subagent = True
            c.s.parent_session_id = path.parent.name
            c.s.session_id = self.fallback_session_id(path)

    def feed(self, c: Collector, record: dict[str, Any], has_recall: bool) -> bool:
        kind = record.get("type")
        if not isinstance(kind, str) or not (kind in _KNOWN_TYPES or "sessionId" in record):
            return False
        ts = parse_ts(record.get("timestamp"))
        c.s.see_time(ts)
        self._envelope(c, record)
        sidechain = (
            record.get("isSidechain") is True or isinstance(record.get("agentId"), str)
        ) and not c.s.x.get("sub_file")
        if sidechain:
            return True  # a sub-agent's record in the parent's file: its own file carries it
        if kind == "user":
            self._user(c, record, ts, has_recall)
        elif kind == "assistant":
            self._assistant(c, record.get("message"), ts)
        elif kind == "tool_result":
            self._tool_result(c, record, ts)
        elif kind == "system":
            self._system(c, record)
        return True

    def _envelope(self, c: Collector, record: dict[str, Any]) -> None:
        s = c.s
        session = record.get("sessionId")
        if isinstance(session, str) and session and s.session_id is None:
            s.session_id = session
        if s.cwd is None and isinstance(record.get("cwd"), str) and record["cwd"]:
            s.cwd = record["cwd"]
        if isinstance(record.get("version"), str):
            s.agent_version = record["version"]

    def _user(self, c: Collector, record: dict[str, Any], ts: datetime | None, has_recall: bool) -> None:
        text = parts_text(record.get("message"))
        subtype = record.get("subtype")
        if record.get("provenance") in _NOT_USER_PROVENANCES or (subtype and subtype not in _USER_SUBTYPES):
            if has_recall:
                c.clean_user_text(text, ts)  # a recall block the harness passed on still counts
            return
        if text:
            c.user_prompt(text, ts)

    def _assistant(self, c: Collector, message: Any, ts: datetime | None) -> None:
        for part in _parts(message):
            if isinstance(part.get("text"), str) and not part.get("thought"):
                c.assistant_text(part["text"], ts)
            call = part.get("functionCall")
            if isinstance(call, dict):
                c.tool_call(str(call.get("name") or ""), call.get("args"), str(call.get("id") or ""), ts)

    def _tool_result(self, c: Collector, record: dict[str, Any], ts: datetime | None) -> None:
        result = record.get("toolCallResult")
        status = result.get("status") if isinstance(result, dict) else None
        for part in _parts(record.get("message")):
            response = part.get("functionResponse")
            if not isinstance(response, dict):
                continue
            body = response.get("response")
            failed = status in ("error", "cancelled")
            if isinstance(body, dict) and "error" in body:
                text, failed = str(body["error"]), True
            elif isinstance(body, dict) and "output" in body:
                output = body["output"]
                text = output if isinstance(output, str) else compact_json(output)
                code = _EXIT_CODE_RE.search(text)
                failed = failed or (code is not None and code.group(1) != "0")
            else:
                text = compact_json(body)
            c.tool_result(str(response.get("id") or ""), text, failed, ts)

    def _system(self, c: Collector, record: dict[str, Any]) -> None:
        subtype = record.get("subtype")
        if subtype == "chat_compression":
            c.s.compacted = True
        elif subtype == "parent_session":
            payload = record.get("systemPayload")
            parent = payload.get("parentSessionId") if isinstance(payload, dict) else None
            c.s.subagent = True
            if isinstance(parent, str) and parent:
                c.s.parent_session_id = parent
