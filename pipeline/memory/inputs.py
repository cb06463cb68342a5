"""Materializing a scope's phase-1 inputs as files the consolidation agent reads.

``rollout_summaries/<stem>.md`` holds one session's summary under a short header; the stem is
stable for a session (its start time, a hash of its id, its slug), so a re-extracted session shows
as a modification in the workspace diff and a dropped one as a deletion. ``raw_memories.md``
holds every session's raw memory, oldest first, under the values that changed between sessions,
newest marked current (``pipeline.memory.current``). Both are rewritten in full by memd each run.

The global scope is every project's: its inputs are not whole extracts but only their ``user``
candidate memories (what a session taught about the person), without the project, the session's
summary or its raw notes (``about_the_user``). An extract without one is no input of global. Only a
memory whose checked evidence is the user's own words goes there (``evidence_of``): one resting on
what the agent did or on what a tool returned (a file, a command's output, a fetched page) never
does, whatever the model claimed. An extract stored before memd recorded evidence has none: it
counts as the user's (``LEGACY_EVIDENCE``), as it did when it was made, since dropping it would
take what it taught out of ``global/`` at the next consolidation.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from pipeline.layout import GLOBAL_SCOPE, RAW_MEMORIES, ROLLOUT_DIR
from pipeline.memory.current import (
    Change,
    StatedValue,
    Statement,
    changed_values,
    render_changes,
    stated_values,
)
from pipeline.vocabulary import Evidence

SLUG_MAX_CHARS = 48
USER_MEMORY = "user"
"""The candidate memory type (``pipeline.extract.schema.MemoryType``) that is about the person."""
LEGACY_EVIDENCE = Evidence.USER
TOOL_ONLY_NOTE = (
    "Resting on tool output only (what a command printed, a file or a fetched page said; "
    "not the user's words):"
)
"""The heading memd puts in an extract's raw memory over its memories whose only evidence is tool
output, so consolidation keeps them as what their source said, never as the user's wish."""


@dataclass(frozen=True)
class InputRecord:
    """One phase-1 extract, as phase 2 consumes it."""

    id: int
    session_id: str
    source: str
    project: str | None
    scope: str
    rollout_slug: str
    rollout_summary: str
    raw_memory: str
    session_started_at: datetime | None
    session_last_activity: datetime | None
    created_at: datetime
    evidence: Evidence | None = None
    """The strongest checked evidence among the extract's memories (None: it has none)."""
    values: tuple[StatedValue, ...] = ()
    """What its candidate memories state, by subject key (``pipeline.memory.current``)."""
    told: tuple[str, ...] = ()
    """The text of its candidate memories resting on the user's or the agent's words (``told``)."""

    @property
    def stem(self) -> str:
        at = self.session_started_at or self.session_last_activity or self.created_at
        digest = hashlib.sha256(f"{self.source}\0{self.session_id}".encode()).hexdigest()[:8]
        slug = re.sub(r"[^a-z0-9]+", "-", self.rollout_slug.lower()).strip("-")[:SLUG_MAX_CHARS].strip("-")
        return f"{at.strftime('%Y-%m-%dT%H-%M-%S')}-{digest}" + (f"-{slug}" if slug else "")

    @property
    def summary_path(self) -> str:
        return f"{ROLLOUT_DIR}/{self.stem}.md"


def _iso(value: datetime | None) -> str:
    return value.isoformat().replace("+00:00", "Z") if value else "unknown"


def render_summary(record: InputRecord) -> str:
    header = [
        f"session: {record.session_id}",
        f"agent: {record.source}",
        f"project: {record.project or '(none: global)'}",
        f"started: {_iso(record.session_started_at)}",
        f"last_activity: {_iso(record.session_last_activity)}",
        f"extracted: {_iso(record.created_at)}",
    ]
    return "\n".join(header) + "\n\n" + record.rollout_summary.strip() + "\n"


def render_raw_memories(records: Sequence[InputRecord]) -> str:
    if not records:
        return "# Raw memories\n\nNo inputs: every extract of this scope was forgotten or expired.\n"
    parts = ["# Raw memories\n\nOne section per session, oldest first. Written by memd; read-only.\n"]
    for record in records:
        parts.append(
            f"\n## Session `{record.session_id}`\n"
            f"agent: {record.source}; last_activity: {_iso(record.session_last_activity)}; "
            f"rollout_summary_file: {record.summary_path}\n\n{record.raw_memory.strip()}\n"
        )
    return "".join(parts)


def _order(record: InputRecord) -> tuple[str, str]:
    return (_iso(record.session_last_activity or record.created_at), record.stem)


def changes_of(records: Iterable[InputRecord]) -> list[Change]:
    """The subject keys whose value changed between ``records``, in the order they were stated."""
    statements = [
        Statement(v.key, v.value, _order(r)[0], r.session_id)
        for r in sorted(records, key=_order)
        for v in r.values
    ]
    return changed_values(statements)


def _with_changes(text: str, block: str) -> str:
    """``raw_memories.md`` with ``block`` at its head, before every session's section."""
    head, sep, rest = text.partition("\n## Session ")
    return f"{head}\n{block}{sep}{rest}"


def materialize(
    scope_dir: Path,
    records: Sequence[InputRecord],
    *,
    clean: Callable[[str], str] = str,
    foreign: Callable[[str], bool] | None = None,
) -> None:
    """Write the inputs into ``scope_dir`` (``clean`` runs over every text, e.g. the redactor), pruning stale files.

    With ``foreign`` (a session id -> whether another machine's, ``[sync]``), an input of a session
    ``foreign`` vouches for is kept as it is, file and ``raw_memories.md`` section: the union of every
    machine's inputs. Every other stale input goes."""
    ordered = sorted(records, key=_order)
    folder = scope_dir / ROLLOUT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f"{r.stem}.md" for r in ordered}
    kept: set[str] = set()
    for existing in folder.iterdir():
        if existing.name in wanted and existing.is_file() and not existing.is_symlink():
            continue
        if foreign is not None and existing.is_file() and not existing.is_symlink():
            session = summary_session(existing.read_text(encoding="utf-8", errors="replace"))
            if session is not None and foreign(session):
                kept.add(f"{ROLLOUT_DIR}/{existing.name}")
                continue
        _remove(existing)
    for record in ordered:
        _write(folder / f"{record.stem}.md", clean(render_summary(record)))
    text = clean(render_raw_memories(ordered))
    raw = scope_dir / RAW_MEMORIES
    if kept and raw.is_file() and not raw.is_symlink():
        others = [
            s for s in raw_sections(raw.read_text(encoding="utf-8", errors="replace")) if s.file in kept
        ]
        text = join_raw_sections(raw_sections(text) + others)
    block = render_changes(changes_of(ordered))
    _write(raw, _with_changes(text, clean(block)) if block else text)


def summary_session(text: str) -> str | None:
    """The session a ``rollout_summaries/`` file is about (its ``session:`` header line)."""
    first = text.split("\n", 1)[0]
    if first.startswith("session: "):
        return first.removeprefix("session: ").strip() or None
    return None


@dataclass(frozen=True)
class RawSection:
    """One session's section of ``raw_memories.md``."""

    session: str
    file: str
    last_activity: str
    text: str


_SECTION = re.compile(r"^## Session `([^`\n]*)`$", re.MULTILINE)
_SECTION_META = re.compile(r"last_activity: ([^;\n]*); rollout_summary_file: (\S+)")
RAW_HEADER = "# Raw memories\n\nOne section per session, oldest first. Written by memd; read-only.\n"


def raw_sections(text: str) -> list[RawSection]:
    """The sections of a ``raw_memories.md`` (memd's format; anything else in it is dropped)."""
    starts = list(_SECTION.finditer(text))
    out: list[RawSection] = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        body = text[match.start() : end].rstrip("\n") + "\n"
        meta = _SECTION_META.search(body)
        if meta is None:
            continue
        out.append(RawSection(match.group(1), meta.group(2), meta.group(1).strip(), body))
    return out


def join_raw_sections(sections: Iterable[RawSection]) -> str:
    """``raw_memories.md`` of ``sections``, one per summary file, oldest first."""
    unique: dict[str, RawSection] = {}
    for section in sections:
        unique.setdefault(section.file, section)
    ordered = sorted(unique.values(), key=lambda s: (s.last_activity, s.file))
    if not ordered:
        return render_raw_memories([])
    return RAW_HEADER + "".join("\n" + s.text for s in ordered)


def _write(path: Path, text: str) -> None:
    if path.is_symlink():
        path.unlink()
    path.write_text(text, encoding="utf-8")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def evidence_of(memory: Mapping[str, object]) -> Evidence:
    """A stored memory's checked evidence; ``LEGACY_EVIDENCE`` when it was stored without one, the
    least trusted (``tool``) when what is stored is not a known value."""
    if "evidence" not in memory:
        return LEGACY_EVIDENCE
    value = memory.get("evidence")
    return Evidence(value) if isinstance(value, str) and value in set(Evidence) else Evidence.TOOL


_STRENGTH = (Evidence.TOOL, Evidence.AGENT, Evidence.USER)


def strongest_evidence(memories: Iterable[Mapping[str, object]]) -> Evidence | None:
    """The strongest checked evidence among an extract's memories (user > agent > tool); None without one."""
    found = [evidence_of(m) for m in memories if isinstance(m, Mapping)]
    return max(found, key=_STRENGTH.index) if found else None


def rest_on_tools_only(records: Iterable[InputRecord]) -> bool:
    """Whether ``records`` (a run's new inputs) hold memories and every one rests on tool output only:
    what the run learned can have come from nothing else."""
    found = [r.evidence for r in records]
    return bool(found) and all(e == Evidence.TOOL for e in found)


def user_memories(memories: Iterable[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """The candidate memories of an extract that are about the user, on the user's own word."""
    return [
        m
        for m in memories
        if isinstance(m, Mapping) and m.get("type") == USER_MEMORY and evidence_of(m) == Evidence.USER
    ]


def feeds_global(memories: Iterable[Mapping[str, object]]) -> bool:
    """Whether an extract is an input of the global scope: it holds a memory about the user, on the
    user's own word (``about_the_user``; the store counts and picks global's inputs by it)."""
    return bool(user_memories(memories))


_TOLD_FIELDS = ("name", "description", "body", "why", "how_to_apply", "key", "value", "evidence_quote")


def told(memories: Iterable[Mapping[str, object]]) -> tuple[str, ...]:
    """The text of the memories whose checked evidence is the user's or the agent's words, one string
    each: what the run's inputs say that no tool alone said (``pipeline.checks.tool_marks``)."""
    return tuple(
        "\n".join(str(m.get(k) or "") for k in _TOLD_FIELDS)
        for m in memories
        if isinstance(m, Mapping) and evidence_of(m) != Evidence.TOOL
    )


def tool_only_note(memories: Iterable[Mapping[str, object]]) -> str:
    """``TOOL_ONLY_NOTE`` and one line per memory resting on tool output only; empty without one."""
    lines = [
        f"- {str(m.get('name') or '').strip()}: {' '.join(str(m.get('body') or '').split())}"
        for m in memories
        if isinstance(m, Mapping) and evidence_of(m) == Evidence.TOOL
    ]
    return TOOL_ONLY_NOTE + "\n" + "\n".join(lines) if lines else ""


def rests_on_tools(record: InputRecord) -> bool:
    """Whether an input holds a memory resting on tool output only (``[review] tool_evidence``)."""
    return TOOL_ONLY_NOTE in record.raw_memory


def _render_user_memories(memories: Sequence[Mapping[str, object]]) -> str:
    lines = []
    for m in memories:
        line = f"- **{str(m.get('name') or '').strip()}**: {str(m.get('body') or '').strip()}"
        for label, key in (("why", "why"), ("how to apply", "how_to_apply")):
            value = str(m.get(key) or "").strip()
            if value:
                line += f"\n  - {label}: {value}"
        lines.append(line)
    return "\n".join(lines)


def about_the_user(record: InputRecord, memories: Iterable[Mapping[str, object]]) -> InputRecord | None:
    """``record`` as an input of the global scope: its user memories only, no project; None without one."""
    mine = user_memories(memories)
    if not mine:
        return None
    text = _render_user_memories(mine)
    return replace(
        record,
        values=stated_values(mine),
        told=told(mine),
        project=None,
        scope=GLOBAL_SCOPE,
        evidence=Evidence.USER,
        rollout_slug="about-the-user",
        rollout_summary=(
            "What this session taught about the user (its project, summary and notes are left out):\n\n"
            + text
        ),
        raw_memory=text,
    )


def as_global(record: InputRecord) -> InputRecord:
    """A record named in a global run's plan only by its session (a removed input: no text needed)."""
    return replace(record, project=None, scope=GLOBAL_SCOPE, rollout_summary="", raw_memory="", told=())
