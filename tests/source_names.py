"""The seven agents memd reads out of the box, by name, as the tests name them (the product names
them in their folders only: ``pipeline/agents/<name>/``; ``tests/pipeline/sources/test_registry.py``
checks the registry holds exactly these)."""

from __future__ import annotations

from enum import StrEnum


class SourceName(StrEnum):
    CLAUDE_CODE = "claude_code"
    CODEX = "codex"
    GEMINI_CLI = "gemini_cli"
    PI = "pi"
    OPENCODE = "opencode"
    COPILOT_CLI = "copilot_cli"
    QWEN_CODE = "qwen_code"
    OPENHANDS = "openhands"
    CLINE = "cline"
