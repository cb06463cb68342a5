"""Gemini CLI: ``~/.gemini/tmp/<project hash or slug>/chats/``.

- Legacy (<= v0.38): ``session-<ts>-<id8>.json``, one pretty-printed object rewritten in place on
  every update. A read that ends mid-object is a write in progress: ``TranscriptIncomplete``
  (retry later), not an error.
- v0.39+: ``session-*.jsonl``, a metadata line, message records re-appended whenever a message
  changes (the last record of an id wins, in the place the id first appeared), ``{"$set": {...}}``
  metadata updates (``messages`` in a ``$set`` is a checkpoint of the model's history written by
  ``/compress``: it marks the session compacted, and its summary is not a user message; the messages
  before it stay), ``{"$rewindTo": id}`` (drops that message and everything after it).
- Sub-agents: ``kind: "subagent"``, files under ``chats/<parent session id>/`` (v0.37+), and, in
  older versions, an extra ``session-*`` file that shares the parent's ``sessionId`` and starts with
  the delegated ``<objective>``. The file, not the session id, is the identity.
- The working directory is the project root: ``<project dir>/.project_root``, else
  ``~/.gemini/projects.json`` (``{projects: {path: slug}}``, or a path whose sha256 is the hash
  directory's name or the record's ``projectHash``).
- Headless runs (``gemini -p``) are not recorded in the format, so ``non_interactive`` stays False.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.agents.gemini_cli import NAME, discover
from pipeline.agents.gemini_cli.projects import GeminiProjects
from pipeline.errors import TranscriptIncomplete, TranscriptUnreadable
from pipeline.safefile import open_regular, read_at_most
from pipeline.sources import registry
from pipeline.sources._collector import Collector, Summary
from pipeline.sources._discover import describe_os_error
from pipeline.sources._jsonl import JsonlAdapter
from pipeline.sources._lines import NESTED_TOO_DEEPLY
from pipeline.sources._time import parse_ts
from pipeline.sources.base import ParseResult, ParserState, last_guard
from pipeline.transcript import Transcript

MAX_LEGACY_BYTES = 256 * 1024 * 1024
_SLASH_COMMAND_RE = re.compile(r"^(?:/[A-Za-z][\w-]*|\?)(?:\s|$)")
_OBJECTIVE_RE = re.compile(r"<objective>.*</objective>", re.S)


def part_text(content: Any) -> str:
    """Text of a Gemini ``PartListUnion`` (a string, a part, or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            parts.append(part["text"])
        elif isinstance(part, dict) and "inlineData" in part:
            parts.append("[image]")
    return "\n".join(parts)


def _result_text(call: dict[str, Any]) -> tuple[str, bool]:
    failed = call.get("status") in ("error", "cancelled")
    texts: list[str] = []
    result = call.get("result")
    for part in result if isinstance(result, list) else [result]:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            for key in ("output", "error", "llmContent", "content"):
                value = response.get(key)
                if value is not None:
                    texts.append(value if isinstance(value, str) else json.dumps(value, default=str))
                    failed = failed or key == "error"
                    break
        elif isinstance(part, dict | str):
            texts.append(part_text(part))
    if not any(texts) and isinstance(call.get("resultDisplay"), str):
        texts = [call["resultDisplay"]]
    return "\n".join(t for t in texts if t), failed


def _looks_truncated(text: str, exc: ValueError) -> bool:
    """A prefix of a JSON object: what a reader sees while ``writeFileSync`` rewrites the file."""
    body = text.rstrip()
    if not body.startswith("{"):
        return False
    at = getattr(exc, "pos", 0)
    return not body.endswith("}") or at >= len(body) - 1 or "Unterminated string" in str(exc)


class GeminiCliAdapter(JsonlAdapter):
    source: str = NAME

    def __init__(self, projects_json: Path | None = None) -> None:
        self._projects = GeminiProjects(projects_json)

    # -- discovery ------------------------------------------------------------------------------
    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover(root)

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, self.discover_paths(root))

    # -- parsing --------------------------------------------------------------------------------
    def parse(
        self,
        path: Path,
        start_offset: int = 0,
        state: ParserState | None = None,
        *,
        with_items: bool = True,
        max_bytes: int | None = None,
    ) -> ParseResult:
        if path.name.endswith(".json"):
            legacy = with_items and start_offset == 0
            return last_guard(
                self.source,
                path,
                start_offset,
                state,
                lambda: self._parse_legacy(path, with_items=legacy, max_bytes=max_bytes),
            )
        return super().parse(path, start_offset, state, with_items=with_items, max_bytes=max_bytes)

    def _parse_legacy(self, path: Path, *, with_items: bool, max_bytes: int | None = None) -> ParseResult:
        """The whole file, one JSON object, read no further than ``max_bytes`` (the size the scan
        saw): a file rewritten larger since then waits for the next scan."""
        cap = MAX_LEGACY_BYTES if max_bytes is None else min(max_bytes, MAX_LEGACY_BYTES)
        try:
            fd, _info = open_regular(path)
            try:
                data = read_at_most(fd, cap + 1)
            finally:
                os.close(fd)
        except OSError as exc:
            return ParseResult(None, 0, None, describe_os_error(path, exc))
        if len(data) > cap:
            if cap < MAX_LEGACY_BYTES:
                return ParseResult(
                    None,
                    0,
                    None,
                    TranscriptIncomplete(
                        "the file changed since it was scanned; it is read at the next scan"
                    ),
                )
            return ParseResult(None, 0, None, TranscriptUnreadable(f"larger than {MAX_LEGACY_BYTES} bytes"))
        text = data.replace(b"\x00", b"").decode("utf-8", errors="replace")
        if not text.strip():
            return ParseResult(None, 0, None, TranscriptIncomplete("the file is empty (being written)"))
        try:
            record = json.loads(text)
        except RecursionError:
            return ParseResult(None, 0, None, TranscriptUnreadable(NESTED_TOO_DEEPLY))
        except ValueError as exc:
            if _looks_truncated(text, exc):
                return ParseResult(
                    None, 0, None, TranscriptIncomplete("the file ends mid-object (being rewritten)")
                )
            return ParseResult(None, 0, None, TranscriptUnreadable(f"invalid JSON ({exc})"))
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            return ParseResult(
                None,
                0,
                None,
                TranscriptUnreadable(f"not a {registry.label_of(self.source)} session (no messages list)"),
            )
        c = Collector(Summary(source=self.source), self.source, with_items=with_items)
        self.begin(c, path)
        self.feed(c, {key: value for key, value in record.items() if key != "messages"}, False)
        for message in record["messages"]:
            if isinstance(message, dict):
                self.feed(c, message, False)
        c.s.lines = c.s.records = c.s.recognized = 1
        return ParseResult(self.finish(c, path, len(data)), len(data), c.s.to_state())

    def begin(self, c: Collector, path: Path) -> None:
        c.s.x["msgs"] = []
        if path.parent.name != "chats" and "chats" in path.parts:
            c.s.subagent = True
            c.s.parent_session_id = path.parent.name

    def feed(self, c: Collector, record: dict[str, Any], has_recall: bool) -> bool:
        if "$rewindTo" in record:
            self._rewind(c, str(record["$rewindTo"]))
            return True
        if isinstance(record.get("$set"), dict):
            self._metadata(c, record["$set"], update=True)
            return True
        if isinstance(record.get("id"), str) and isinstance(record.get("type"), str) and "content" in record:
            self._message(c, record)
            return True
        if isinstance(record.get("sessionId"), str) and ("projectHash" in record or "startTime" in record):
            self._metadata(c, record, update=False)
            return True
        return False

    def _metadata(self, c: Collector, meta: dict[str, Any], *, update: bool) -> None:
        s = c.s
        if isinstance(meta.get("sessionId"), str):
            if s.session_id is None:
                s.session_id = meta["sessionId"]
            elif update:
                s.forked = True  # `gemini --resume` appends `$set {sessionId}`
        for key in ("startTime", "lastUpdated"):
            s.see_time(parse_ts(meta.get(key)))
        if isinstance(meta.get("projectHash"), str):
            s.x["project_hash"] = meta["projectHash"]
        if meta.get("kind") == "subagent":
            s.subagent = True
        if isinstance(meta.get("messages"), list):
            # A checkpoint written by /compress (or masking): the model's history from now on starts
            # from a summary. The messages before it were the user's work and stay; the summary is
            # not the user's words.
            s.compacted = True

    def _positions(self, c: Collector) -> dict[str, int]:
        """Message id -> its place in ``x["msgs"]`` (kept in memory, rebuilt after a load)."""
        msgs: list[list[Any]] = c.s.x["msgs"]
        positions: dict[str, int] | None = c.scratch.get("positions")
        if positions is None or len(positions) != len(msgs):
            positions = {entry[0]: at for at, entry in enumerate(msgs)}
            c.scratch["positions"] = positions
        return positions

    def _rewind(self, c: Collector, message_id: str) -> None:
        msgs: list[list[Any]] = c.s.x["msgs"]
        cut = self._positions(c).get(message_id, len(msgs))
        dropped = [str(entry[0]) for entry in msgs[cut:]]
        del msgs[cut:]
        c.scratch.pop("positions", None)
        c.s.user_count = sum(1 for entry in msgs if entry[1])
        records: dict[str, dict[str, Any]] | None = c.scratch.get("records")
        if records is not None:
            for gone in dropped:
                records.pop(gone, None)

    def _message(self, c: Collector, message: dict[str, Any]) -> None:
        s = c.s
        ts = parse_ts(message.get("timestamp"))
        s.see_time(ts)
        kind = message.get("type")
        counted = False
        if kind == "user":
            text = part_text(message.get("content"))
            if not s.first_user_seen and _OBJECTIVE_RE.search(text) and text.startswith("Your task is"):
                s.subagent = True  # a pre-0.31 sub-agent file: it shares the parent's sessionId
                s.parent_session_id = s.parent_session_id or s.session_id
            if not _SLASH_COMMAND_RE.match(text.lstrip()):
                counted = bool(c.clean_user_text(text, ts))
        elif kind == "gemini":
            self._tool_calls(Collector(s, self.source, with_items=False), message)
        msgs: list[list[Any]] = s.x["msgs"]
        positions = self._positions(c)
        at = positions.get(message["id"])
        if at is None:
            positions[message["id"]] = len(msgs)
            msgs.append([message["id"], counted])
            s.user_count += counted
        else:  # the same message written again: the last version wins, in its first place
            s.user_count += counted - msgs[at][1]
            msgs[at][1] = counted
        if c.items is not None:
            c.scratch.setdefault("records", {})[message["id"]] = message

    def _tool_calls(self, c: Collector, message: dict[str, Any]) -> None:
        calls = message.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            ts = parse_ts(call.get("timestamp")) or parse_ts(message.get("timestamp"))
            call_id = str(call.get("id") or "")
            display = call.get("displayName") if isinstance(call.get("displayName"), str) else None
            c.tool_call(str(call.get("name", "")), call.get("args"), call_id, ts, display_name=display)
            if call.get("result") is not None or call.get("resultDisplay") is not None:
                text, failed = _result_text(call)
                c.tool_result(call_id, text, failed, ts)

    def _items(self, records: dict[str, dict[str, Any]]) -> Collector:
        """Replay the final version of each message into a fresh collector for the items."""
        c = Collector(Summary(source=self.source), self.source, with_items=True)
        for message in records.values():
            ts = parse_ts(message.get("timestamp"))
            kind = message.get("type")
            text = part_text(message.get("content"))
            if kind == "user" and not _SLASH_COMMAND_RE.match(text.lstrip()):
                c.user_prompt(text, ts)
            elif kind == "gemini":
                c.assistant_text(text, ts)
                self._tool_calls(c, message)
            elif kind == "error":
                c.error(text, ts)
        return c

    def finish(self, c: Collector, path: Path, offset: int) -> Transcript:
        if c.items is not None:
            c.items[:] = self._items(c.scratch.get("records", {})).items or []
        return c.transcript(
            path,
            offset,
            fallback_id=self.fallback_session_id(path),
            cwd=self._projects.root_for(path, c.s.x.get("project_hash")),
        )
