"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (and ``.jsonl.zst``,
and ``$CODEX_HOME/archived_sessions/``).

- Lines are ``{timestamp, type, payload}`` (``ordinal`` since ~0.14x); the mid-2025 bare format
  (a ``{id, timestamp, instructions}`` head, bare response items, ``record_type: state`` lines) is
  read too. Unknown outer or inner types are skipped.
- The first ``session_meta`` is canonical; later ones are copied fork history. ``source`` objects
  (``{"subagent": ...}``), ``parent_thread_id`` and ``thread_source`` mark sub-agents;
  ``subagent: "compact"`` is a compaction run; ``source: "exec"`` / ``originator: "codex_exec"``
  is a headless ``codex exec`` run; ``forked_from_id`` a fork.
- User prompts come from ``user_message`` events (legacy history) or ``item_completed``
  ``UserMessage`` items (paginated history); the same prompt seen both ways counts once. Role-user
  response items are the model's copy (or injected AGENTS.md/environment context) and never count.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.agents.codex import NAME, discover
from pipeline.agents.codex.injected import is_codex_injected_user_text, strip_codex_ide_context
from pipeline.sources import injected
from pipeline.sources._collector import Collector
from pipeline.sources._jsonl import JsonlAdapter
from pipeline.sources._time import parse_ts
from pipeline.sources._tools import MCP_RESOURCES, WEB_FETCH, WEB_SEARCH, compact_json, mcp_tag

_ENVELOPE_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state"}
    | {"inter_agent_communication", "inter_agent_communication_metadata", "realtime_item"}
    | {"security_risk_score"}
)
_BARE_ITEM_TYPES = frozenset(
    {"message", "reasoning", "function_call", "function_call_output", "local_shell_call"}
    | {"custom_tool_call", "custom_tool_call_output", "web_search_call"}
)
_NOT_USER_SOURCES = frozenset({"subagent", "memory_consolidation", "guardian_review"})
_EXIT_CODE_RE = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")
_UUID_TAIL_RE = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:_[^.]*)?$", re.I
)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") in ("input_image", "image"):
            parts.append("[image]")
    return "\n".join(parts)


def output_text(output: Any) -> tuple[str, bool]:
    """A call's output as text, and whether it failed (exit code, ``success: false``, ``isError``)."""
    failed = False
    if isinstance(output, str) and output.startswith('{"output"'):
        try:
            decoded = json.loads(output)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            metadata = decoded.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            return str(decoded.get("output", "")), isinstance(code, int) and code != 0
    if isinstance(output, dict):
        failed = output.get("success") is False or output.get("isError") is True
        text = content_text(output.get("content")) if "content" in output else content_text(output)
    else:
        text = content_text(output)
    match = _EXIT_CODE_RE.search(text[:2000])
    return text, failed or (match is not None and match.group(1) != "0")


def _json_args(arguments: Any) -> Any:
    if isinstance(arguments, str) and arguments[:1] in ("{", "["):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


class CodexAdapter(JsonlAdapter):
    source: str = NAME

    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover(root)

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, self.discover_paths(root))

    def fallback_session_id(self, path: Path) -> str:
        stem = super().fallback_session_id(path)
        match = _UUID_TAIL_RE.search(stem)
        return match.group(1) if match else stem

    def feed(self, c: Collector, record: dict[str, Any], has_recall: bool) -> bool:
        kind = record.get("type")
        payload = record.get("payload")
        ts = parse_ts(record.get("timestamp"))
        if isinstance(kind, str) and isinstance(payload, dict):
            c.s.see_time(ts)
            if kind == "session_meta":
                self._meta(c, payload)
            elif kind == "turn_context":
                if c.s.cwd is None and isinstance(payload.get("cwd"), str):
                    c.s.cwd = payload["cwd"]
            elif kind == "response_item":
                self._item(c, payload, ts, has_recall)
            elif kind == "event_msg":
                self._event(c, payload, ts)
            elif kind == "compacted":
                c.s.compacted = True
            return kind in _ENVELOPE_TYPES or "ordinal" in record or ts is not None
        return self._bare(c, record, ts, has_recall)

    def _bare(self, c: Collector, record: dict[str, Any], ts: datetime | None, has_recall: bool) -> bool:
        if record.get("record_type") == "state":
            return True
        if c.s.records == 1 and "id" in record and "type" not in record and "timestamp" in record:
            c.s.x["bare"] = True
            self._meta(c, record)
            c.s.see_time(parse_ts(record.get("timestamp")))
            return True
        if c.s.x.get("bare") and record.get("type") in _BARE_ITEM_TYPES:
            self._item(c, record, ts, has_recall)
            return True
        return False

    def _meta(self, c: Collector, meta: dict[str, Any]) -> None:
        s = c.s
        if s.x.get("meta_seen"):
            if meta.get("id") not in (None, s.session_id):
                s.forked = True
            return
        s.x["meta_seen"] = True
        s.see_time(parse_ts(meta.get("timestamp")))
        for key, value in (("session_id", meta.get("id")), ("cwd", meta.get("cwd"))):
            if isinstance(value, str) and value:
                setattr(s, key, value)
        if isinstance(meta.get("cli_version"), str):
            s.agent_version = meta["cli_version"]
        s.x["history_mode"] = meta.get("history_mode")
        source = meta.get("source")
        s.non_interactive = source == "exec" or meta.get("originator") == "codex_exec"
        s.forked = s.forked or bool(meta.get("forked_from_id"))
        parent = meta.get("parent_thread_id")
        if isinstance(source, dict) and "subagent" in source:
            s.subagent = True
            spawn = source["subagent"]
            s.compaction_run = spawn == "compact"
            if isinstance(spawn, dict) and isinstance(spawn.get("thread_spawn"), dict):
                parent = parent or spawn["thread_spawn"].get("parent_thread_id")
        if parent or meta.get("thread_source") in _NOT_USER_SOURCES:
            s.subagent = True
        if isinstance(parent, str):
            s.parent_session_id = parent

    def _user(self, c: Collector, text: str, ts: datetime | None, kind: str) -> None:
        if not text.strip() or is_codex_injected_user_text(text):
            return
        digest = _digest(text)
        last = c.s.x.get("last_user")
        if isinstance(last, list) and last[1] == digest and last[0] != kind:
            c.s.x["last_user"] = None
            return
        c.s.x["last_user"] = [kind, digest]
        c.user_prompt(strip_codex_ide_context(text), ts)

    def _assistant(self, c: Collector, text: str, ts: datetime | None, kind: str) -> None:
        if c.items is None:
            return
        digest = _digest(text)
        last = c.scratch.get("last_assistant")
        c.scratch["last_assistant"] = (
            None if (last and last[1] == digest and last[0] != kind) else [kind, digest]
        )
        if c.scratch["last_assistant"] is not None:
            c.assistant_text(text, ts)

    def _item(self, c: Collector, p: dict[str, Any], ts: datetime | None, has_recall: bool) -> None:
        kind = p.get("type")
        call_id = str(p.get("call_id") or p.get("id") or "")
        if kind == "message":
            role = p.get("role")
            text = content_text(p.get("content"))
            if role == "assistant":
                self._assistant(c, text, ts, "item")
            elif role == "user" and c.s.x.get("bare"):
                self._user(c, text, ts, "item")
            elif has_recall and injected.has_recall(text):
                c.recall_given(ts)
        elif kind == "function_call":
            namespace = p.get("namespace") if isinstance(p.get("namespace"), str) else None
            c.tool_call(
                str(p.get("name", "")), _json_args(p.get("arguments")), call_id, ts, namespace=namespace
            )
        elif kind == "custom_tool_call":
            c.tool_call(str(p.get("name", "")), _json_args(p.get("input")), call_id, ts)
        elif kind == "local_shell_call":
            action: dict[str, Any] = p["action"] if isinstance(p.get("action"), dict) else {}
            run: dict[str, Any] = action["exec"] if isinstance(action.get("exec"), dict) else action
            c.tool_call("local_shell", {"command": run.get("command")}, call_id, ts)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            text, failed = output_text(p.get("output"))
            c.tool_result(call_id, text, failed, ts)
        elif kind == "web_search_call":
            search: dict[str, Any] = p["action"] if isinstance(p.get("action"), dict) else {}
            name = "web_search" if search.get("type") in (None, "search") else "web_fetch"
            c.tool_call(name, search, call_id, ts)
        elif kind in ("compaction", "context_compaction"):
            c.s.compacted = True

    def _event(self, c: Collector, p: dict[str, Any], ts: datetime | None) -> None:
        kind = p.get("type")
        if kind == "user_message" and isinstance(p.get("message"), str):
            self._user(c, p["message"], ts, "event")
        elif kind == "item_completed" and isinstance(p.get("item"), dict):
            self._completed(c, p["item"], ts)
        elif kind == "mcp_tool_call_end" and isinstance(p.get("invocation"), dict):
            self._mcp(c, p["invocation"])
        elif kind == "web_search_end":
            c.external(WEB_SEARCH)
        elif kind == "context_compacted":
            c.s.compacted = True
        elif kind == "error":
            c.error(str(p.get("message") or compact_json(p)), ts)

    def _mcp(self, c: Collector, call: dict[str, Any]) -> None:
        server, tool = call.get("server"), call.get("tool")
        if isinstance(server, str) and isinstance(tool, str) and server and tool:
            c.external(mcp_tag(server, tool))
        else:
            c.external(MCP_RESOURCES if server is None else f"mcp:{server}")

    def _completed(self, c: Collector, item: dict[str, Any], ts: datetime | None) -> None:
        kind = item.get("type")
        if kind == "UserMessage":
            self._user(c, content_text(item.get("content")), ts, "event_item")
        elif kind == "AgentMessage":
            self._assistant(c, content_text(item.get("content")), ts, "event_item")
        elif kind == "McpToolCall":
            self._mcp(c, item)
        elif kind in ("Extension", "WebSearch") and isinstance(item.get("action"), dict):
            action_type = item["action"].get("type")
            c.external(WEB_SEARCH if action_type in (None, "search") else WEB_FETCH)
