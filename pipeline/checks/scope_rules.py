"""What each scope is for, checked in code after phase 2 (whatever the model wrote).

``global/`` is published to every project (``claude_code_global``, Codex's global file): it takes
only what is about the person, topics of type ``user`` and the ``feedback`` (how they want agents to
work) that applies everywhere, never a ``project`` or ``reference`` fact, and never a topic resting on
tool output only (``evidence: tool``: what a command printed or a page said is no word of the user's).
Each breach is a finding for the repair turn; a run that still breaks it is refused with the reason.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.layout import GLOBAL_SCOPE, is_topic_path
from pipeline.memory import frontmatter
from pipeline.memory.listing import list_scope

GLOBAL_TYPES = ("user", "feedback")
"""The topic types ``global/`` takes."""


def scope_findings(scope: str, scope_dir: Path) -> list[str]:
    """Each topic of ``scope`` that does not belong there, as a sentence for the model."""
    if scope != GLOBAL_SCOPE:
        return []
    out: list[str] = []
    for rel in list_scope(scope_dir).files:
        if not is_topic_path(rel):
            continue
        try:
            meta = frontmatter.parse((scope_dir / rel).read_text(encoding="utf-8")).meta
        except (frontmatter.FrontmatterError, UnicodeDecodeError):
            continue  # validation reports it
        if meta.type and meta.type not in GLOBAL_TYPES:
            out.append(
                f"{rel} has type {meta.type!r}: global/ holds only what is about the user "
                f"({' or '.join(GLOBAL_TYPES)}), never project facts; delete it or keep only what is about the user"
            )
        if meta.from_tools:
            out.append(
                f"{rel} rests on tool output only (evidence: tool): global/ takes only what the user said "
                "about themselves; delete it"
            )
    return out
