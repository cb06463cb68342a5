"""The transcript sources memd knows, and the adapter of each."""

from __future__ import annotations

from pipeline.sources.base import SourceAdapter
from pipeline.sources.claude_code import ClaudeCodeAdapter
from pipeline.sources.codex import CodexAdapter
from pipeline.sources.gemini_cli import GeminiCliAdapter
from pipeline.sources.pi import PiAdapter
from pipeline.transcript import SourceName


def adapter_for(source: SourceName) -> SourceAdapter:
    """A new adapter for ``source`` (adapters hold only small caches; one per scan is fine)."""
    adapters: dict[str, type[SourceAdapter]] = {
        "claude_code": ClaudeCodeAdapter,
        "codex": CodexAdapter,
        "gemini_cli": GeminiCliAdapter,
        "pi": PiAdapter,
    }
    try:
        return adapters[source]()
    except KeyError:
        raise ValueError(f"unknown transcript source: {source!r}") from None
