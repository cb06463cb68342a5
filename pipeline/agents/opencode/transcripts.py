"""OpenCode 1.18: a session is rows of one SQLite database, ``<data dir>/opencode.db``.

The database is read through ``pipeline.agents.opencode.database`` (read-only, WAL included, never a
lock OpenCode's writer waits on, no file left behind); a session's path is
``<database>#<session id>``.

- ``session``: ``directory`` is the working directory, ``parent_id`` marks a sub-agent's session
  (the ``task`` tool; its result is also the parent's tool output), ``version`` the CLI's.
  The project is told from the directory (git), else from ``project.worktree`` when the directory
  is gone, never from ``project_id`` (OpenCode re-keys it when a remote is added).
- ``message`` (``data.role`` user or assistant) in ``(time_created, id)`` order, each with its
  ``part`` rows in id order: ``text`` (``synthetic`` ones are OpenCode's own: file contents, the
  "continue" after a compaction), ``tool`` (the call and its result in one part), ``reasoning``,
  ``step-start``/``step-finish``, ``file``, ``compaction``...
- Compaction: a user message holding a ``compaction`` part, then an assistant message with
  ``summary: true`` (the summary of what came before, not new work: left out), then a synthetic
  "continue" text. The earlier messages stay in the database.
- Offsets are the session's version (``opencode_db.version_of``: its ``time_updated`` and event
  sequence), read in the same transaction as its rows. A session is read whole every time it
  changed (only changed sessions are read); the state keeps the ids of its messages up to the
  last complete one, so a session whose earlier messages were removed (``/undo``) or rewritten
  is reported ``restarted`` and extracted again from its start.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from pipeline.agents.opencode import NAME
from pipeline.agents.opencode import database as opencode_db
from pipeline.errors import TranscriptIncomplete, TranscriptUnreadable
from pipeline.sources._collector import Collector, Summary
from pipeline.sources._time import parse_ts
from pipeline.sources.base import ParseResult, ParserState, last_guard
from pipeline.sources.walk import Walked

log = structlog.get_logger(__name__)

STATE_VERSION = 1
ROW_MAX_BYTES = opencode_db.VALUE_MAX_BYTES
"""A message or part larger than this is skipped (counted as a parse error) without being fetched:
SQLite itself refuses to make it (``opencode_db.VALUE_MAX_BYTES``)."""
SESSION_MAX_BYTES = 512 * 1024 * 1024
"""A session whose rows hold more than this is not read (unreadable, with the reason): the read
stops at the row that crosses it."""

_text, _int = opencode_db.text_or_null, opencode_db.int_or_null
SESSION_SQL = (
    f"SELECT s.id, {_text('s.parent_id', opencode_db.KEY_MAX_CHARS)}, {_text('s.directory')}, "
    f"{_text('s.version')}, {_int('s.time_created')}, {_int('s.time_updated')}, {_text('p.worktree')} "
    "FROM session s LEFT JOIN project p ON p.id = s.project_id WHERE s.id = ?"
)
SESSION_SQL_NO_PROJECT = (
    f"SELECT s.id, {_text('s.parent_id', opencode_db.KEY_MAX_CHARS)}, {_text('s.directory')}, "
    f"{_text('s.version')}, {_int('s.time_created')}, {_int('s.time_updated')}, NULL "
    "FROM session s WHERE s.id = ?"
)
SEQ_SQL = f"SELECT {_int('seq')} FROM event_sequence WHERE aggregate_id = ?"
_KEY = opencode_db.short_key
MESSAGE_KEYS = ("id", _int("time_created"))
MESSAGE_WHERE = f"session_id = ? AND {_KEY('id')}"
PART_KEYS = ("message_id", "id")
PART_WHERE = f"session_id = ? AND {_KEY('id')} AND {_KEY('message_id')}"


@dataclass(frozen=True, slots=True)
class _Rows:
    session: tuple[Any, ...] | None
    version: int
    messages: list[tuple[Any, Any, Any]]
    parts: list[tuple[Any, Any, Any]]
    bytes_read: int = 0


def _message_order(row: tuple[Any, ...]) -> tuple[bool, int, str]:
    """``ORDER BY time_created, id`` (NULL first), done in Python so SQLite never sorts contents."""
    created = row[1]
    return (created is not None, created if created is not None else 0, row[0])


def _read_session(session_id: str) -> Any:
    def query(conn: sqlite3.Connection) -> _Rows:
        found = opencode_db.require_opencode(conn)
        sql = SESSION_SQL if "project" in found else SESSION_SQL_NO_PROJECT
        row = conn.execute(sql, (session_id,)).fetchone()
        if row is None:
            return _Rows(None, 0, [], [])
        seq_row = conn.execute(SEQ_SQL, (session_id,)).fetchone() if "event_sequence" in found else None
        version = opencode_db.version_of(row[5], seq_row[0] if seq_row else None)
        budget = opencode_db.Budget(SESSION_MAX_BYTES, "the session")
        params = (session_id,)
        parts = opencode_db.contents(conn, "part", PART_KEYS, "data", PART_WHERE, params, budget)
        messages = opencode_db.contents(conn, "message", MESSAGE_KEYS, "data", MESSAGE_WHERE, params, budget)
        parts.sort(key=lambda r: (r[0], r[1]))
        messages.sort(key=_message_order)
        return _Rows(tuple(row), version, messages, parts, budget.used)

    return query


def _json(value: Any) -> dict[str, Any] | None:
    """The row's JSON object (None when it is not one, or was too big to fetch: ``TOO_BIG``)."""
    if not isinstance(value, bytes) or len(value) > ROW_MAX_BYTES:
        return None
    try:
        data = json.loads(value.decode("utf-8", "replace"))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _ms(value: Any) -> datetime | None:
    return parse_ts(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _complete(message: dict[str, Any]) -> bool:
    """A user message is whole once written; an assistant's once it finished or failed."""
    if message.get("role") != "assistant":
        return True
    times = message.get("time")
    return bool(
        (isinstance(times, dict) and times.get("completed")) or message.get("finish") or message.get("error")
    )


def _prefix_sha(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode("utf-8", "surrogatepass")).hexdigest()


class OpenCodeAdapter:
    """``pipeline.sources.base.WalkingAdapter`` for OpenCode's database."""

    source: str = NAME

    def walk(self, root: Path) -> list[Walked]:
        return opencode_db.walk(root)

    def discover_paths(self, root: Path) -> Iterator[str]:
        return opencode_db.discover(root)

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
        """The session at ``path`` as it is now (one read transaction), whatever ``max_bytes`` (the
        version the scan saw) says: its version is returned as ``new_offset``, never older."""
        return last_guard(
            self.source,
            path,
            start_offset,
            state,
            lambda: self._parse(str(path), start_offset, state, with_items),
        )

    def _parse(
        self, path: str, start_offset: int, state: ParserState | None, with_items: bool
    ) -> ParseResult:
        split = opencode_db.split_session_path(path)
        if split is None:
            return ParseResult(
                None, start_offset, state, TranscriptUnreadable("not an OpenCode session path")
            )
        db, session_id = split
        try:
            rows: _Rows = opencode_db.read(db, _read_session(session_id))
        except opencode_db.DatabaseUnreadable as exc:
            problem = (TranscriptIncomplete if exc.retryable else TranscriptUnreadable)(
                f"OpenCode database: {exc.reason}"
            )
            return ParseResult(None, start_offset, state, problem)
        if rows.session is None:
            problem = TranscriptIncomplete("the session is no longer in the OpenCode database")
            return ParseResult(None, start_offset, state, problem)
        return self._session(Path(path), rows, start_offset, state, with_items)

    def _session(
        self, path: Path, rows: _Rows, start_offset: int, state: ParserState | None, with_items: bool
    ) -> ParseResult:
        assert rows.session is not None
        session_id, parent_id, directory, version, created, _updated, worktree = rows.session
        summary = Summary(source=self.source, session_id=str(session_id))
        c = Collector(summary, self.source, with_items=with_items)
        summary.cwd = directory if isinstance(directory, str) and directory else None
        summary.agent_version = version if isinstance(version, str) else None
        summary.see_time(_ms(created))
        if isinstance(parent_id, str) and parent_id:
            summary.subagent = True
            summary.parent_session_id = parent_id

        parts: dict[str, list[dict[str, Any]]] = {}
        total = rows.bytes_read
        for message_id, _part_id, data in rows.parts:
            part = _json(data)
            if part is None:
                summary.note_error(
                    f"part of message {message_id}: not a JSON object, or over {ROW_MAX_BYTES} bytes"
                )
                continue
            parts.setdefault(str(message_id), []).append(part)

        complete_ids: list[str] = []
        whole = True
        for message_id, time_created, data in rows.messages:
            message = _json(data)
            if message is None:
                summary.note_error(f"message {message_id}: not a JSON object, or over {ROW_MAX_BYTES} bytes")
                continue
            ts = _ms(
                (message.get("time") or {}).get("created") if isinstance(message.get("time"), dict) else None
            )
            ts = ts or _ms(time_created)
            self._message(c, str(message_id), message, parts.get(str(message_id), []), ts)
            if whole and _complete(message):
                complete_ids.append(str(message_id))
            else:
                whole = False
        summary.records = len(rows.messages)
        summary.recognized = len(complete_ids)
        if not rows.messages:
            return ParseResult(
                None, rows.version, state, TranscriptIncomplete("no message yet"), bytes_read=total
            )

        previous = _previous_prefix(state)
        restarted = False
        if start_offset > 0 and previous is not None:
            n, sha = previous
            restarted = n > len(complete_ids) or _prefix_sha(complete_ids[:n]) != sha
        elif start_offset > 0:
            restarted = True
        new_state = {
            "v": STATE_VERSION,
            "source": str(self.source),
            "n": len(complete_ids),
            "sha": _prefix_sha(complete_ids),
        }
        root = worktree if isinstance(worktree, str) and worktree not in ("", "/") else None
        transcript = replace(c.transcript(path, rows.version, fallback_id=str(session_id)), root=root)
        return ParseResult(transcript, rows.version, new_state, None, restarted, bytes_read=total)

    # -- one message and its parts ---------------------------------------------------------------
    def _message(
        self,
        c: Collector,
        message_id: str,
        message: dict[str, Any],
        parts: list[dict[str, Any]],
        ts: datetime | None,
    ) -> None:
        c.s.see_time(ts)
        role = message.get("role")
        if role == "user":
            for part in parts:
                self._see_part_time(c, part)
                kind = part.get("type")
                if kind == "compaction":
                    c.s.compacted = True
                elif (
                    kind == "text"
                    and isinstance(part.get("text"), str)
                    and not part.get("synthetic")
                    and not part.get("ignored")
                ):
                    c.user_prompt(part["text"], ts)
        elif role == "assistant":
            if message.get("summary") is True or message.get("mode") == "compaction":
                c.s.compacted = True  # the summary of what came before: not new work
                for part in parts:
                    self._see_part_time(c, part)
                return
            for part in parts:
                self._assistant_part(c, part, message_id, ts)
            error = message.get("error")
            if isinstance(error, dict):
                data = error.get("data")
                detail = data.get("message") if isinstance(data, dict) else None
                c.error(str(detail or error.get("name") or "the model request failed"), ts)

    def _see_part_time(self, c: Collector, part: dict[str, Any]) -> datetime | None:
        times = part.get("time")
        if isinstance(times, dict):
            end = _ms(times.get("end"))
            c.s.see_time(_ms(times.get("start")))
            c.s.see_time(end)
            return end
        state = part.get("state")
        if isinstance(state, dict) and isinstance(state.get("time"), dict):
            end = _ms(state["time"].get("end"))
            c.s.see_time(_ms(state["time"].get("start")))
            c.s.see_time(end)
            return end
        return None

    def _assistant_part(
        self, c: Collector, part: dict[str, Any], message_id: str, ts: datetime | None
    ) -> None:
        at = self._see_part_time(c, part) or ts
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and not part.get("synthetic"):
            c.assistant_text(part["text"], ts, merge_key=message_id or None)
        elif kind == "tool":
            raw = part.get("state")
            state: dict[str, Any] = raw if isinstance(raw, dict) else {}
            call_id = str(part.get("callID") or part.get("id") or "")
            c.tool_call(str(part.get("tool") or ""), state.get("input"), call_id, ts)
            status = state.get("status")
            if status == "completed":
                c.tool_result(call_id, str(state.get("output") or ""), False, at)
            elif status == "error":
                c.tool_result(call_id, str(state.get("error") or "the tool failed"), True, at)


def _previous_prefix(state: Any) -> tuple[int, str] | None:
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION or state.get("source") != NAME:
        return None
    n, sha = state.get("n"), state.get("sha")
    if isinstance(n, int) and not isinstance(n, bool) and n >= 0 and isinstance(sha, str):
        return n, sha
    return None
