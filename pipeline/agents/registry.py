"""Every agent memd knows out of the box, in order: one line each (``pipeline.roster`` loads this
list on first use; the order is the one scans, publishes and the settings follow)."""

from __future__ import annotations

from pipeline.agents import (
    aider,
    claude_code,
    cline,
    codex,
    copilot_cli,
    gemini_cli,
    opencode,
    openhands,
    pi,
    qwen_code,
)
from pipeline.roster import Agent

AGENTS: tuple[Agent, ...] = (
    claude_code.AGENT,
    codex.AGENT,
    gemini_cli.AGENT,
    pi.AGENT,
    opencode.AGENT,
    copilot_cli.AGENT,
    qwen_code.AGENT,
    aider.AGENT,
    openhands.AGENT,
    cline.AGENT,
)
