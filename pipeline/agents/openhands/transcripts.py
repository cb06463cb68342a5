"""OpenHands 1.16: a conversation folder (``conversation.py``) read into a transcript.

- ``MessageEvent`` with ``source: user`` (``llm_message.role: user``) is the user's turn: its
  ``llm_message`` text only (``extended_content``, the text a keyword-triggered skill added, and
  ``activated_skills`` are OpenHands', never the user's words). In a sub-agent's conversation the
  "user" message is the parent agent's task prompt: kept as the parent's words, not as a turn.
- ``MessageEvent`` with ``source: agent`` (role ``assistant``) and the ``thought`` of an
  ``ActionEvent`` are the agent's words; the ``ActionEvent`` is a tool call (``tool_name``, its
  ``tool_call.arguments``), its ``ObservationEvent`` (``source: environment``) the tool's output,
  matched by ``tool_call_id``; ``UserRejectObservation`` and ``AgentErrorEvent`` are failed
  results, ``ConversationErrorEvent`` an error.
- ``SystemPromptEvent`` (the system prompt, and in ``dynamic_context`` AGENTS.md and every always-on
  skill, memd's published memory included) is skipped whole; so is ``base_state.json``'s copy of
  the skills. ``Condensation``/``CondensationSummaryEvent`` mark a compaction.
- MCP tools are ``MCPToolAction`` calls: external context ``mcp:<server>/<tool>``. No event names
  the server. OpenHands' MCP client (fastmcp) offers one server's tools under their own names
  (``memory_search``) and, with several servers, each under ``<server>_<tool>``; so the server is
  read from the servers the conversation had: the state's ``mcp_config`` when it records one, else
  (the CLI, 1.16, records none) the enabled servers of the ``mcp.json`` of the OpenHands home the
  conversation is kept in (``<home>/conversations/<id>``), as it is when memd reads it. One server:
  that one; several: the longest ``<server>_`` the tool's name starts with; else ``unknown``.
  Browsing tools ``browser_*`` are ``web_fetch``; shell commands that fetch are recognised as for
  every agent.
- The project is ``workspace.working_dir`` of ``base_state.json`` (the folder it ran in; the scan
  resolves it to the repository root), else the working directory the system prompt names.
- Headless runs (``--headless``) are told only by ``confirmation_policy.kind: NeverConfirm``
  (the TUI's default is ``AlwaysConfirm``; ``--yolo`` in the TUI gives ``NeverConfirm`` too).
- Timestamps are local time without a zone: read as this machine's local time.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from pipeline.agents.openhands import NAME, conversation
from pipeline.errors import TranscriptIncomplete, TranscriptUnreadable
from pipeline.safefile import read_capped
from pipeline.sources._collector import Collector, Summary
from pipeline.sources._tools import compact_json
from pipeline.sources.base import ParseResult, ParserState, last_guard
from pipeline.sources.walk import Walked

log = structlog.get_logger(__name__)

STATE_VERSION = 1
_CWD_RE = re.compile(r"Your current working directory is: (\S[^\n]*)")
_COMPACTION_KINDS = frozenset({"Condensation", "CondensationSummaryEvent", "CondensationRequest"})
_SKIPPED_KINDS = frozenset({"SystemPromptEvent", "PauseEvent", "HookExecutionEvent", "TokenEvent"})
_BROWSER_PREFIX = "browser_"


def local_ts(value: Any) -> datetime | None:
    """An OpenHands timestamp (ISO, local time without a zone) as aware UTC."""
    if not isinstance(value, str) or not value[:1].isdigit():
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    try:
        return parsed.astimezone(UTC)  # a naive time is taken as local time
    except (OverflowError, OSError, ValueError):
        return None


def content_text(blocks: Any) -> str:
    """The text blocks of a ``content`` list (an image is ``[image]``)."""
    texts: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "image" or "image_urls" in block:
            texts.append("[image]")
    return "\n".join(texts)


def _names_sha(names: list[str]) -> str:
    return hashlib.sha256("\n".join(names).encode("utf-8", "surrogatepass")).hexdigest()


class OpenHandsAdapter:
    """``pipeline.sources.base.WalkingAdapter`` for OpenHands' conversation folders."""

    source: str = NAME

    def walk(self, root: Path) -> list[Walked]:
        return conversation.walk(root)

    def discover_paths(self, root: Path) -> Iterator[str]:
        return iter([path for path, _key, _why in conversation.walk(root)])

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, self.discover_paths(root))

    def parse(
        self,
        path: Path,
        start_offset: int = 0,
        state: ParserState | None = None,
        *,
        with_items: bool = True,
        max_bytes: int | None = None,
    ) -> ParseResult:
        """The conversation as it is now (read whole), whatever ``max_bytes`` (the version the scan
        saw) says: its version is returned as ``new_offset``."""
        return last_guard(
            self.source, path, start_offset, state, lambda: self._parse(path, start_offset, state, with_items)
        )

    def _parse(
        self, path: Path, start_offset: int, state: ParserState | None, with_items: bool
    ) -> ParseResult:
        try:
            conv = conversation.read(path)
        except conversation.ConversationUnreadable as exc:
            unusable = (TranscriptIncomplete if exc.retryable else TranscriptUnreadable)(
                f"OpenHands conversation: {exc.reason}"
            )
            return ParseResult(None, start_offset, state, unusable)
        fallback_id = path.name
        summary = Summary(source=self.source)
        c = Collector(summary, self.source, with_items=with_items)
        sub = conversation.is_subagent(path)
        if sub:
            summary.subagent = True
            summary.parent_session_id = path.parent.parent.name
        c.scratch["mcp_servers"] = home_servers(path)
        self._state(c, conv.state)
        if conv.state_problem:
            summary.note_error(conv.state_problem)
        names: list[str] = []
        for name, event, why in conv.events:
            names.append(name)
            summary.records += 1
            if event is None:
                summary.note_error(f"{name}: {why}")
                continue
            if self._event(c, event, sub):
                summary.recognized += 1
        if not any(event is not None for _name, event, _problem in conv.events):
            waiting = TranscriptIncomplete("no event yet")
            return ParseResult(None, conv.version, state, waiting, bytes_read=conv.bytes_read)
        previous = _previous(state)
        restarted = False
        if start_offset > 0 and previous is not None:
            n, sha = previous
            restarted = n > len(names) or _names_sha(names[:n]) != sha
        elif start_offset > 0:
            restarted = True
        new_state = {
            "v": STATE_VERSION,
            "source": str(self.source),
            "n": len(names),
            "sha": _names_sha(names),
        }
        transcript = c.transcript(path, conv.version, fallback_id=fallback_id)
        if summary.session_id is None:
            transcript = replace(transcript, session_id=fallback_id)
        return ParseResult(transcript, conv.version, new_state, None, restarted, bytes_read=conv.bytes_read)

    # -- the state file ---------------------------------------------------------------------------
    def _state(self, c: Collector, state: dict[str, Any] | None) -> None:
        if state is None:
            return
        s = c.s
        conv_id = state.get("id")
        if isinstance(conv_id, str) and 0 < len(conv_id) <= 128:
            s.session_id = conv_id.replace("-", "")
        workspace = state.get("workspace")
        cwd = workspace.get("working_dir") if isinstance(workspace, dict) else None
        if isinstance(cwd, str) and cwd.startswith("/"):
            s.cwd = cwd
        agent = state.get("agent")
        mcp = agent.get("mcp_config") if isinstance(agent, dict) else None
        if isinstance(mcp, dict) and isinstance(mcp.get("mcpServers"), dict):
            c.scratch["mcp_servers"] = enabled_servers(mcp)
        policy = state.get("confirmation_policy")
        if isinstance(policy, dict) and policy.get("kind") == "NeverConfirm":
            s.non_interactive = True

    # -- one event --------------------------------------------------------------------------------
    def _event(self, c: Collector, event: dict[str, Any], sub: bool) -> bool:
        kind = event.get("kind")
        if not isinstance(kind, str):
            return False
        ts = local_ts(event.get("timestamp"))
        c.s.see_time(ts)
        if kind == "SystemPromptEvent":
            self._system_prompt(c, event)
        elif kind == "MessageEvent":
            self._message(c, event, ts, sub)
        elif kind == "ActionEvent":
            self._action(c, event, ts)
        elif kind == "ObservationEvent":
            self._observation(c, event, ts)
        elif kind == "UserRejectObservation":
            reason = event.get("rejection_reason")
            text = (
                f"rejected by the user: {reason}"
                if isinstance(reason, str) and reason
                else "rejected by the user"
            )
            c.tool_result(str(event.get("tool_call_id") or ""), text, True, ts)
        elif kind == "AgentErrorEvent":
            error = str(event.get("error") or "the tool failed")
            call_id = event.get("tool_call_id")
            if isinstance(call_id, str) and call_id:
                c.tool_result(call_id, error, True, ts)
            else:
                c.error(error, ts)
        elif kind == "ConversationErrorEvent":
            c.error(str(event.get("detail") or event.get("code") or "the conversation failed"), ts)
        elif kind in _COMPACTION_KINDS:
            c.s.compacted = True
        elif kind not in _SKIPPED_KINDS:
            return False
        return True

    def _system_prompt(self, c: Collector, event: dict[str, Any]) -> None:
        """Only the working directory, when the state file did not give it: the rest is OpenHands'
        prompt and the instruction files it loaded (memd's memory among them)."""
        if c.s.cwd is not None:
            return
        context = event.get("dynamic_context")
        text = context.get("text") if isinstance(context, dict) else None
        match = _CWD_RE.search(text) if isinstance(text, str) else None
        if match and match.group(1).strip().startswith("/"):
            c.s.cwd = match.group(1).strip()

    def _message(self, c: Collector, event: dict[str, Any], ts: datetime | None, sub: bool) -> None:
        message = event.get("llm_message")
        if not isinstance(message, dict):
            return
        text = content_text(message.get("content"))
        role, origin = message.get("role"), event.get("source")
        if role == "user" and origin == "user":
            if sub:
                c.assistant_text(f"[task from the parent agent] {text}", ts)
            elif text:
                c.user_prompt(text, ts)
        elif role == "assistant" and origin == "agent":
            c.assistant_text(text, ts)

    def _action(self, c: Collector, event: dict[str, Any], ts: datetime | None) -> None:
        thought = content_text(event.get("thought"))
        if thought:
            c.assistant_text(thought, ts)
        name = event.get("tool_name")
        call = event.get("tool_call")
        if not isinstance(name, str) or not name:
            name = call.get("name") if isinstance(call, dict) and isinstance(call.get("name"), str) else ""
        args: Any = None
        raw = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(raw, str):
            try:
                args = json.loads(raw)
            except (ValueError, RecursionError):
                args = raw
        action = event.get("action")
        if not isinstance(args, dict) and isinstance(action, dict):
            args = {k: v for k, v in action.items() if k != "kind"}
        call_id = str(event.get("tool_call_id") or "")
        kind = action.get("kind") if isinstance(action, dict) else None
        if kind == "MCPToolAction":
            server, tool = mcp_server(str(name), c.scratch.get("mcp_servers", ()))
            c.tool_call(tool, args, call_id, ts, namespace=f"mcp__{server}")
            return
        if str(name).startswith(_BROWSER_PREFIX):
            c.external("web_fetch")
        c.tool_call(str(name), args, call_id, ts)

    def _observation(self, c: Collector, event: dict[str, Any], ts: datetime | None) -> None:
        observation = event.get("observation")
        if not isinstance(observation, dict):
            observation = {}
        text = content_text(observation.get("content"))
        if not text and "content" in observation:
            text = compact_json(observation.get("content"))
        code = observation.get("exit_code")
        failed = observation.get("is_error") is True or (
            isinstance(code, int) and not isinstance(code, bool) and code not in (0, -1)
        )
        c.tool_result(str(event.get("tool_call_id") or ""), text, failed, ts)


MCP_JSON_MAX_BYTES = 1 << 20
"""An ``mcp.json`` larger than this is not read for server names."""


def enabled_servers(config: Any) -> tuple[str, ...]:
    """The names of the enabled servers of an ``{"mcpServers": {...}}`` object."""
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    if not isinstance(servers, dict):
        return ()
    return tuple(
        name
        for name, entry in servers.items()
        if isinstance(name, str)
        and 0 < len(name) <= 64
        and not (isinstance(entry, dict) and entry.get("enabled") is False)
    )


def home_servers(folder: Path) -> tuple[str, ...]:
    """The enabled servers of the ``mcp.json`` beside the ``conversations`` folder that holds
    ``folder`` (a sub-agent's folder is inside its parent's); () when there is none or it is not a
    regular JSON file of a sane size (a FIFO, a symlink or garbage names nothing)."""
    for parent in folder.parents:
        if parent.name == "conversations":
            try:
                raw = read_capped(parent.parent / "mcp.json", MCP_JSON_MAX_BYTES, follow_symlinks=False)
                return enabled_servers(json.loads(raw))
            except (OSError, ValueError, RecursionError):
                return ()
    return ()


def mcp_server(name: str, servers: Sequence[str]) -> tuple[str, str]:
    """(server, tool) of an MCP tool offered as ``name`` when ``servers`` were set up."""
    if len(servers) == 1:
        return servers[0], name
    prefixes = sorted((s for s in servers if name.startswith(f"{s}_") and len(name) > len(s) + 1), key=len)
    if prefixes:
        return prefixes[-1], name[len(prefixes[-1]) + 1 :]
    return "unknown", name


def _previous(state: Any) -> tuple[int, str] | None:
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION or state.get("source") != NAME:
        return None
    n, sha = state.get("n"), state.get("sha")
    if isinstance(n, int) and not isinstance(n, bool) and n >= 0 and isinstance(sha, str):
        return n, sha
    return None
