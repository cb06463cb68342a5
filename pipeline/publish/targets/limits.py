"""Each agent's load cut, in one place: what an agent reads of the file memd writes for it at session
start, and the check every plan passes before anything is published.

A target renders within its cut by construction (``render.Budget``, ``folder.LoadCut``, Codex's
token cap); ``enforce`` checks the bytes each plan would write, the agent's own text in the file
included, and a file over its cut is not written: the plan fails with the reason and the previous
published version stays (an index cut in the middle is half invisible, and silently so).

| target | file | cut |
|---|---|---|
| ``claude_code`` | ``MEMORY.md`` | 200 lines, 25,000 bytes |
| ``claude_code_global`` | ``CLAUDE.md`` | 40,000 characters (Claude Code's "large CLAUDE.md" warning) |
| ``gemini`` | ``MEMORY.md`` | 200 lines, 25,000 bytes |
| ``gemini_global`` | ``GEMINI.md`` | 32,768 bytes |
| ``qwen_code`` | ``MEMORY.md`` | 200 lines, 25,000 characters |
| ``codex`` | ``memory_summary.md`` | 2,500 tokens (estimated high: 3 bytes a token) |
| ``codex_global``, ``agents_md``, ``opencode_global`` | ``AGENTS.md`` | 32,768 bytes (Codex's ``project_doc_max_bytes``) |
| ``copilot_global`` | ``copilot-instructions.md`` | 32,768 bytes |

Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.publish.plan import Plan
from pipeline.publish.render import approx_tokens

AGENTS_MD_MAX_BYTES = 32_768
"""Codex's ``project_doc_max_bytes``: the smallest of the cuts of the agents that load ``AGENTS.md``."""


@dataclass(frozen=True)
class LoadLimit:
    agent: str
    file: str
    """The name of the file the agent loads at session start (the plan's other files are opened on demand)."""
    max_lines: int | None = None
    max_bytes: int | None = None
    max_chars: int | None = None
    max_tokens: int | None = None

    def over(self, data: bytes) -> str | None:
        """What of ``data`` is over the cut (None: it fits)."""
        text = data.decode("utf-8", "replace")
        found = []
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if self.max_lines is not None and lines > self.max_lines:
            found.append(f"{lines} lines (cut: {self.max_lines:,})")
        if self.max_bytes is not None and len(data) > self.max_bytes:
            found.append(f"{len(data):,} bytes (cut: {self.max_bytes:,})")
        if self.max_chars is not None and len(text) > self.max_chars:
            found.append(f"{len(text):,} characters (cut: {self.max_chars:,})")
        if self.max_tokens is not None and (tokens := approx_tokens(text)) > self.max_tokens:
            found.append(f"about {tokens:,} tokens (cut: {self.max_tokens:,})")
        return ", ".join(found) or None


LIMITS: dict[str, LoadLimit] = {
    "claude_code": LoadLimit("Claude Code", "MEMORY.md", max_lines=200, max_bytes=25_000),
    "claude_code_global": LoadLimit("Claude Code", "CLAUDE.md", max_chars=40_000),
    "gemini": LoadLimit("Gemini CLI", "MEMORY.md", max_lines=200, max_bytes=25_000),
    "gemini_global": LoadLimit("Gemini CLI", "GEMINI.md", max_bytes=AGENTS_MD_MAX_BYTES),
    "qwen_code": LoadLimit("Qwen Code", "MEMORY.md", max_lines=200, max_chars=25_000),
    "codex": LoadLimit("Codex", "memory_summary.md", max_tokens=2_500),
    "codex_global": LoadLimit("Codex", "AGENTS.md", max_bytes=AGENTS_MD_MAX_BYTES),
    "agents_md": LoadLimit(
        "Codex, OpenCode, Copilot CLI and Qwen Code", "AGENTS.md", max_bytes=AGENTS_MD_MAX_BYTES
    ),
    "opencode_global": LoadLimit("OpenCode", "AGENTS.md", max_bytes=AGENTS_MD_MAX_BYTES),
    "copilot_global": LoadLimit("Copilot CLI", "copilot-instructions.md", max_bytes=AGENTS_MD_MAX_BYTES),
}
"""Target name -> the cut of the file its agent loads. Every target's renderer reads its cut here."""


def lines_and_bytes(target: str) -> tuple[int, int]:
    """The cut of a target's index as lines and bytes (a character cut counts as bytes: never more)."""
    limit = LIMITS[target]
    size = limit.max_bytes or limit.max_chars
    assert limit.max_lines is not None
    assert size is not None
    return limit.max_lines, size


def _no_bigger(data: bytes, before: bytes | None) -> bool:
    """The change makes the file no longer (bytes and lines) than it is: memd shrinks its part of a
    file the owner's own text keeps over the cut, which never hides more of it."""
    return before is not None and len(data) <= len(before) and data.count(b"\n") <= before.count(b"\n")


def token_cap(target: str, wanted: int) -> int:
    """``wanted`` tokens, or the agent's cut when that is smaller."""
    cut = LIMITS[target].max_tokens
    return wanted if cut is None else min(wanted, cut)


def enforce(plans: Iterable[Plan]) -> None:
    """Fail each plan that would write a file over its agent's cut, keeping every file as it is. A
    plan that only takes memd's copy back (a withdrawal, a refusal) is never held up."""
    for plan in plans:
        limit = LIMITS.get(plan.target)
        if limit is None or plan.error or plan.withdraw or plan.refused:
            continue
        for change in plan.changes:
            if (
                change.data is None
                or change.path.name != limit.file
                or _no_bigger(change.data, change.expected)
            ):
                continue
            if (over := limit.over(change.data)) is not None:
                plan.error = (
                    f"{change.path} would be {over}, over what {limit.agent} loads of it: the previously "
                    "published version is kept"
                )
                plan.changes = []
                break
