"""What Codex puts into a session that is not the user's words: its memory instructions, its
AGENTS.md and environment messages, an IDE client's open files (``pipeline.sources.injected``
strips what every agent injects)."""

from __future__ import annotations

import re

_CODEX_MEMORY_RE = re.compile(
    r"=*[ \t]*MEMORY_SUMMARY BEGINS[ \t]*=*.*?(?:MEMORY_SUMMARY ENDS[ \t]*=*|\Z)", re.S
)

# Codex injects these as role `user` messages; they are context, not prompts.
_CODEX_INJECTED_PREFIXES = (
    "# AGENTS.md instructions for",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<skill>",
)
_CODEX_IDE_REQUEST = "## My request for Codex:"


def strip_codex_memory(text: str) -> str:
    """The ``MEMORY_SUMMARY BEGINS``/``ENDS`` block of Codex's memory instructions."""
    if "MEMORY_SUMMARY BEGINS" not in text:
        return text
    return _CODEX_MEMORY_RE.sub("", text)


def is_codex_injected_user_text(text: str) -> bool:
    """A Codex role-``user`` message that is context (AGENTS.md, environment, instructions)."""
    return text.lstrip().startswith(_CODEX_INJECTED_PREFIXES)


def is_codex_memory_instructions(text: str) -> bool:
    """Codex's developer message that loads its memory (``## Memory`` ... ``MEMORY_SUMMARY``)."""
    head = text.lstrip()
    return head.startswith("## Memory") or "MEMORY_SUMMARY BEGINS" in text


def strip_codex_ide_context(text: str) -> str:
    """Codex IDE clients prefix the prompt with the open files; keep only the request."""
    at = text.find(_CODEX_IDE_REQUEST)
    if at < 0:
        return text
    return text[at + len(_CODEX_IDE_REQUEST) :]
