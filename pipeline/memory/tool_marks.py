"""A topic that restates what a tool returned must say so: checked in code after phase 2.

A run whose new inputs rest on tool output only has every topic it wrote stamped ``evidence: tool``
(``pipeline.memory.provenance``). A run whose inputs mix the user's words and tool output leaves the
marking to the model; this check holds it to it. For each topic the run wrote that is not marked
``evidence: tool``, memd measures how much of each tool-only memory of the run's new inputs (the lines
under ``TOOL_ONLY_NOTE`` in their raw notes) the topic's body contains: the share of the memory's
word 3-grams (lower case, punctuation dropped) found in the body. At ``RESTATED`` (0.5) or more the
topic restates it, and the finding goes back to the model for its repair turn: mark the topic, or
move that fact into one that is marked. A memory of fewer than ``MIN_WORDS`` words is too short to
tell and is not checked.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from pipeline.memory import frontmatter
from pipeline.memory.inputs import TOOL_ONLY_NOTE
from pipeline.memory.layout import is_topic_path
from pipeline.memory.provenance import TopicSnapshot
from pipeline.memory.validate import list_scope

RESTATED = 0.5
MIN_WORDS = 6
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def tool_memories(raw_memories: Iterable[str]) -> list[tuple[str, str]]:
    """``(name, body)`` of each memory listed under ``TOOL_ONLY_NOTE`` in the raw notes given."""
    out: list[tuple[str, str]] = []
    for raw in raw_memories:
        _, found, tail = raw.partition(TOOL_ONLY_NOTE)
        if not found:
            continue
        for line in tail.splitlines():
            if not line.startswith("- "):
                if line.strip():
                    break
                continue
            name, _, body = line[2:].partition(": ")
            out.append((name.strip(), body.strip()))
    return out


def _grams(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def restated(memory: str, body: str) -> float:
    """The share of ``memory``'s word 3-grams found in ``body`` (0 when it has fewer than ``MIN_WORDS`` words)."""
    if len(_WORD.findall(memory)) < MIN_WORDS:
        return 0.0
    grams = _grams(memory)
    return len(grams & _grams(body)) / len(grams) if grams else 0.0


def unmarked_findings(
    scope_dir: Path, before: dict[str, TopicSnapshot], memories: list[tuple[str, str]]
) -> list[str]:
    """A sentence for each topic the run wrote that restates a tool-only memory without ``evidence: tool``."""
    if not memories:
        return []
    out: list[str] = []
    for rel in list_scope(scope_dir).files:
        if not is_topic_path(rel):
            continue
        data = (scope_dir / rel).read_bytes()
        if rel in before and hashlib.sha256(data).hexdigest() == before[rel].sha256:
            continue  # not written by this run
        try:
            topic = frontmatter.parse(data.decode("utf-8"))
        except (frontmatter.FrontmatterError, UnicodeDecodeError):
            continue  # validation reports it
        if topic.meta.from_tools:
            continue
        for name, body in memories:
            if restated(body, topic.body) >= RESTATED:
                out.append(
                    f"{rel} restates {name or 'a memory'!r}, which rests on tool output only: mark the topic "
                    "`evidence: tool`, or move that fact into a topic so marked"
                )
                break
    return out
