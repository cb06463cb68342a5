"""Building one extraction request: prompts filled, transcript fenced as data, system prompt cached.

The request is self-contained and deterministic for a given transcript part: the fixed system
prompt first (marked ``cache_control: ephemeral``, so repeated extractions read it from the cache),
then one user message from ``prompts/extract.user.md`` carrying the session's metadata, the
previous summary for a re-extraction (``prompts/extract.previous.md``) and the rendered
transcript inside ``<transcript>`` ... ``</transcript>``. Tags that would close the fence early are
defused in the content. Output is constrained by ``output_config.format`` (the strict schema).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pipeline.extract.compact import estimate_tokens
from pipeline.extract.schema import output_schema
from pipeline.prompts import Prompt, combined_hash, load_prompt
from pipeline.sources import registry

EXTRACT_MAX_TOKENS = 8_000
USER_PLACEHOLDERS = frozenset(
    {
        "source",
        "project",
        "session_id",
        "started_at",
        "last_activity",
        "coverage",
        "previous_summary",
        "render_note",
        "transcript",
    }
)
_FENCE_TAGS = re.compile(r"<(/?)\s*(transcript|previous_summary)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ExtractPrompts:
    system: Prompt
    user: Prompt
    previous: Prompt

    @staticmethod
    def load() -> ExtractPrompts:
        """Load and check the three extraction prompts (``PromptError`` when one does not match)."""
        return ExtractPrompts(
            system=load_prompt("extract.system", expected=()),
            user=load_prompt("extract.user", expected=USER_PLACEHOLDERS),
            previous=load_prompt("extract.previous", expected=("summary",)),
        )

    @property
    def hash(self) -> str:
        return combined_hash(self.system, self.user, self.previous)


def defuse(text: str) -> str:
    """Content that cannot close (or open) the prompt's data fences: ``</transcript>`` -> ``</transcript_>``."""
    return _FENCE_TAGS.sub(lambda m: f"<{m.group(1)}{m.group(2)}_", text)


def _when(value: datetime | None) -> str:
    return "unknown" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class SessionInfo:
    source: str
    project: str | None
    session_id: str
    started_at: datetime | None
    last_activity: datetime | None


def user_text(
    prompts: ExtractPrompts,
    session: SessionInfo,
    *,
    transcript: str,
    coverage: str,
    render_note: str,
    previous_summary: str | None,
) -> str:
    """The filled user message (before redaction)."""
    previous = ""
    if previous_summary:
        previous = prompts.previous.fill(summary=defuse(previous_summary.strip()))
    return prompts.user.fill(
        source=registry.label_of(session.source),
        project=session.project or "(none: the global scope)",
        session_id=session.session_id or "unknown",
        started_at=_when(session.started_at),
        last_activity=_when(session.last_activity),
        coverage=coverage,
        previous_summary=previous,
        render_note=(render_note + "\n") if render_note else "",
        transcript=defuse(transcript),
    )


def build_params(prompts: ExtractPrompts, *, model: str, user: str) -> dict[str, Any]:
    """The Messages request for one extraction (also the ``params`` of a batch entry)."""
    return {
        "model": model,
        "max_tokens": EXTRACT_MAX_TOKENS,
        "system": [{"type": "text", "text": prompts.system.text, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": user}],
        "output_config": {"format": {"type": "json_schema", "schema": output_schema()}},
    }


def estimate_request_tokens(params: dict[str, Any]) -> int:
    """Local estimate of a request's input tokens: system, messages and the schema."""
    system = "".join(block["text"] for block in params["system"])
    messages = "".join(str(m["content"]) for m in params["messages"])
    schema = json.dumps(params["output_config"]["format"]["schema"], separators=(",", ":"))
    return estimate_tokens(system) + estimate_tokens(messages) + estimate_tokens(schema)
