"""Topic-file frontmatter: a small strict subset of YAML, parsed and rendered by memd.

```
---
name: Test conventions
description: How this project runs its tests; open before writing or running tests
type: project
created: 2026-11-01
updated: 2026-11-03
sources: ["4f1c...", "9a02..."]
expires: 2027-01-31
evidence: tool
cites: ["src/app.py:3-5"]
---
<body>
```

The agent writes ``name``, ``description``, ``type`` (and may write ``expires``, ``evidence`` and
``cites``) and the body; memd owns ``created``, ``updated`` and ``sources`` and overwrites whatever the model
put there. ``evidence: tool`` marks a topic resting on tool output only (what a command printed, a
file or a fetched page said): memd sets it itself when a run's new inputs hold nothing else
(``pipeline.checks.provenance``), and publishing says so beside the topic.

A key memd does not know is kept as it was written (``Frontmatter.extra``) when memd re-renders the
file, so the checks report it to the model (``problems``) rather than losing it in silence.

The person owns two more keys (``memd memories pin`` / ``edit``, ``pipeline.memory.steer``):
``pinned: true`` (phase 2 never deletes the topic) and ``edited: YYYY-MM-DD`` (the day the person
last wrote it: phase 2 never overwrites or drops it). A model never sets them: memd carries them
over from a topic's previous version and drops them from a new one.

``sources`` is a flow list (``["a", "b"]`` as memd writes it, or ``[a, b]``) or a block list (one
``- a`` line per item under ``sources:``); so is ``cites`` (code lines the memory rests on,
``pipeline.memory.cites``); no other key takes a list. One parser serves every
reader: the checks of a consolidation and of incoming sync commits read strictly (``parse``: any
malformed line is refused); publishing and recall read leniently (``parse(text, strict=False)``:
what cannot be read is left out, so a hand-edited file is still published).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import field, replace
from datetime import date
from functools import partial
from typing import TypeVar

from pipeline.frozen import frozen_by_position
from pipeline.layout import TOPIC_TYPES
from pipeline.memory import cites

T = TypeVar("T")

AGENT_KEYS = ("name", "description", "type", "expires", "evidence", "cites")
MEMD_KEYS = ("created", "updated", "sources")
EVIDENCE_VALUES = ("user", "agent", "tool")
"""``evidence``: what a topic rests on (``pipeline.vocabulary.Evidence``); absent means not marked."""
TOOL_EVIDENCE = "tool"
USER_EVIDENCE = "user"
"""What a topic the person wrote (``memd memories edit``) rests on: their own words."""
PERSON_KEYS = ("pinned", "edited")
KEYS = (
    "name",
    "description",
    "type",
    "created",
    "updated",
    "sources",
    "expires",
    "evidence",
    "cites",
    *PERSON_KEYS,
)
LIST_KEYS = ("sources", "cites")
NAME_MAX_CHARS = 120
DESCRIPTION_MAX_CHARS = 400

_PLAIN = re.compile(r"^[A-Za-z0-9(][^\n#]*$")
_DATE_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_KEY_LINE = re.compile(r"^([a-z_]+):(?:\s(.*)|)$")


class FrontmatterError(ValueError):
    """The frontmatter is missing or malformed; the message says where."""


@frozen_by_position
class Frontmatter:
    name: str = ""
    description: str = ""
    type: str = ""
    created: date | None = None
    updated: date | None = None
    sources: tuple[str, ...] = ()
    expires: date | None = None
    evidence: str = ""
    unknown: tuple[str, ...] = field(default=())
    extra: tuple[tuple[str, str], ...] = field(default=())
    """Each unknown key and its value as written, kept by ``render`` for the checks to report."""
    pinned: bool = False
    """``memd memories pin``: phase 2 never deletes this topic."""
    edited: date | None = None
    """``memd memories edit``: the day the person last wrote it; phase 2 never overwrites or drops it."""
    cites: tuple[str, ...] = ()
    """Code lines the memory rests on, ``<path relative to the project root>:<first>-<last>``
    (``pipeline.memory.cites``); memd checks them at every publish."""

    @property
    def from_tools(self) -> bool:
        """Whether the topic rests on tool output only (``evidence: tool``)."""
        return self.evidence == TOOL_EVIDENCE

    def with_provenance(self, *, created: date, updated: date, sources: tuple[str, ...]) -> Frontmatter:
        return replace(self, created=created, updated=updated, sources=tuple(sorted(set(sources))))


@frozen_by_position
class TopicFile:
    meta: Frontmatter
    body: str


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            raise FrontmatterError(f"bad quoted value: {raw[:40]}") from None
        if not isinstance(value, str):
            raise FrontmatterError(f"expected a string: {raw[:40]}")
        return value
    if raw.startswith("'") and raw.endswith("'") and len(raw) >= 2:
        return raw[1:-1].replace("''", "'")
    return raw


def _list(raw: str) -> tuple[str, ...]:
    raw = raw.strip()
    if not (raw.startswith("[") and raw.endswith("]")):
        raise FrontmatterError('a list must be written like ["a", "b"]')
    inner = raw[1:-1].strip()
    if not inner:
        return ()
    try:
        value = json.loads(raw)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    except ValueError:
        pass
    return tuple(_scalar(item) for item in inner.split(",") if item.strip())


def _flag(key: str, raw: str) -> bool:
    value = _scalar(raw).lower() if raw.strip() else "false"
    if value not in ("true", "false"):
        raise FrontmatterError(f"{key} must be true or false, got {raw.strip()[:30]!r}")
    return value == "true"


def _date(key: str, raw: str) -> date:
    try:
        return date.fromisoformat(_scalar(raw))
    except ValueError:
        raise FrontmatterError(f"{key} must be a date YYYY-MM-DD, got {raw.strip()[:30]!r}") from None


def split(text: str) -> tuple[list[str], str]:
    """The frontmatter lines and the body. Raises ``FrontmatterError`` when there is no frontmatter."""
    if not text.startswith("---\n"):
        raise FrontmatterError("the file must start with a frontmatter block: a line '---'")
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise FrontmatterError("the frontmatter block is not closed by a line '---'")
    head = text[4:end]
    body = text[end + 5 :]
    return (head.split("\n") if head else []), body


def parse(text: str, *, strict: bool = True) -> TopicFile:
    """The frontmatter and the body. ``strict``: a malformed file raises ``FrontmatterError``;
    otherwise a file without a frontmatter block is all body, and a line that is not ``key: value``,
    a repeated key, a bad quoted value or a bad date (a date-time gives its day) is left out."""
    if not strict:
        text = text.replace("\r\n", "\n")
    try:
        lines, body = split(text)
    except FrontmatterError:
        if strict:
            raise
        return TopicFile(Frontmatter(), text)
    values, block_items, unknown = _entries(lines, strict)

    def list_of(key: str) -> tuple[str, ...]:
        if key not in values:
            return ()
        raw = values[key]
        return tuple(block_items.get(key, ())) if not raw.strip() else _read(strict, lambda: _list(raw), ())

    sources = list_of("sources")

    def text_of(key: str) -> str:
        return _read(strict, lambda: _scalar(values.get(key, "")), "")

    def date_of(key: str) -> date | None:
        raw = values.get(key, "").strip()
        if not raw:
            return None
        if not strict and (day := _DATE_PREFIX.match(raw.strip("\"'"))):
            raw = day.group(1)
        return _read(strict, lambda: _date(key, raw), None)

    meta = Frontmatter(
        name=text_of("name"),
        description=text_of("description"),
        type=text_of("type"),
        created=date_of("created"),
        updated=date_of("updated"),
        sources=sources,
        expires=date_of("expires"),
        evidence=text_of("evidence"),
        unknown=tuple(unknown),
        extra=tuple((key, values[key]) for key in unknown),
        pinned=_read(strict, lambda: _flag("pinned", values.get("pinned", "")), False),
        edited=date_of("edited"),
        cites=list_of("cites"),
    )
    return TopicFile(meta, body)


def _entries(lines: list[str], strict: bool) -> tuple[dict[str, str], dict[str, list[str]], list[str]]:
    """Each key's raw value, the items of each block list (``sources:``, ``cites:``), and the keys not in ``KEYS``."""
    values: dict[str, str] = {}
    block_items: dict[str, list[str]] = {}
    unknown: list[str] = []
    block_key: str | None = None
    for number, line in enumerate(lines, start=2):
        if block_key is not None and line.startswith(("  - ", "- ")):
            block_items.setdefault(block_key, []).extend(_read(strict, partial(_item, line), ()))
            continue
        if not line.strip():
            continue
        match = _KEY_LINE.match(line)
        if match is None or match.group(1) in values:
            if strict:
                raise FrontmatterError(
                    f"line {number} of the frontmatter is not 'key: value'"
                    if match is None
                    else f"key {match.group(1)!r} appears twice"
                )
            continue
        key, raw = match.group(1), match.group(2) or ""
        if key not in KEYS:
            unknown.append(key)
        block_key = key if key in LIST_KEYS and not raw.strip() else None
        values[key] = raw
    return values, block_items, unknown


def _item(line: str) -> tuple[str]:
    return (_scalar(line.split("- ", 1)[1]),)


def _read(strict: bool, value: Callable[[], T], default: T) -> T:
    """``value()``; when not ``strict``, ``default`` where it raises ``FrontmatterError``."""
    try:
        return value()
    except FrontmatterError:
        if strict:
            raise
        return default


def problems(meta: Frontmatter, *, require_provenance: bool = True) -> list[str]:
    """What is wrong with ``meta`` against the schema, as short sentences (empty when valid)."""
    out: list[str] = []
    if meta.unknown:
        out.append(
            f"unknown frontmatter keys {list(meta.unknown)}: remove them, or say what they held in the body "
            f"(the keys you write: {', '.join(AGENT_KEYS)})"
        )
    if not meta.name.strip():
        out.append("missing 'name'")
    elif "\n" in meta.name or len(meta.name) > NAME_MAX_CHARS:
        out.append(f"'name' must be one line of at most {NAME_MAX_CHARS} characters")
    if not meta.description.strip():
        out.append("missing 'description'")
    elif "\n" in meta.description or len(meta.description) > DESCRIPTION_MAX_CHARS:
        out.append(f"'description' must be one line of at most {DESCRIPTION_MAX_CHARS} characters")
    if meta.type not in TOPIC_TYPES:
        out.append(f"'type' must be one of {', '.join(TOPIC_TYPES)} (got {meta.type[:30]!r})")
    if meta.evidence and meta.evidence not in EVIDENCE_VALUES:
        out.append(f"'evidence' must be one of {', '.join(EVIDENCE_VALUES)} (got {meta.evidence[:30]!r})")
    if require_provenance and (meta.created is None or meta.updated is None):
        out.append("missing 'created'/'updated' (memd sets them)")
    out.extend(cites.problems(meta.cites))
    return out


def _render_scalar(value: str) -> str:
    value = value.replace("\n", " ").strip()
    if _PLAIN.match(value) and ": " not in value and not value.endswith(":"):
        return value
    return json.dumps(value, ensure_ascii=False)


def render(meta: Frontmatter, body: str) -> str:
    """The file text: frontmatter in a fixed key order (unknown keys last, as written), then the body."""
    lines = [
        "---",
        f"name: {_render_scalar(meta.name)}",
        f"description: {_render_scalar(meta.description)}",
        f"type: {meta.type}",
    ]
    if meta.created is not None:
        lines.append(f"created: {meta.created.isoformat()}")
    if meta.updated is not None:
        lines.append(f"updated: {meta.updated.isoformat()}")
    lines.append("sources: " + json.dumps(list(meta.sources), ensure_ascii=False))
    if meta.expires is not None:
        lines.append(f"expires: {meta.expires.isoformat()}")
    if meta.evidence:
        lines.append(f"evidence: {_render_scalar(meta.evidence)}")
    if meta.cites:
        lines.append("cites: " + json.dumps(list(meta.cites), ensure_ascii=False))
    if meta.pinned:
        lines.append("pinned: true")
    if meta.edited is not None:
        lines.append(f"edited: {meta.edited.isoformat()}")
    lines.extend(f"{key}: {' '.join(raw.split())}".rstrip() for key, raw in meta.extra)
    lines.append("---")
    return "\n".join(lines) + "\n" + body
