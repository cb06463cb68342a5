"""What phase 1 asks the model to return: the models, their strict JSON schema, validation.

The schema sent (``output_schema()``) is strict: every object closed (``additionalProperties:
false``), every property required, no constraint keywords the API may not support; the checks the
schema cannot carry (non-empty strings, YYYY-MM-DD dates, at most ``MAX_MEMORIES``) run here, on
the reply. "Nothing durable" is a valid answer: an empty ``memories`` list and ``raw_memory``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.errors import LLMOutputInvalid

MAX_MEMORIES = 12
SLUG_MAX_CHARS = 60
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

MemoryType = Literal["user", "feedback", "project", "reference"]
EvidenceKind = Literal["user", "agent", "tool"]  # pipeline.vocabulary.Evidence


class CandidateMemory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: MemoryType = Field(description="user, feedback, project or reference")
    name: str = Field(description="A short title, at most 8 words.")
    description: str = Field(description="One line saying when this memory is relevant.")
    body: str = Field(description="The memory itself, self-contained.")
    why: str = Field(description="Why it matters; empty only for a pointer.")
    how_to_apply: str = Field(description="When it applies and what to do then; empty only for a pointer.")
    dates: list[str] = Field(description="Absolute dates (YYYY-MM-DD) the memory states or depends on.")
    # Defaults only for a reply to a request made before memd asked for them (a batch submitted then).
    key: str = Field(
        default="",
        description="The subject the memory is about, as a short key (lowercase words joined by -, "
        "e.g. staging-port): the same key for the same thing in every session.",
    )
    value: str = Field(
        default="",
        description="The value the memory states for that subject, in a few words (e.g. 8443); "
        "empty when it states no single value.",
    )
    # Defaults only for a reply to a request made before memd asked for evidence (a batch submitted
    # then): such a memory rests on nothing memd can check, the least trusted source.
    evidence: EvidenceKind = Field(
        default="tool",
        description="What it rests on: user (the user's own words), agent (what the agent did), "
        "or tool (what a tool returned: command output, a file, a fetched page).",
    )
    evidence_quote: str = Field(
        default="",
        description="A short verbatim quote from the transcript turn that shows it (the user's words for user).",
    )

    @field_validator("name", "body")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        flat = " ".join(value.split())
        if not flat:
            raise ValueError("must not be empty")
        return flat

    @field_validator("dates")
    @classmethod
    def _iso_dates(cls, value: list[str]) -> list[str]:
        bad = [d for d in value if not _DATE.match(d.strip())]
        if bad:
            raise ValueError(f"dates must be YYYY-MM-DD, got {bad[:3]}")
        return [d.strip() for d in value]


class Stage1Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rollout_summary: str = Field(description="A short recap of the session for a human reader.")
    raw_memory: str = Field(description="Durable notes as Markdown bullets, or empty when there are none.")
    rollout_slug: str = Field(description="A short lowercase name for the session, words joined with -.")
    memories: list[CandidateMemory] = Field(
        description="Candidate memories, most useful first; may be empty."
    )

    @field_validator("rollout_summary")
    @classmethod
    def _summary(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("rollout_slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        return slugify(value)

    @field_validator("memories")
    @classmethod
    def _cap(cls, value: list[CandidateMemory]) -> list[CandidateMemory]:
        if len(value) > MAX_MEMORIES:
            raise ValueError(f"at most {MAX_MEMORIES} memories")
        return value

    @property
    def nothing_durable(self) -> bool:
        return not self.memories and not self.raw_memory.strip()


def slugify(value: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")
    return slug[:SLUG_MAX_CHARS].rstrip("-") or "session"


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items() if k not in {"default", "title"}}
        if out.get("type") == "object" and "properties" in out:
            out["additionalProperties"] = False
            out["required"] = list(out["properties"])
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def output_schema() -> dict[str, Any]:
    """The strict JSON schema of ``Stage1Result`` as sent in ``output_config.format``."""
    schema: dict[str, Any] = _strict(Stage1Result.model_json_schema())
    return schema


def parse_result(text: str) -> Stage1Result:
    """Validate the model's reply; ``LLMOutputInvalid`` says what was wrong (never echoing the text)."""
    candidate = text.strip()
    if candidate.startswith("```"):
        # A fenced block around the JSON: take what is inside.
        candidate = candidate.split("\n", 1)[1] if "\n" in candidate else ""
        candidate = candidate.rsplit("```", 1)[0]
    try:
        return Stage1Result.model_validate_json(candidate)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'output'}: {e['type']}" for e in exc.errors()[:5]
        )
        raise LLMOutputInvalid(f"output failed validation ({exc.error_count()} errors: {problems})") from None
