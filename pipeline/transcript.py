"""The normalized transcript every source adapter yields, whatever agent and version wrote the file.

A ``Transcript`` is immutable. Its summary fields (ids, times, counts, flags, external context,
memory reads) always cover the whole file up to ``ingest_offset``; ``items`` (the conversation) is
filled only by a parse that started at byte 0 (``items_complete``), because an incremental parse
keeps a small summary state, not the conversation.

Text in the items has already had injected memory and instructions stripped
(``pipeline.sources.injected``): what is left is the user's words, the assistant's words and the
tools' output.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

# A session whose first user text contains this marker was produced by memd itself (consolidation
# or extraction run through an agent CLI); it is never an input. Put it in every prompt memd sends
# through an agent.
MEMD_SESSION_MARKER = "<memd:consolidation>"
# A session whose user text contains this marker is opted out of memory by its user.
OPT_OUT_MARKER = "memd:ignore"


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class AssistantText:
    text: str
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool invocation. ``essential_arg`` is the argument that says what it did (the shell
    command, the file path, the URL, the query); ``args_summary`` is compact JSON of all arguments,
    capped."""

    name: str
    essential_arg: str
    args_summary: str
    call_id: str
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    text: str
    is_error: bool = False
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class ErrorItem:
    """An error the agent or its API reported in the session (not a tool's failed result)."""

    text: str
    timestamp: datetime | None = None


Item = UserMessage | AssistantText | ToolCall | ToolResult | ErrorItem

MemoryReadVia = Literal["read_tool", "shell", "recall", "injected"]


@dataclass(frozen=True, slots=True)
class MemoryRead:
    """The session read a file memd published (``via`` a read tool or a shell command), had the agent
    load one into its context (``injected``: an auto-memory attachment or reminder), or was given a
    ``memd recall`` block (``via="recall"``, ``path`` empty)."""

    path: str
    timestamp: datetime | None
    via: MemoryReadVia


@dataclass(frozen=True, slots=True)
class ParseErrors:
    """Lines that could not be used: torn, spliced beyond repair, not JSON, oversized."""

    count: int = 0
    first: str | None = None


@dataclass(frozen=True, slots=True)
class Transcript:
    source: str
    path: Path
    session_id: str
    cwd: str | None
    started_at: datetime | None
    last_activity: datetime | None
    user_message_count: int
    items: tuple[Item, ...] = ()
    items_complete: bool = False
    subagent: bool = False
    parent_session_id: str | None = None
    forked_or_resumed: bool = False
    compacted: bool = False
    compaction_run: bool = False
    non_interactive: bool = False
    memd_generated: bool = False
    external_context: tuple[str, ...] = ()
    opted_out: bool = False
    memory_reads: tuple[MemoryRead, ...] = ()
    agent_version: str | None = None
    parse_errors: ParseErrors = field(default_factory=ParseErrors)
    ingest_offset: int = 0
    root: str | None = None
    """The repository root the agent itself recorded for the session (OpenCode's project worktree):
    the project when the working directory no longer exists to ask git."""

    def summary(self) -> Transcript:
        """The same transcript without its items: what an incremental parse returns."""
        return replace(self, items=(), items_complete=False)


@dataclass(frozen=True)
class SessionFacts:
    """What the scanner knows of a session, as the store records it: the input of the readiness rule
    (``pipeline.scan.eligibility``)."""

    last_activity: datetime | None
    user_messages: int
    project: str | None
    subagent: bool = False
    compaction_run: bool = False
    memd_generated: bool = False
    non_interactive: bool = False
    opted_out: bool = False
    project_opted_out: bool = False
    external_context: tuple[str, ...] = ()
    unreadable_reason: str | None = None
    incomplete_reason: str | None = None
    parsed_offset: int = 0
    extracted_offset: int = 0
    failed_reason: str | None = None
    """Set when the last extraction of exactly these bytes failed for good."""
