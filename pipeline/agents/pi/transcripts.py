"""Pi coding agent: ``~/.pi/agent/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl``.

- v1 (legacy): a ``session`` header without ``version`` (``provider``/``modelId``, maybe
  ``branchedFrom``), then linear entries without ids.
- v2/v3: a header with ``version``, entries with ``id``/``parentId`` forming a tree; branches live
  in the same file. Every branch is the user's work, so all ``user`` messages count, in file order.
- Pi rewrites a file in place when it migrates it (v1/v2 to v3); the incremental driver notices
  the changed head and parses again from byte 0.
- Built-in tools are read, bash, edit, write, grep, find, ls (and, since 1.x, ``codemode`` and
  ``tool_search``); any other tool came from an extension (MCP adapters, web search) and is
  external context.
- 1.x writes a ``role: system`` message holding the text of every instruction file it loaded
  (memd's own published block among them): it is the agent's context, never the user's words, and
  is not read.
- 1.x's ``codemode`` tool runs a script that calls the other tools; the inner calls are recorded
  only in its result (``nestedCalls.calls[]``, arguments as an object; ``details.calls[]``,
  arguments as a JSON string). Each becomes a tool call of its own, after the ``codemode`` call,
  so the rules on reads, fetches and external context see it; the inner calls' output is not
  recorded apart from what the script returned, which stays the ``codemode`` call's result.
- Headless runs (``pi -p``, or stdin/stdout not a terminal) are not recorded as such: no field of
  the header or of an entry names the mode (0.73 to 1.6). They are told by time, from what Pi
  writes: the header's ``timestamp`` is when the session was created, at start, and ``-p`` sends
  its prompt right after (measured: 70-140 ms) and each further prompt the moment the previous
  answer ended, while at the TUI a person types each one. A session is marked headless when every
  user message came within ``PRINT_GAP_S`` of the header (the first) or of the conversation's last
  message (the next ones; Pi writes its system message when a prompt is sent, not at start) and
  the user ran no ``!`` command (``bashExecution``, the TUI's); the first prompt may be
  ``MCP_WAIT_S`` later when Pi waited for MCP servers first. A TUI session started with a
  prompt on the command line (``pi "..."``) and never typed into reads as headless.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.agents.pi import NAME, discover
from pipeline.sources._collector import Collector
from pipeline.sources._jsonl import JsonlAdapter
from pipeline.sources._time import parse_ts

_ENTRY_TYPES = frozenset(
    {"session", "message", "model_change", "thinking_level_change", "compaction", "branch_summary"}
    | {"custom", "custom_message", "label", "session_info"}
)
PRINT_GAP_S = 3.0
"""A user message within this long of the entry before it was sent by the program, not typed."""
MCP_WAIT_S = 10.0
"""How long Pi's first prompt waits for MCP servers with declared (``direct``) tools (its docs)."""
NESTED_CALLS_MAX = 256
"""The most inner calls of one ``codemode`` result memd reads (a script may loop over tools)."""


def pi_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


class PiAdapter(JsonlAdapter):
    source: str = NAME

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, self.discover_paths(root))

    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover(root)

    def fallback_session_id(self, path: Path) -> str:
        stem = super().fallback_session_id(path)
        return stem.rsplit("_", 1)[-1]

    def feed(self, c: Collector, record: dict[str, Any], has_recall: bool) -> bool:
        kind = record.get("type")
        if kind not in _ENTRY_TYPES and not (isinstance(kind, str) and "parentId" in record):
            return False
        ts = parse_ts(record.get("timestamp"))
        c.s.see_time(ts)
        if kind == "session":
            _judge_mode(c, kind, ts)
        elif kind == "message" and isinstance(record.get("message"), dict):
            _judge_mode(c, record["message"].get("role"), ts, record["message"])
        if kind == "session":
            self._header(c, record)
        elif kind == "compaction":
            c.s.compacted = True
        elif kind == "message" and isinstance(record.get("message"), dict):
            message = record["message"]
            self._message(c, message, ts or parse_ts(message.get("timestamp")), str(record.get("id") or ""))
        return True

    def _header(self, c: Collector, header: dict[str, Any]) -> None:
        s = c.s
        if s.x.get("header_seen"):
            return
        s.x["header_seen"] = True
        if isinstance(header.get("id"), str):
            s.session_id = header["id"]
        if isinstance(header.get("cwd"), str):
            s.cwd = header["cwd"]
        version = header.get("version")
        s.agent_version = f"session format v{version if isinstance(version, int) else 1}"
        parent = header.get("parentSession") or header.get("branchedFrom")
        if isinstance(parent, str) and parent:
            s.forked = True  # /fork or a branched session: the path of the file it came from
            s.parent_session_id = self.fallback_session_id(Path(parent))

    def _message(self, c: Collector, message: dict[str, Any], ts: datetime | None, entry_id: str) -> None:
        role = message.get("role")
        if role == "user":
            c.user_prompt(pi_text(message.get("content")), ts)
        elif role == "assistant":
            self._assistant(c, message, ts)
        elif role == "toolResult":
            self._nested_calls(c, message, ts)
            c.tool_result(
                str(message.get("toolCallId") or ""),
                pi_text(message.get("content")),
                message.get("isError") is True,
                ts,
            )
        elif role == "bashExecution":
            c.tool_call("bash", {"command": message.get("command")}, entry_id, ts)
            exit_code = message.get("exitCode")
            failed = isinstance(exit_code, int) and exit_code != 0
            c.tool_result(entry_id, str(message.get("output") or ""), failed, ts)
        elif role == "compactionSummary":
            c.s.compacted = True

    def _assistant(self, c: Collector, message: dict[str, Any], ts: datetime | None) -> None:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                c.assistant_text(block["text"], ts)
            elif block.get("type") == "toolCall":
                c.tool_call(
                    str(block.get("name", "")), block.get("arguments"), str(block.get("id") or ""), ts
                )
        if message.get("stopReason") == "error":
            c.error(str(message.get("errorMessage") or "the model request failed"), ts)

    def _nested_calls(self, c: Collector, message: dict[str, Any], ts: datetime | None) -> None:
        """The calls a ``codemode`` script made, as tool calls of their own."""
        for call_id, name, args in nested_calls(message):
            c.tool_call(name, args, call_id, ts)


def _judge_mode(c: Collector, role: Any, ts: datetime | None, message: dict[str, Any] | None = None) -> None:
    """Whether the session is still one no person typed into (see ``PRINT_GAP_S``). The gap is
    measured from the header or the last message of the conversation: Pi writes its system message
    and a model change when a prompt is sent or chosen, so they say nothing of who sent it. The
    first prompt waits up to ``MCP_WAIT_S`` for MCP servers whose tools are declared, which the
    system message written before it names (``toolsAdded`` ``mcp__...``, an ``mcp_servers``
    section): that wait is allowed for too."""
    s = c.s
    previous = s.x.get("last_ts")
    if role == "system" and message is not None and s.user_count == 0 and _names_mcp(message):
        s.x["mcp_wait"] = True
    allowed = PRINT_GAP_S + (MCP_WAIT_S if s.x.get("mcp_wait") and s.user_count == 0 else 0.0)
    if role == "bashExecution" or (
        role == "user"
        and (ts is None or not isinstance(previous, float) or ts.timestamp() - previous > allowed)
    ):
        s.x["typed"] = True
    if role in ("session", "user", "assistant", "toolResult", "bashExecution") and ts is not None:
        s.x["last_ts"] = ts.timestamp()
    if role == "user" or s.x.get("typed"):
        s.non_interactive = not s.x.get("typed")


def _names_mcp(message: dict[str, Any]) -> bool:
    sections, tools = message.get("sections"), message.get("toolsAdded")
    if isinstance(sections, dict) and sections.get("mcp_servers"):
        return True
    return isinstance(tools, list) and any(
        isinstance(t, dict) and str(t.get("name", "")).startswith("mcp__") for t in tools
    )


def nested_calls(message: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """``(id, name, arguments)`` of each inner call a tool result records (``nestedCalls.calls``, else
    ``details.calls`` whose arguments are a JSON string), at most ``NESTED_CALLS_MAX``."""
    nested = message.get("nestedCalls")
    calls = nested.get("calls") if isinstance(nested, dict) else None
    key = "arguments"
    if not isinstance(calls, list):
        details = message.get("details")
        calls = details.get("calls") if isinstance(details, dict) else None
        key = "args"
    if not isinstance(calls, list):
        return []
    found = []
    for call in calls[:NESTED_CALLS_MAX]:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            continue
        args = call.get(key)
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {}
        found.append((str(call.get("id") or ""), call["name"], args if isinstance(args, dict) else {}))
    return found
