"""``memd recall``: the memory of a directory's project, fenced for the scanner to strip later.

Read-only and quick (a session-start hook must never hold up a session): standard library only,
no state store, no settings models; it reads the memory repository's working tree and asks git
which project the directory belongs to. ``bounded`` runs it against a deadline.
"""

from __future__ import annotations

import json
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import field
from datetime import date
from pathlib import Path
from typing import IO, Any, TypeVar

from pipeline import roster
from pipeline.frozen import frozen_by_position
from pipeline.layout import GLOBAL_SCOPE, SUMMARY
from pipeline.projects import resolve_project, scope_for, scope_for_path
from pipeline.publish.memfiles import ScopeMemory, read_scope
from pipeline.publish.render import Budget, render_body

# The same strings as pipeline.sources.injected.RECALL_BEGIN / RECALL_END (a test keeps them equal);
# importing that package here would load every source adapter and triple recall's start-up time.
RECALL_BEGIN = "<memd-recall>"
RECALL_END = "</memd-recall>"
RECALL_MAX_CHARS = 9_500
"""Claude Code keeps at most 10,000 characters of a hook's additional context."""
PROJECT_SHARE = 0.65
FORMATS = ("text", "json", "claude-hook")
STDIN_TIMEOUT_S = 0.5
STDIN_MAX_BYTES = 1_000_000

T = TypeVar("T")


class RecallProblem(Exception):
    """Recall cannot answer (no memory directory, a timeout, ...): print nothing, log this."""


@frozen_by_position
class Recall:
    cwd: str
    project: str | None
    scope: str
    memory_dir: str
    text: str
    """The fenced block; empty when there is nothing to recall."""
    topics: list[dict[str, str]] = field(default_factory=list)


def build_recall(
    memory_dir: Path,
    cwd: str,
    *,
    today: date,
    max_chars: int = RECALL_MAX_CHARS,
    claude_home: Path | None = None,
) -> Recall:
    """The recall block for ``cwd``: the project's digest and index, then the global ones, capped.
    With ``claude_home`` (the hook of that Claude Code), a part Claude Code already loads from
    memd's published copy (``[publish] claude_code``, ``claude_code_global``) is left out: the
    memory is loaded once, and the hook serves only what the folder does not (a project whose
    folder memd refused or whose auto memory is off)."""
    if not memory_dir.is_dir():
        raise RecallProblem(f"memory directory {memory_dir} does not exist")
    project = resolve_project(cwd)
    scope = scope_for(project)
    if project and not (memory_dir / scope).is_dir() and (memory_dir / scope_for_path(project)).is_dir():
        scope = scope_for_path(project)  # keyed by origin now, not moved yet (the next run moves it)
    parts: list[tuple[ScopeMemory, str]] = []
    # the hook's agent (``pipeline.roster.SessionHook``): what it loads of memd's copy is left out
    hook = next((roster.session_hook(a) for a in roster.hooked()), None) if claude_home is not None else None
    loaded = (
        hook is not None
        and claude_home is not None
        and project is not None
        and hook.loads_project_copy(claude_home, project)
    )
    if scope != GLOBAL_SCOPE and not loaded:
        parts.append((read_scope(memory_dir, scope, today=today), f"Memory of {project}"))
    if hook is None or claude_home is None or not hook.loads_global_copy(claude_home):
        parts.append((read_scope(memory_dir, GLOBAL_SCOPE, today=today), "Memory across projects"))
    parts = [(s, title) for s, title in parts if not s.empty]
    recall = Recall(cwd=cwd, project=project, scope=scope, memory_dir=str(memory_dir), text="")
    if not parts:
        return recall
    room = max_chars - len(RECALL_BEGIN) - len(RECALL_END) - 2
    bodies = []
    for i, (scope_memory, title) in enumerate(parts):
        share = room if i == len(parts) - 1 else int(room * PROJECT_SHARE)
        body = render_body(
            scope_memory,
            title=title,
            where=f"Topic files: {scope_memory.path}/ (read-only; open one when its line is relevant).",
            link_for=lambda t: str(t.path),
            budget=Budget(max_lines=400, max_bytes=share),
            summary_source=str(scope_memory.path / SUMMARY),
        )
        if body:
            bodies.append(body)
            room -= len(body.encode("utf-8")) + 1
    topics = [
        {
            "scope": s.scope,
            "file": t.file,
            "path": str(t.path),
            "name": t.name,
            "description": t.description,
            "type": t.type,
            "updated": t.updated_date,
        }
        for s, _ in parts
        for t in s.topics
    ]
    text = f"{RECALL_BEGIN}\n" + "\n".join(bodies) + f"{RECALL_END}\n"
    return Recall(cwd=cwd, project=project, scope=scope, memory_dir=str(memory_dir), text=text, topics=topics)


def render(recall: Recall, fmt: str) -> str:
    """The output for ``fmt``; empty when a hook has nothing to add."""
    if fmt == "json":
        return json.dumps(
            {
                "cwd": recall.cwd,
                "project": recall.project,
                "scope": recall.scope,
                "memory_dir": recall.memory_dir,
                "text": recall.text,
                "topics": recall.topics,
            },
            ensure_ascii=False,
        )
    if not recall.text:
        return ""
    if fmt == "claude-hook":
        payload: dict[str, Any] = {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": recall.text}
        }
        return json.dumps(payload, ensure_ascii=False)
    return recall.text.rstrip("\n")


def read_hook_input(stream: IO[str], timeout_s: float = STDIN_TIMEOUT_S) -> str:
    """What a hook runner wrote on stdin, without waiting past ``timeout_s`` for an EOF that may not come."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return stream.read(STDIN_MAX_BYTES)
    if os.isatty(fd):
        return ""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    size = 0
    while size < STDIN_MAX_BYTES:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if hook_cwd(b"".join(chunks).decode("utf-8", "replace")) is not None:
            break
    return b"".join(chunks).decode("utf-8", "replace")


def _hook_field(stdin_text: str, name: str) -> str | None:
    try:
        data = json.loads(stdin_text)
    except ValueError:
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def hook_cwd(stdin_text: str) -> str | None:
    """The ``cwd`` field of a hook's JSON input, if there is one."""
    return _hook_field(stdin_text, "cwd")


def hook_claude_home(stdin_text: str) -> Path | None:
    """The home of the Claude Code that runs the hook, from its ``transcript_path``
    (``<home>/projects/<folder>/<session>.jsonl``); None when it does not say."""
    transcript = _hook_field(stdin_text, "transcript_path")
    if transcript is None or not Path(transcript).is_absolute():
        return None
    path = Path(transcript)
    if path.suffix != ".jsonl" or path.parent.parent.name != "projects":
        return None
    return path.parent.parent.parent


def bounded(fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()`` in a daemon thread; RecallProblem when it has not answered within ``timeout_s``.

    The thread is abandoned on timeout (it only reads), and the process may exit without it.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, name="memd-recall", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise RecallProblem(f"no answer within {timeout_s:g}s")
    if "error" in box:
        error = box["error"]
        if isinstance(error, RecallProblem):
            raise error
        raise RecallProblem(f"{type(error).__name__}: {error}") from error
    value: T = box["value"]
    return value
