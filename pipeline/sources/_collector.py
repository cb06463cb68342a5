"""What an adapter accumulates while it reads a transcript.

``Summary`` is the small, JSON-serializable state an incremental parse carries from one call to the
next: ids, times, counts, flags, external context, memory reads and pending memory-read calls. It
never holds the conversation, so its size does not grow with the file (only with memory reads).
``Collector`` wraps a ``Summary`` and, on a parse from byte 0, also collects the items.

Every decision that changes the summary is taken the same way whether or not items are collected,
so a file parsed in any number of appended pieces gives the same summary as one full parse.
"""

from __future__ import annotations

import bisect
import copy
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.sources import injected
from pipeline.sources._time import iso, parse_ts
from pipeline.sources._tools import args_summary, call_external, cap, essential_arg, memory_read_request
from pipeline.transcript import (
    MEMD_SESSION_MARKER,
    OPT_OUT_MARKER,
    AssistantText,
    ErrorItem,
    Item,
    MemoryRead,
    MemoryReadVia,
    ParseErrors,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
)

STATE_VERSION = 1
ITEM_TEXT_MAX_CHARS = 50_000
MAX_PENDING_READS = 256
# A session that reads memd's files more often than this keeps its first reads only, so the state
# an incremental parse carries stays small (a real session reads memory a handful of times).
MAX_MEMORY_READS = 256
RECENT_CALL_IDS = 256


@dataclass(slots=True)
class Summary:
    source: str
    session_id: str | None = None
    cwd: str | None = None
    started_at: datetime | None = None
    last_activity: datetime | None = None
    user_count: int = 0
    first_user_seen: bool = False
    memd_generated: bool = False
    opted_out: bool = False
    subagent: bool = False
    parent_session_id: str | None = None
    forked: bool = False
    compacted: bool = False
    compaction_run: bool = False
    non_interactive: bool = False
    agent_version: str | None = None
    external: list[str] = field(default_factory=list)
    memory_reads: list[MemoryRead] = field(default_factory=list)
    read_call_ids: list[str] = field(default_factory=list)
    pending_reads: dict[str, list[Any]] = field(default_factory=dict)
    lines: int = 0
    records: int = 0
    recognized: int = 0
    errors: int = 0
    first_error: str | None = None
    first_byte: str = ""
    head_len: int = 0
    head_sha: str = ""
    tail_len: int = 0
    tail_sha: str = ""
    x: dict[str, Any] = field(default_factory=dict)

    def see_time(self, ts: datetime | None) -> None:
        if ts is None:
            return
        if self.started_at is None or ts < self.started_at:
            self.started_at = ts
        if self.last_activity is None or ts > self.last_activity:
            self.last_activity = ts

    def note_error(self, message: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = message

    def to_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {name: copy.deepcopy(getattr(self, name)) for name in _FIELDS}
        state["started_at"] = iso(self.started_at)
        state["last_activity"] = iso(self.last_activity)
        state["memory_reads"] = [[r.path, iso(r.timestamp), r.via] for r in self.memory_reads]
        state["v"] = STATE_VERSION
        return state

    @classmethod
    def from_state(cls, state: Any, source: str) -> Summary | None:
        """The summary a previous parse returned, or None when it is not one (then parse afresh)."""
        if not isinstance(state, dict) or state.get("v") != STATE_VERSION or state.get("source") != source:
            return None
        try:
            values: dict[str, Any] = copy.deepcopy(
                {name: state[name] for name in _FIELDS if name in state or name not in _ADDED_FIELDS}
            )
            if not all(isinstance(values[k], t) for k, t in _CONTAINER_FIELDS.items()):
                return None
            values["started_at"] = parse_ts(values["started_at"])
            values["last_activity"] = parse_ts(values["last_activity"])
            values["memory_reads"] = [MemoryRead(p, parse_ts(t), v) for p, t, v in values["memory_reads"]]
            return cls(**values)
        except (KeyError, TypeError, ValueError):
            return None


_FIELDS = tuple(f.name for f in fields(Summary))
# Fields added after STATE_VERSION 1 was stored: a state without them keeps their defaults, so an
# upgrade does not make every transcript parse again from byte 0.
_ADDED_FIELDS = frozenset({"tail_len", "tail_sha"})
_CONTAINER_FIELDS: dict[str, type] = {
    "external": list,
    "memory_reads": list,
    "read_call_ids": list,
    "pending_reads": dict,
    "x": dict,
}


class Collector:
    """Feeds a ``Summary`` and, when ``with_items``, the conversation items."""

    def __init__(self, summary: Summary, source: str, *, with_items: bool) -> None:
        self.s = summary
        self.source: str = source
        self.items: list[Item] | None = [] if with_items else None
        self.scratch: dict[str, Any] = {}
        self._merge_at: dict[str, int] = {}
        self._merge_seen: set[tuple[str, str]] = set()
        self._calls_seen: set[str] = set()
        self._memd_results: dict[str, list[str]] = {}

    # -- summary --------------------------------------------------------------------------------
    def external(self, tag: str | None) -> None:
        if tag and tag not in self.s.external:
            bisect.insort(self.s.external, tag)

    def memory_read(self, path: str, via: MemoryReadVia, ts: datetime | None) -> None:
        if len(self.s.memory_reads) < MAX_MEMORY_READS:
            self.s.memory_reads.append(MemoryRead(path, ts, via))

    def _remember_call(self, call_id: str) -> None:
        ids = self.s.read_call_ids
        ids.append(call_id)
        if len(ids) > RECENT_CALL_IDS:
            del ids[0]

    def recall_given(self, ts: datetime | None) -> None:
        last = self.s.memory_reads[-1] if self.s.memory_reads else None
        if last is None or last.via != "recall" or last.timestamp != ts:
            self.memory_read("", "recall", ts)

    def clean_user_text(self, text: str, ts: datetime | None) -> str:
        """``text`` without injected blocks; notes the first user text and the opt-out marker."""
        clean, had_recall = injected.strip_injected(text, self.source)
        if had_recall:
            self.recall_given(ts)
        if clean:
            if not self.s.first_user_seen:
                self.s.first_user_seen = True
                self.s.memd_generated = MEMD_SESSION_MARKER in text
            if OPT_OUT_MARKER in clean:
                self.s.opted_out = True
        return clean

    # -- summary and items ----------------------------------------------------------------------
    def user_prompt(self, text: str, ts: datetime | None) -> bool:
        """A prompt the user typed; False when nothing is left once injected text is stripped."""
        clean = self.clean_user_text(text, ts)
        if not clean:
            return False
        self.s.user_count += 1
        self.add(UserMessage(cap(clean, ITEM_TEXT_MAX_CHARS), ts))
        return True

    def assistant_text(self, text: str, ts: datetime | None, merge_key: str | None = None) -> None:
        if self.items is None:
            return
        clean, _ = injected.strip_recall(text)
        clean = clean.strip()
        if not clean:
            return
        if merge_key is not None:
            if (merge_key, clean) in self._merge_seen:
                return
            self._merge_seen.add((merge_key, clean))
            at = self._merge_at.get(merge_key)
            if at is not None:
                prev = self.items[at]
                assert isinstance(prev, AssistantText)
                self.items[at] = AssistantText(
                    cap(prev.text + "\n\n" + clean, ITEM_TEXT_MAX_CHARS), prev.timestamp
                )
                return
            self._merge_at[merge_key] = len(self.items)
        self.items.append(AssistantText(cap(clean, ITEM_TEXT_MAX_CHARS), ts))

    def tool_call(
        self,
        name: str,
        args: Any,
        call_id: str,
        ts: datetime | None,
        *,
        display_name: str | None = None,
        namespace: str | None = None,
    ) -> None:
        for tag in call_external(self.source, name, args, display_name=display_name, namespace=namespace):
            self.external(tag)
        self._note_memory_read(name, args, call_id, ts)
        if self.items is None or (call_id and call_id in self._calls_seen):
            return
        if call_id:
            self._calls_seen.add(call_id)
        self.items.append(ToolCall(name, essential_arg(name, args), args_summary(args), call_id, ts))

    def _note_memory_read(self, name: str, args: Any, call_id: str, ts: datetime | None) -> None:
        request = memory_read_request(self.source, name, args)
        if request is None or call_id in self.s.read_call_ids or call_id in self.s.pending_reads:
            return
        via, paths = request
        topics = [p for p in paths if injected.is_memd_topic_path(p)]
        indexes = [p for p in paths if p not in topics]
        for path in topics:
            self.memory_read(path, "read_tool" if via == "read_tool" else "shell", ts)
        if topics:
            self._memd_results[call_id] = topics
            if call_id:
                self._remember_call(call_id)
        if indexes and call_id and len(self.s.pending_reads) < MAX_PENDING_READS:
            self.s.pending_reads[call_id] = [via, indexes, iso(ts)]

    def tool_result(self, call_id: str, text: str, is_error: bool, ts: datetime | None) -> None:
        if injected.has_recall(text):
            self.recall_given(ts)
        replaced = self._memd_results.pop(call_id, None) or []
        pending = self.s.pending_reads.pop(call_id, None)
        if pending is not None and injected.has_memd_sentinel(text):
            via, paths, when = pending
            for path in paths:
                self.memory_read(path, "read_tool" if via == "read_tool" else "shell", parse_ts(when))
            replaced = replaced + list(paths)
            self._remember_call(call_id)
        if self.items is None:
            return
        if replaced:
            out = injected.memory_file_reference(replaced)
        else:
            out, _ = injected.strip_injected(text, self.source)
        self.items.append(ToolResult(call_id, cap(out, ITEM_TEXT_MAX_CHARS), is_error, ts))

    def error(self, text: str, ts: datetime | None) -> None:
        clean, _ = injected.strip_recall(text)
        if clean.strip():
            self.add(ErrorItem(cap(clean.strip(), ITEM_TEXT_MAX_CHARS), ts))

    def add(self, item: Item) -> None:
        if self.items is not None:
            self.items.append(item)

    # -- result ---------------------------------------------------------------------------------
    def transcript(self, path: Path, offset: int, *, fallback_id: str, cwd: str | None = None) -> Transcript:
        s = self.s
        return Transcript(
            source=self.source,
            path=path,
            session_id=s.session_id or fallback_id,
            cwd=cwd if cwd is not None else s.cwd,
            started_at=s.started_at,
            last_activity=s.last_activity,
            user_message_count=s.user_count,
            items=tuple(self.items) if self.items is not None else (),
            items_complete=self.items is not None,
            subagent=s.subagent,
            parent_session_id=s.parent_session_id,
            forked_or_resumed=s.forked,
            compacted=s.compacted,
            compaction_run=s.compaction_run,
            non_interactive=s.non_interactive,
            memd_generated=s.memd_generated,
            external_context=tuple(s.external),
            opted_out=s.opted_out,
            memory_reads=tuple(s.memory_reads),
            agent_version=s.agent_version,
            parse_errors=ParseErrors(s.errors, s.first_error),
            ingest_offset=offset,
        )
