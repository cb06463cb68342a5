"""OpenHands' conversation folders, found and read as hostile input (standard library only).

OpenHands (CLI 1.16, SDK 1.21) keeps each conversation in ``<root>/<id as 32 hex digits>/``:
``base_state.json`` (the state, rewritten while it runs) and ``events/event-<index>-<uuid>.json``
(one JSON object per event, written once, the index giving the order); a sub-agent started by the
``task`` tool has the same layout under ``subagents/<sub id>/``. A resumed conversation
(``openhands --resume``) appends events to the same folder.

A conversation is not one file, so the scan's change key is the folder's own (``walk``): the
``events`` folder's device and inode, and as its "size" a version that moves with every event
added (the folder's mtime), every rewrite of the state (the state file's mtime) and the last event
file's completion (its mtime: an event is not written atomically). Events are read whole at each
change (``read``), as OpenCode's rows are.

What a folder cannot make memd do:

- a conversation folder, its ``events`` folder or its ``subagents`` folder that is a symbolic link
  is listed with that reason and never entered; so is a folder with more than ``MAX_EVENTS``
  event files, or one whose events add up to more than ``SESSION_MAX_BYTES`` (sizes are learned
  from the listing before anything is read);
- an event file is opened without following a link, checked to be a regular file on the opened
  descriptor (a FIFO or device never blocks a read) and read only up to ``EVENT_MAX_BYTES``; one
  that is anything else, larger, or not a JSON object is skipped and counted, with the reason;
- a listing holds at most ``MAX_CONVERSATIONS`` conversations (the newest names first are not
  guaranteed: the excess is reported on the root).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.roster import Walked
from pipeline.safefile import UnsafeFile, read_capped

EVENTS = "events"
STATE = "base_state.json"
SUBAGENTS = "subagents"
MAX_CONVERSATIONS = 100_000
"""A root listing more conversation folders than this is not read."""
MAX_SUBAGENTS = 1_000
"""Sub-agents listed per conversation."""
MAX_DEPTH = 3
"""Sub-agents of sub-agents, this deep at most."""
MAX_EVENTS = 100_000
"""A conversation with more event files than this is not read."""
EVENT_MAX_BYTES = 16 << 20
"""An event file larger than this is skipped (OpenHands keeps outputs over 30,000 characters
aside, in ``observations/``)."""
STATE_MAX_BYTES = 16 << 20
SESSION_MAX_BYTES = 512 << 20
"""A conversation whose events add up to more than this is not read."""

_ID_RE = re.compile(r"^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})$")
"""A conversation's id: a uuid, as 32 hex digits (how OpenHands names the folder) or dashed."""
_EVENT_RE = re.compile(r"^event-(\d{1,12})-[^/]{0,200}\.json$")


class ConversationUnreadable(Exception):
    """Why a conversation cannot be read (``retryable`` when it may be readable at the next scan)."""

    def __init__(self, reason: str, *, retryable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


@dataclass
class Conversation:
    """One conversation folder as read now: its state (None when absent or unusable) and its
    events in order, each a JSON object or the reason it was skipped."""

    path: Path
    version: int
    state: dict[str, Any] | None
    state_problem: str | None
    events: list[tuple[str, dict[str, Any] | None, str | None]] = field(default_factory=list)
    bytes_read: int = 0


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def change_key(folder: str) -> tuple[tuple[int, int, int, int] | None, str | None]:
    """The conversation's change key (dev, ino, version, mtime_ns), or why it cannot be read; a
    folder without ``events`` yet is ``(None, None)``. The version is the newest of the ``events``
    folder's mtime (an event added), the state file's (rewritten) and the last event file's (an
    event still being written when it was last read: OpenHands does not write them atomically)."""
    events_dir = os.path.join(folder, EVENTS)
    events = _lstat(events_dir)
    if events is None:
        return None, None
    if stat.S_ISLNK(events.st_mode):
        return None, f"{EVENTS}/ is a symbolic link, which memd does not follow"
    if not stat.S_ISDIR(events.st_mode):
        return None, f"{EVENTS} is not a folder"
    version = events.st_mtime_ns
    state = _lstat(os.path.join(folder, STATE))
    if state is not None:
        if not stat.S_ISREG(state.st_mode):
            return None, f"{STATE} is not a regular file"
        version = max(version, state.st_mtime_ns)
    last = _last_event(events_dir)
    if last is not None:
        version = max(version, last.st_mtime_ns)
    return (events.st_dev, events.st_ino, version, version), None


def _last_event(events: str) -> os.stat_result | None:
    """The ``lstat`` of the event file with the highest index (None when there is none)."""
    best: tuple[int, str] | None = None
    try:
        with os.scandir(events) as entries:
            for n, entry in enumerate(entries):
                if n > MAX_EVENTS:
                    break
                match = _EVENT_RE.match(entry.name)
                if match is not None and (best is None or (int(match.group(1)), entry.name) > best):
                    best = (int(match.group(1)), entry.name)
    except OSError:
        return None
    return _lstat(os.path.join(events, best[1])) if best is not None else None


def walk(root: Path) -> list[Walked]:
    """Every conversation under ``root`` and its sub-agents, each with its change key or the reason
    it cannot be read; never raises."""
    out: list[Walked] = []
    try:
        names = _listing(str(root), MAX_CONVERSATIONS)
    except ConversationUnreadable as exc:
        return [(str(root), None, exc.reason)]
    for name, is_link, is_dir in names:
        _visit(os.path.join(str(root), name), is_link, is_dir, out, 0)
    return out


def _listing(folder: str, limit: int) -> list[tuple[str, bool, bool]]:
    """The conversation-like names in ``folder`` (name, is a link, is a folder), sorted."""
    found: list[tuple[str, bool, bool]] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not _ID_RE.match(entry.name):
                    continue
                if len(found) >= limit:
                    raise ConversationUnreadable(f"more than {limit} folders in {folder}: not read")
                try:
                    is_link = entry.is_symlink()
                    is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                found.append((entry.name, is_link, is_dir))
    except OSError:
        return []
    found.sort()
    return found


def _visit(folder: str, is_link: bool, is_dir: bool, out: list[Walked], depth: int) -> None:
    if is_link:
        out.append((folder, None, "the conversation folder is a symbolic link, which memd does not follow"))
        return
    if not is_dir:
        return
    key, why = change_key(folder)
    if key is not None or why is not None:
        out.append((folder, key, why))
    if depth >= MAX_DEPTH:
        return
    subagents = os.path.join(folder, SUBAGENTS)
    info = _lstat(subagents)
    if info is None or not stat.S_ISDIR(info.st_mode):
        return  # a link named subagents is not entered
    try:
        subs = _listing(subagents, MAX_SUBAGENTS)
    except ConversationUnreadable as exc:
        out.append((subagents, None, exc.reason))
        return
    for name, sub_link, sub_dir in subs:
        _visit(os.path.join(subagents, name), sub_link, sub_dir, out, depth + 1)


def is_subagent(path: Path) -> bool:
    return path.parent.name == SUBAGENTS


def read(path: Path) -> Conversation:
    """The conversation at ``path`` as it is now; ``ConversationUnreadable`` when it cannot be used."""
    folder = str(path)
    info = _lstat(folder)
    if info is None:
        raise ConversationUnreadable("the conversation folder no longer exists", retryable=True)
    if stat.S_ISLNK(info.st_mode):
        raise ConversationUnreadable("the conversation folder is a symbolic link, which memd does not follow")
    if not stat.S_ISDIR(info.st_mode):
        raise ConversationUnreadable("not an OpenHands conversation folder")
    key, why = change_key(folder)
    if why is not None:
        raise ConversationUnreadable(why)
    if key is None:
        raise ConversationUnreadable("no events yet", retryable=True)
    files = _event_files(os.path.join(folder, EVENTS))
    state, state_problem, state_bytes = _state(os.path.join(folder, STATE))
    conv = Conversation(path, key[2], state, state_problem, bytes_read=state_bytes)
    for name, problem in files:
        if problem is not None:
            conv.events.append((name, None, problem))
            continue
        try:
            data = read_capped(os.path.join(folder, EVENTS, name), EVENT_MAX_BYTES, follow_symlinks=False)
        except FileNotFoundError:
            conv.events.append((name, None, "removed while it was read"))
            continue
        except UnsafeFile as exc:
            conv.events.append((name, None, exc.reason))
            continue
        conv.bytes_read += len(data)
        conv.events.append((name, *_json_object(data)))
    return conv


def _event_files(events: str) -> list[tuple[str, str | None]]:
    """The event files in order (by index, then name), each with why it is skipped (or None);
    sizes are learned here, before anything is read."""
    found: list[tuple[int, str, str | None]] = []
    total = 0
    try:
        with os.scandir(events) as entries:
            for entry in entries:
                match = _EVENT_RE.match(entry.name)
                if match is None:
                    continue
                if len(found) >= MAX_EVENTS:
                    raise ConversationUnreadable(f"more than {MAX_EVENTS} event files: not read")
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                problem: str | None = None
                if stat.S_ISLNK(info.st_mode):
                    problem = "is a symbolic link, which memd does not follow"
                elif not stat.S_ISREG(info.st_mode):
                    problem = "is not a regular file"
                elif info.st_size > EVENT_MAX_BYTES:
                    problem = f"is larger than memd reads ({info.st_size} > {EVENT_MAX_BYTES} bytes)"
                else:
                    total += info.st_size
                found.append((int(match.group(1)), entry.name, problem))
    except OSError as exc:
        raise ConversationUnreadable(f"the events folder cannot be listed: {exc.strerror or exc}") from None
    if total > SESSION_MAX_BYTES:
        raise ConversationUnreadable(
            f"its events add up to {total} bytes, more than memd reads ({SESSION_MAX_BYTES})"
        )
    found.sort()
    return [(name, problem) for _index, name, problem in found]


def _state(path: str) -> tuple[dict[str, Any] | None, str | None, int]:
    try:
        data = read_capped(path, STATE_MAX_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return None, None, 0
    except UnsafeFile as exc:
        return None, f"{STATE} {exc.reason}", 0
    state, problem = _json_object(data)
    return state, (f"{STATE}: {problem}" if problem else None), len(data)


def _json_object(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None, "not JSON (torn or damaged)"
    except RecursionError:
        return None, "nested too deeply"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    return value, None
