"""Notes and flags from agents (``memd mcp``, ``pipeline.notes``) as a phase-2 run reads them: one
line each, fenced as data in the run's prompt (``prompts/consolidate.notes.md``, ``.flags.md``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pipeline.consolidate.workspace import AGENT_VIEW
from pipeline.store.notes import Note
from pipeline.store.read.flags import Flag

_TAG = re.compile(r"<(/?)\s*(agent_notes|topic_flags)", re.IGNORECASE)


def _data(text: str, clean: Callable[[str], str]) -> str:
    """``text`` redacted again, on one indented block, unable to close its fence."""
    text = _TAG.sub(lambda m: f"<{m.group(1)} {m.group(2)}", clean(text.strip()))
    return "\n    ".join(text.splitlines())


def notes_text(notes: Sequence[Note], clean: Callable[[str], str] = str) -> str:
    lines = []
    for n in notes:
        line = f"- note-{n.id} ({n.origin}, {n.created_at.date().isoformat()}): {_data(n.text, clean)}"
        if n.reason:
            line += f"\n  reason given: {_data(n.reason, clean)}"
        lines.append(line)
    return "\n".join(lines)


def flags_text(flags: Sequence[Flag], clean: Callable[[str], str] = str) -> str:
    lines = []
    for f in flags:
        line = f"- /{AGENT_VIEW}{f.file}: {f.verdict} ({f.created_at.date().isoformat()})"
        if f.note:
            line += f"; the agent's note: {_data(f.note, clean)}"
        lines.append(line)
    return "\n".join(lines)
