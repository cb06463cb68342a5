"""The caps on what an agent hands memd (``memory_remember``, ``memory_feedback``), standard library
only: `memd mcp` declares them in its tools' input schemas at start, before any store is near."""

from __future__ import annotations

TEXT_MAX_CHARS = 2_000
"""The longest note."""
REASON_MAX_CHARS = 500
"""The longest reason given with a note."""
NOTE_MAX_CHARS = 500
"""The longest note given with a verdict."""
OPEN_NOTES_MAX = 50
"""The most notes a scope may hold waiting for its next consolidation (each goes into its prompt)."""
FEEDBACK_PER_HOUR = 60
"""Verdicts one MCP session may give in an hour."""
