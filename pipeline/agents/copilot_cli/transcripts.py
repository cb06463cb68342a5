"""GitHub Copilot CLI 1.0: ``$COPILOT_HOME/session-state/<session id>/events.jsonl``.

- One event a line: ``{type, data, id, timestamp, parentId}``. The folder's name is the session id.
- ``session.start`` names the session and its project: ``data.context`` has the ``gitRoot`` (taken
  as the working directory) and the ``cwd`` (when outside git). ``session.resume`` appends to the
  same file (``--resume``): the session was resumed.
- The user's words are ``user.message`` ``data.content`` (``transformedContent`` adds the harness's
  ``<current_datetime>``). A ``user.message`` with a ``source`` (``agent-<session id>``) is a task
  handed to a sub-agent, not the user's.
- ``system.message`` is the whole system prompt: Copilot's own text and every instruction file it
  loaded as ``<custom_instruction>`` blocks (``copilot-instructions.md``, ``AGENTS.md``, memd's
  published block among them). It is never the user's words and is never read into the items; the
  first one only says whether the run was headless (``copilot -p``: "running in non-interactive
  mode").
- Sub-agents run inline: their events carry ``data.parentToolCallId`` (or an ``agentId``). As
  for Claude Code's inline sidechains they are not the parent's conversation; only the external
  context their tools brought in counts. The parent's ``tool.execution_complete`` of its ``task``
  call carries what the sub-agent reported.
- ``session.compaction_start``/``session.compaction_complete`` mark a compaction (``/compact`` or
  automatic); the summary is the model's, not the user's. ``session.error`` is an error of the
  session (a failed model call, authentication).
- ``model.*`` events (a compaction's model call and a snapshot of the whole prompt) are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.agents.copilot_cli import NAME, discover
from pipeline.sources._collector import Collector
from pipeline.sources._jsonl import JsonlAdapter
from pipeline.sources._time import parse_ts
from pipeline.sources._tools import call_external, mcp_tag

HEADLESS_MARK = "running in non-interactive mode"
_COMPACTION_EVENTS = frozenset({"session.compaction_start", "session.compaction_complete"})


def _sub_agent(record: dict[str, Any], data: dict[str, Any]) -> bool:
    """Whether an event belongs to a sub-agent running inline (Copilot's own test of it)."""
    return any(isinstance(v, str) and v for v in (record.get("agentId"), data.get("agentId"))) or (
        isinstance(data.get("parentToolCallId"), str) and bool(data["parentToolCallId"])
    )


def _result_text(data: dict[str, Any]) -> tuple[str, bool]:
    """A ``tool.execution_complete``'s output and whether it failed."""
    result = data.get("result")
    error = data.get("error")
    text = ""
    if isinstance(result, dict) and isinstance(result.get("content"), str):
        text = result["content"]
    elif isinstance(result, str):
        text = result
    if not text and error is not None:
        text = error.get("message", "") if isinstance(error, dict) else str(error)
    shell = data.get("shellExecution")
    code = shell.get("exitCode") if isinstance(shell, dict) else None
    failed = data.get("success") is False or (isinstance(code, int) and code != 0)
    return str(text), failed


class CopilotCliAdapter(JsonlAdapter):
    source: str = NAME

    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover(root)

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, self.discover_paths(root))

    def fallback_session_id(self, path: Path) -> str:
        return path.parent.name if path.name == "events.jsonl" else super().fallback_session_id(path)

    def feed(self, c: Collector, record: dict[str, Any], has_recall: bool) -> bool:
        kind = record.get("type")
        data = record.get("data")
        if not isinstance(kind, str) or not isinstance(data, dict):
            return False
        ts = parse_ts(record.get("timestamp"))
        c.s.see_time(ts)
        if kind in ("session.start", "session.resume"):
            self._start(c, data, resumed=kind == "session.resume")
        elif kind == "system.message":
            self._system(c, data, has_recall)
        elif kind in _COMPACTION_EVENTS:
            c.s.compacted = True
        elif _sub_agent(record, data):
            self._sub_agent_event(c, kind, data)
        elif kind == "user.message":
            self._user(c, data, ts)
        elif kind == "assistant.message":
            self._assistant(c, data, ts)
        elif kind == "tool.execution_start":
            self._tool_start(c, data, ts)
        elif kind == "tool.execution_complete":
            text, failed = _result_text(data)
            c.tool_result(str(data.get("toolCallId") or ""), text, failed, ts)
        elif kind == "session.error":
            c.error(str(data.get("message") or data.get("errorType") or "session error"), ts)
        return True

    def _start(self, c: Collector, data: dict[str, Any], *, resumed: bool) -> None:
        s = c.s
        if resumed:
            s.forked = True
        session = data.get("sessionId")
        if isinstance(session, str) and session and s.session_id is None:
            s.session_id = session
        if isinstance(data.get("copilotVersion"), str):
            s.agent_version = data["copilotVersion"]
        context = data.get("context")
        if s.cwd is None and isinstance(context, dict):
            for key in ("gitRoot", "cwd"):
                if isinstance(context.get(key), str) and context[key]:
                    s.cwd = context[key]
                    break

    def _system(self, c: Collector, data: dict[str, Any], has_recall: bool) -> None:
        if "system_seen" in c.s.x:
            return
        c.s.x["system_seen"] = True
        content = data.get("content")
        if isinstance(content, str):
            c.s.non_interactive = HEADLESS_MARK in content[:2000]
            if has_recall and "<memd-recall" in content:
                c.recall_given(None)

    def _user(self, c: Collector, data: dict[str, Any], ts: datetime | None) -> None:
        content = data.get("content")
        if not isinstance(content, str):
            return
        if data.get("source") not in (None, "", "user"):
            return  # a task a sub-agent was handed (``agent-<session>``), or the harness's own
        c.user_prompt(content, ts)

    def _assistant(self, c: Collector, data: dict[str, Any], ts: datetime | None) -> None:
        content = data.get("content")
        if isinstance(content, str) and content:
            c.assistant_text(content, ts, merge_key=str(data.get("messageId") or "") or None)
        requests = data.get("toolRequests")
        for call in requests if isinstance(requests, list) else []:
            if isinstance(call, dict):
                c.tool_call(
                    str(call.get("name") or ""), call.get("arguments"), str(call.get("toolCallId") or ""), ts
                )

    def _tool_start(self, c: Collector, data: dict[str, Any], ts: datetime | None) -> None:
        self._mcp(c, data)
        c.tool_call(
            str(data.get("toolName") or ""), data.get("arguments"), str(data.get("toolCallId") or ""), ts
        )

    def _mcp(self, c: Collector, data: dict[str, Any]) -> None:
        server, tool = data.get("mcpServerName"), data.get("mcpToolName")
        if isinstance(server, str) and server:
            c.external(mcp_tag(server, tool if isinstance(tool, str) and tool else "?"))

    def _sub_agent_event(self, c: Collector, kind: str, data: dict[str, Any]) -> None:
        """A sub-agent's event: only the external context its tools brought in counts."""
        if kind == "tool.execution_start":
            self._mcp(c, data)
            for tag in call_external(self.source, str(data.get("toolName") or ""), data.get("arguments")):
                c.external(tag)
        elif kind == "assistant.message" and isinstance(data.get("toolRequests"), list):
            for call in data["toolRequests"]:
                if isinstance(call, dict):
                    for tag in call_external(self.source, str(call.get("name") or ""), call.get("arguments")):
                        c.external(tag)
