"""Each agent's load cut, in one place: what an agent reads of the file memd writes for it at session
start, and the check every plan passes before anything is published.

A target renders within its cut by construction (``render.Budget``, ``folder.LoadCut``, Codex's
token cap); ``enforce`` checks the bytes each plan would write, the agent's own text in the file
included, and a file over its cut is not written: the plan fails with the reason and the previous
published version stays (an index cut in the middle is half invisible, and silently so).

Each agent declares the cut of every file its targets write in its folder
(``pipeline.roster.PublishKey.cut``); the project's own ``AGENTS.md`` (``agents_md``) is cut at
the smallest of the cuts of the agents that load it (Codex's ``project_doc_max_bytes``).

Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pipeline import roster
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


AGENTS_MD = "agents_md"


def limits() -> dict[str, LoadLimit]:
    """Target name -> the cut of the file its agent loads. Every target's renderer reads its cut here."""
    found = {
        name: LoadLimit(agent, cut.file, cut.max_lines, cut.max_bytes, cut.max_chars, cut.max_tokens)
        for name, (agent, cut) in roster.cuts().items()
    }
    readers = [agent.said for agent in roster.agents_md_readers()]
    said = ", ".join(readers[:-1]) + " and " + readers[-1] if len(readers) > 1 else "".join(readers)
    found[AGENTS_MD] = LoadLimit(said or "the agents", "AGENTS.md", max_bytes=AGENTS_MD_MAX_BYTES)
    return found


def lines_and_bytes(target: str) -> tuple[int, int]:
    """The cut of a target's index as lines and bytes (a character cut counts as bytes: never more)."""
    limit = limits()[target]
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
    cut = limits()[target].max_tokens
    return wanted if cut is None else min(wanted, cut)


def enforce(plans: Iterable[Plan]) -> None:
    """Fail each plan that would write a file over its agent's cut, keeping every file as it is. A
    plan that only takes memd's copy back (a withdrawal, a refusal) is never held up."""
    cuts = limits()
    for plan in plans:
        limit = cuts.get(plan.target)
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
