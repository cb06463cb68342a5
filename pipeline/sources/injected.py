"""Memory and instructions an agent loaded into a session are not the user's words: strip them.

memd must never fold its own output (or the agent's memory and instruction files) back into
memory. The adapters pass every user, assistant and tool-result text through ``strip_injected``
and drop whole records that only carry injected context (Claude Code ``attachment`` and ``isMeta``
records, Codex developer messages and AGENTS.md/environment messages, Gemini CLI session context,
GitHub Copilot CLI's ``system.message`` with its ``<custom_instruction>`` blocks).

The results of tool calls that read memd's published files become a one-line reference
(``memory_file_reference``), and those reads are recorded on the transcript as ``MemoryRead``s
for the publishing step's usage tracking.

Markers memd owns (``RECALL_BEGIN``/``RECALL_END``, ``MEMD_SENTINEL_BEGIN``/``MEMD_SENTINEL_END``)
are defined here so the recall and publishing code uses the same strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pipeline import roster
from pipeline.layout import INDEX, SUMMARY

# `memd recall` fences its output with these; the scanner strips the block from later transcripts.
RECALL_BEGIN = "<memd-recall>"
RECALL_END = "</memd-recall>"
# memd's part of a shared file (MEMORY.md, CLAUDE.md, GEMINI.md, AGENTS.md) sits between these.
MEMD_SENTINEL_BEGIN = "<!-- memd:begin -->"
MEMD_SENTINEL_END = "<!-- memd:end -->"
# memd's topic files live under a `memory/` (Claude Code, Gemini CLI) or `memories/` (Codex) folder
# with this file-name prefix.
MEMD_TOPIC_PREFIX = "memd-"
MEMORY_INDEX_NAMES = frozenset({INDEX, SUMMARY})
REFERENCE_TEMPLATE = "[memd memory file read: {path}]"
# A memd sentinel block met in any other text (a file read whose path was not recognised).
MEMD_BLOCK_REFERENCE = "[memd memory block]"

# memd recall prints its fence at the start of a line; a mention inside other text (code quoting the
# constant) is not a block.
_RECALL_RE = re.compile(r"^[ \t]*<memd-recall\b[^>\n]*>.*?(?:</memd-recall>|\Z)", re.S | re.M)
_REMINDER_RE = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)
_GEMINI_CONTEXT_RE = re.compile(
    r"<(session_context|hook_context)>.*?(?:</\1>|\Z)"
    r"|--- Context from: [^\n]*? ---\n.*?(?:--- End of Context from: [^\n]*? ---|\Z)",
    re.S,
)
_COPILOT_CONTEXT_RE = re.compile(
    r"<(custom_instruction|system_reminder|current_datetime)>.*?(?:</\1>|\Z)", re.S
)
_SENTINEL_BLOCK_RE = re.compile(r"<!--\s*memd:begin\b.*?-->.*?(?:<!--\s*memd:end\b.*?-->|\Z)", re.S)
_CONTENTS_OF_RE = re.compile(r"Contents of (\S+?)(?: \(|:\s)")

# Claude Code attachment types that carry instruction or memory files into the context.
INSTRUCTION_ATTACHMENT_TYPES = frozenset(
    {
        "instructions",
        "nested_memory",
        "relevant_memories",
        "claude_md",
        "memory",
        "compact_file_reference",
        "plan_file_reference",
        "hook_additional_context",
        "hook_success",
        "critical_system_reminder",
    }
)


def has_recall(text: str) -> bool:
    """Whether ``text`` holds a ``memd recall`` block (the session was given memd's memory)."""
    return RECALL_BEGIN[:-1] in text and _RECALL_RE.search(text) is not None


def strip_recall(text: str) -> tuple[str, bool]:
    """``text`` without any ``memd recall`` block, and whether there was one."""
    if not has_recall(text):
        return text, False
    return _RECALL_RE.sub("", text), True


def strip_system_reminders(text: str) -> str:
    """Claude Code's ``<system-reminder>`` blocks (CLAUDE.md, auto-memory MEMORY.md, hook output,
    harness notices) are injected by the harness, never typed by the user."""
    if "<system-reminder>" not in text:
        return text
    return _REMINDER_RE.sub("", text)


def strip_gemini_context(text: str) -> str:
    """Gemini CLI's ``<session_context>`` (environment plus GEMINI.md memory), ``<hook_context>`` and
    ``--- Context from: GEMINI.md ---`` blocks."""
    if "<session_context>" not in text and "<hook_context>" not in text and "--- Context from:" not in text:
        return text
    return _GEMINI_CONTEXT_RE.sub("", text)


def strip_copilot_context(text: str) -> str:
    """GitHub Copilot CLI's ``<custom_instruction>`` (an instruction file's text, memd's published
    block included), ``<system_reminder>`` (a nested AGENTS.md found on the way) and
    ``<current_datetime>`` blocks."""
    if (
        "<custom_instruction>" not in text
        and "<system_reminder>" not in text
        and "<current_datetime>" not in text
    ):
        return text
    return _COPILOT_CONTEXT_RE.sub("", text)


def strip_injected(text: str, source: str) -> tuple[str, bool]:
    """``text`` with every injected memory or instruction block of ``source`` removed, and whether a
    ``memd recall`` block was among them. Leading and trailing whitespace is trimmed."""
    text, had_recall = strip_recall(text)
    agent = roster.find(source)
    if agent is not None and agent.injected is not None:  # each agent's own (``Agent.injected``)
        text = agent.injected(text)
    if MEMD_SENTINEL_BEGIN[:12] in text:
        text = _SENTINEL_BLOCK_RE.sub(MEMD_BLOCK_REFERENCE, text)
    return text.strip(), had_recall


def _norm(path: str) -> str:
    return path.replace("\\", "/")


def is_memd_topic_path(path: str) -> bool:
    """A file memd published: ``.../memory/memd-*`` or ``.../memories/memd-*``."""
    p = _norm(path)
    return any(
        p.startswith(f"{folder}/{MEMD_TOPIC_PREFIX}") or f"/{folder}/{MEMD_TOPIC_PREFIX}" in p
        for folder in ("memory", "memories")
    )


def is_memory_index_path(path: str) -> bool:
    """An index file (``MEMORY.md``, ``memory_summary.md``) that holds a memd block when memd
    published there; whether it did shows in the file's text (``has_memd_sentinel``)."""
    return _norm(path).rsplit("/", 1)[-1] in MEMORY_INDEX_NAMES


def has_memd_sentinel(text: str) -> bool:
    return "<!-- memd:begin" in text


def memory_file_reference(paths: list[str]) -> str:
    """The one-line stand-in for the result of a tool call that read memd's published files."""
    return "\n".join(REFERENCE_TEMPLATE.format(path=p) for p in paths)


def reminder_memory_paths(text: str) -> list[str]:
    """memd files Claude Code loaded into a ``<system-reminder>`` ("Contents of PATH ...")."""
    found: list[str] = []
    for block in _REMINDER_RE.findall(text):
        for path in _CONTENTS_OF_RE.findall(block):
            if is_memd_topic_path(path) or (is_memory_index_path(path) and has_memd_sentinel(block)):
                found.append(path)
    return found


def _path_content_pairs(node: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > 6:
        return
    if isinstance(node, Mapping):
        path = next(
            (node[k] for k in ("path", "filePath", "file_path") if isinstance(node.get(k), str)), None
        )
        if path is not None:
            content = node.get("content")
            if isinstance(content, Mapping):
                content = content.get("content")
            yield path, content if isinstance(content, str) else ""
        for value in node.values():
            if isinstance(value, Mapping | list):
                yield from _path_content_pairs(value, depth + 1)
    elif isinstance(node, list):
        for value in node[:200]:
            yield from _path_content_pairs(value, depth + 1)


def is_instruction_attachment(attachment: Mapping[str, Any]) -> bool:
    """A Claude Code ``attachment`` that loads instruction or memory files (never the user's words)."""
    kind = attachment.get("type")
    if kind in INSTRUCTION_ATTACHMENT_TYPES:
        return True
    return any(
        _norm(path).rsplit("/", 1)[-1] in {"CLAUDE.md", "AGENTS.md", "GEMINI.md", *MEMORY_INDEX_NAMES}
        or is_memd_topic_path(path)
        for path, _ in _path_content_pairs(attachment)
    )


def attachment_memory_paths(attachment: Mapping[str, Any]) -> list[str]:
    """memd files a Claude Code attachment loaded (a topic file, or an index holding memd's block)."""
    return [
        path
        for path, content in _path_content_pairs(attachment)
        if is_memd_topic_path(path) or (is_memory_index_path(path) and has_memd_sentinel(content))
    ]
