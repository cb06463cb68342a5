"""Cline CLI 3.x: ``~/.cline/data/sessions/<id>/<id>.messages.json`` beside the manifest ``<id>.json``.

- The messages are ONE JSON object rewritten whole, in place, at every update (not JSON Lines):
  each parse reads the file again from the start, no further than the size the scan saw, and a
  read that ends mid-object is a rewrite caught in progress (``TranscriptIncomplete``: read again
  later). Cline keeps every message in it (a compaction writes a file of its own), so a parse
  that resumes is no restart: what was extracted of the earlier messages stays extracted.
- ``{version, updated_at, agent: lead|subagent, sessionId, origin {source, mode, version,
  parentThreadId}, messages: [{id, role, ts (unix ms), content: [blocks]}], system_prompt}``.
- The user's words are ``text`` blocks of a ``user`` message wrapped in ``<user_input mode="act|
  plan|yolo">``; other ``user`` text is Cline's own (``[SYSTEM] This run is not complete...``
  under ``--yolo``, a sub-agent's task from its parent) and never a turn. ``tool_result`` blocks
  (role ``user`` too) are tool output. ``run_commands`` and ``read_files`` take a list (commands,
  files) and answer a list of ``{query, result, success, error}``: each element is read as a call
  and its result of its own (so a command's fetch or a read of memd's files is seen as with any
  agent). Other results are a JSON string (an MCP tool's whole ``CallToolResult``).
- The manifest names the project (``cwd``, where Cline ran; ``workspace_root``, its git top level,
  when ``cwd`` is absent) and marks a one-shot run (``interactive: false``). A sub-agent's
  ``agent_*.messages.json`` sits in its parent's folder, without a manifest of its own: it takes
  the parent's. A ``<id>.compaction.json`` beside it says Cline compacted the session.
- ``system_prompt`` is Cline's base prompt (the rules it loaded, memd's included, are not in it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from pipeline.agents.cline import MESSAGES_SUFFIX, NAME, SUB_AGENT_PREFIX, discover
from pipeline.errors import TranscriptIncomplete, TranscriptUnreadable
from pipeline.safefile import UnsafeFile, open_regular, read_at_most, read_capped
from pipeline.sources._collector import Collector, Summary
from pipeline.sources._discover import describe_os_error
from pipeline.sources._lines import NESTED_TOO_DEEPLY
from pipeline.sources._time import parse_ts
from pipeline.sources._tools import WEB_FETCH, compact_json
from pipeline.sources.base import ParseResult, ParserState, last_guard

log = structlog.get_logger(__name__)

MAX_MESSAGES_BYTES = 256 * 1024 * 1024
"""A messages file larger than this is not read (a looping ``--yolo`` run reached 3.7 MB)."""
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_USER_INPUT_RE = re.compile(r"^\s*<user_input(?:\s+mode=\"[^\"]*\")?\s*>(.*)</user_input>\s*$", re.S)
_LIST_TOOLS = {"run_commands": ("commands", "command"), "read_files": ("files", "path")}
"""Tools that take a list and answer one result per element: the list's key, and the key each
element is read under (a command, a path)."""
_WEB_FETCH_TOOLS = frozenset({"fetch_web_content"})


def _ms(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e14:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return parse_ts(value)


def user_words(text: str) -> str | None:
    """The user's words of a ``user`` text block, or None when it is Cline's own text."""
    match = _USER_INPUT_RE.match(text)
    return match.group(1).strip() if match else None


def _looks_torn(text: str, exc: ValueError) -> bool:
    """A prefix of a JSON object: what a reader sees while the file is rewritten."""
    body = text.rstrip()
    if not body.startswith("{") or str(exc).startswith("Extra data"):
        return False  # a whole object followed by more is no rewrite in progress
    at = getattr(exc, "pos", 0)
    return not body.endswith("}") or at >= len(body) - 1 or "Unterminated string" in str(exc)


def _load(data: bytes, what: str) -> tuple[Any, TranscriptUnreadable | None]:
    """``data`` as JSON, or the reason it cannot be (retryable when it is a rewrite in progress)."""
    text = data.replace(b"\x00", b"").decode("utf-8", errors="replace")
    if not text.strip():
        return None, TranscriptIncomplete(f"the {what} is empty (being written)")
    try:
        return json.loads(text), None
    except RecursionError:
        return None, TranscriptUnreadable(f"the {what}: {NESTED_TOO_DEEPLY}")
    except ValueError as exc:
        if _looks_torn(text, exc):
            return None, TranscriptIncomplete(f"the {what} ends mid-object (being rewritten)")
        return None, TranscriptUnreadable(f"the {what} is not valid JSON ({exc})")


def _result_text(content: Any) -> tuple[str, bool]:
    """A non-list tool result (a JSON string, as Cline stores most) as text, and whether it failed."""
    value = content
    if isinstance(content, str):
        try:
            value = json.loads(content)
        except (ValueError, RecursionError):
            return content, False
    if isinstance(value, dict):
        failed = value.get("isError") is True or value.get("success") is False
        inner = value.get("content")
        if isinstance(inner, list):  # an MCP CallToolResult
            texts = [str(p.get("text")) for p in inner if isinstance(p, dict) and "text" in p]
            return "\n".join(texts) if texts else compact_json(inner), failed
        for key in ("result", "text", "error"):
            if isinstance(value.get(key), str):
                return value[key], failed or key == "error"
        return compact_json(value), failed
    return (content if isinstance(content, str) else compact_json(content)), False


class ClineAdapter:
    """``SourceAdapter`` of Cline's sessions (see the module's docstring)."""

    source: str = NAME

    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover(root)

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
        return last_guard(
            self.source,
            path,
            start_offset,
            state,
            lambda: self._parse(path, start_offset, with_items=with_items, max_bytes=max_bytes),
        )

    def _parse(
        self, path: Path, start_offset: int, *, with_items: bool, max_bytes: int | None
    ) -> ParseResult:
        """The whole file, read no further than ``max_bytes`` (the size the scan saw): a file
        rewritten larger since waits for the next scan."""
        cap = MAX_MESSAGES_BYTES if max_bytes is None else min(max_bytes, MAX_MESSAGES_BYTES)
        try:
            fd, info = open_regular(path)
            try:
                if info.st_size > MAX_MESSAGES_BYTES:
                    return ParseResult(
                        None,
                        0,
                        None,
                        TranscriptUnreadable(f"larger than {MAX_MESSAGES_BYTES} bytes: not read"),
                    )
                data = read_at_most(fd, cap + 1)
            finally:
                os.close(fd)
        except OSError as exc:
            return ParseResult(None, start_offset, None, describe_os_error(path, exc))
        if len(data) > cap:
            later = TranscriptIncomplete("the file changed since it was scanned; it is read at the next scan")
            return ParseResult(None, 0, None, later)
        record, problem = _load(data, "session file")
        if problem is None and not (isinstance(record, dict) and isinstance(record.get("messages"), list)):
            problem = TranscriptUnreadable("not a Cline session (no messages list)")
        if problem is not None:
            return ParseResult(None, 0, None, problem)
        manifest, problem = self._manifest(path)
        if problem is not None:
            return ParseResult(None, 0, None, problem)
        c = Collector(Summary(source=self.source), self.source, with_items=with_items)
        self._envelope(c, path, record, manifest)
        for message in record["messages"]:
            c.s.records += 1
            if not isinstance(message, dict):
                continue
            try:
                self._message(c, message)
            except Exception as exc:  # a message the adapter cannot take costs that message only
                c.s.note_error(f"message {c.s.records}: unreadable ({type(exc).__name__})")
                continue
            c.s.recognized += 1
        c.s.lines = 1
        transcript = c.transcript(path, len(data), fallback_id=self._fallback_id(path), cwd=c.s.cwd)
        return ParseResult(transcript, len(data), c.s.to_state())

    # -- the manifest ---------------------------------------------------------------------------
    def _manifest(self, path: Path) -> tuple[dict[str, Any] | None, TranscriptUnreadable | None]:
        """The session's manifest (a sub-agent's is its parent's), None when there is none; a
        manifest that is not a regular file, is too large or is not JSON is the reason the session
        cannot be read (its project would be unknown), torn JSON a retry."""
        folder = path.parent
        manifest = folder / f"{folder.name}.json"
        try:
            data = read_capped(manifest, MAX_MANIFEST_BYTES, follow_symlinks=False)
        except FileNotFoundError:
            return None, None
        except UnsafeFile as exc:
            return None, TranscriptUnreadable(f"its manifest {manifest.name} {exc.reason}")
        value, problem = _load(data, f"manifest {manifest.name}")
        if problem is not None:
            return None, problem
        if not isinstance(value, dict):
            return None, TranscriptUnreadable(f"its manifest {manifest.name} is not a JSON object")
        return value, None

    def _envelope(
        self, c: Collector, path: Path, record: dict[str, Any], manifest: dict[str, Any] | None
    ) -> None:
        s = c.s
        if isinstance(record.get("sessionId"), str) and record["sessionId"]:
            s.session_id = record["sessionId"]
        found = record.get("origin")
        origin: dict[str, Any] = found if isinstance(found, dict) else {}
        if isinstance(origin.get("version"), str):
            s.agent_version = origin["version"]
        if (
            path.name.startswith(SUB_AGENT_PREFIX)
            or record.get("agent") == "subagent"
            or origin.get("mode") == "subagent"
        ):
            s.subagent = True
            parent = origin.get("parentThreadId")
            s.parent_session_id = parent if isinstance(parent, str) and parent else path.parent.name
        s.see_time(_ms(record.get("updated_at")))
        if isinstance(manifest, dict):
            for key in ("cwd", "workspace_root"):
                if isinstance(manifest.get(key), str) and manifest[key]:
                    s.cwd = manifest[key]
                    break
            s.non_interactive = manifest.get("interactive") is False
            s.see_time(_ms(manifest.get("started_at")))
            if not s.subagent:
                s.see_time(_ms(manifest.get("ended_at")))
            if not s.agent_version and isinstance(manifest.get("metadata"), dict):
                history = manifest["metadata"].get("sessionHistoryOrigin")
                if isinstance(history, dict) and isinstance(history.get("version"), str):
                    s.agent_version = history["version"]
        if not s.subagent:
            try:
                os.lstat(path.parent / f"{path.parent.name}.compaction.json")
                s.compacted = True
            except OSError:
                pass

    def _fallback_id(self, path: Path) -> str:
        name = path.name.removesuffix(MESSAGES_SUFFIX)
        return f"{path.parent.name}__{name}" if name.startswith(SUB_AGENT_PREFIX) else name

    # -- the messages ---------------------------------------------------------------------------
    def _message(self, c: Collector, message: dict[str, Any]) -> None:
        ts = _ms(message.get("ts"))
        c.s.see_time(ts)
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}]
        role = message.get("role")
        for block in blocks:
            kind = block.get("type")
            if role == "user" and kind == "text" and isinstance(block.get("text"), str):
                self._user_text(c, block["text"], ts)
            elif role == "user" and kind == "tool_result":
                self._tool_result(c, block, ts)
            elif role == "assistant" and kind == "text" and isinstance(block.get("text"), str):
                c.assistant_text(block["text"], ts)
            elif role == "assistant" and kind == "tool_use":
                self._tool_use(c, block, ts)

    def _user_text(self, c: Collector, text: str, ts: datetime | None) -> None:
        words = user_words(text)
        if words is not None:
            c.user_prompt(words, ts)
        elif "<memd-recall" in text:
            c.clean_user_text(text, ts)  # a recall block passed on by Cline still counts as given

    def _tool_use(self, c: Collector, block: dict[str, Any], ts: datetime | None) -> None:
        name = str(block.get("name") or "")
        call_id = str(block.get("id") or "")
        args = block.get("input")
        if name in _WEB_FETCH_TOOLS:
            c.external(WEB_FETCH)
        listed = _LIST_TOOLS.get(name)
        if listed is not None and isinstance(args, dict) and isinstance(args.get(listed[0]), list):
            c.scratch.setdefault("split", set()).add(call_id)
            for at, element in enumerate(args[listed[0]]):
                one = element if isinstance(element, dict) else {listed[1]: element}
                c.tool_call(name, one, f"{call_id}#{at}", ts)
            return
        c.tool_call(name, args, call_id, ts)

    def _tool_result(self, c: Collector, block: dict[str, Any], ts: datetime | None) -> None:
        call_id = str(block.get("tool_use_id") or "")
        content = block.get("content")
        split = call_id in c.scratch.get("split", ())
        if split and isinstance(content, list):
            for at, element in enumerate(content):
                if not isinstance(element, dict):
                    c.tool_result(f"{call_id}#{at}", compact_json(element), False, ts)
                    continue
                text = element.get("result")
                out = text if isinstance(text, str) else "" if text is None else compact_json(text)
                failed = element.get("success") is False or bool(element.get("error"))
                if failed and isinstance(element.get("error"), str):
                    out = f"{element['error']}\n{out}" if out else element["error"]
                c.tool_result(f"{call_id}#{at}", out, failed, ts)
            return
        text, failed = _result_text(content)
        c.tool_result(f"{call_id}#0" if split else call_id, text, failed or block.get("is_error") is True, ts)
