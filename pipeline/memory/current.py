"""Newer wins, by rule: values of the same thing that changed between a scope's inputs, ordered by
date with the newest marked current, and the topics that still state a superseded one.

"The same thing" is decided in code, never by the model: two candidate memories are about the same
thing when their subject keys match after normalising (``subject_key``: lowercase, every run of
characters other than letters and digits one ``-``). A memory's key is the ``key`` phase 1 returns
(the extraction prompt asks for the same key for the same thing in every session); a memory stored
before memd asked for one is keyed by its normalised name. A memory states a value when phase 1
returned a non-empty ``value``; values are compared normalised (case, spacing, a final full stop).

The date a value was stated is its session's last activity (when the user said it), the order the
inputs are given in; a key whose stated values differ is a ``Change``, its last value current, the
others superseded. ``render_changes`` is the block memd puts at the head of ``raw_memories.md``;
``superseded_findings`` is the check after phase 2: a topic line (of its body, name or description)
that states a superseded value (as a whole word, at least two characters) without marking it as
former (``FORMER``: "was", "previously", "until", ...), in a topic that also states the current
value or on a line naming the key (one of its words of four letters or more), is a finding for the
repair turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.layout import is_topic_path

_NOT_KEY = re.compile(r"[^a-z0-9]+")
FORMER = re.compile(
    r"\b(?:was|were|previously|formerly|earlier|until|superseded|replaced|no longer|used to|"
    r"changed from|switched from|old|before)\b",
    re.IGNORECASE,
)
"""Words that mark a value on a topic line as a former one (kept as history, not as current)."""
KEY_MAX_CHARS = 80
VALUE_MIN_CHARS = 2
"""A shorter superseded value (``1``, ``x``) is in too many lines to flag any."""
KEY_WORD_MIN_CHARS = 4
STATING_KEYS = ("name:", "description:")
"""The frontmatter keys whose text states something (the others are memd's or the model's metadata)."""


def subject_key(text: str) -> str:
    """``text`` as a subject key: lowercase, runs of other characters than letters and digits one ``-``."""
    return _NOT_KEY.sub("-", text.lower()).strip("-")[:KEY_MAX_CHARS]


def normal_value(text: str) -> str:
    return " ".join(text.split()).rstrip(".").casefold()


@dataclass(frozen=True)
class StatedValue:
    """One candidate memory's value for its subject key."""

    key: str
    value: str


def stated_values(memories: Iterable[object]) -> tuple[StatedValue, ...]:
    """The values an extract's candidate memories state, keyed (see the module docstring)."""
    out: list[StatedValue] = []
    for memory in memories:
        if not isinstance(memory, Mapping):
            continue
        value = " ".join(str(memory.get("value") or "").split())
        key = subject_key(str(memory.get("key") or "")) or subject_key(str(memory.get("name") or ""))
        if key and value:
            out.append(StatedValue(key, value))
    return tuple(out)


@dataclass(frozen=True)
class Statement:
    """A value as an input stated it: when (ISO time of its session's last activity), in which session."""

    key: str
    value: str
    when: str
    session: str


@dataclass(frozen=True)
class Change:
    """A key whose inputs state different values, oldest first; the last one is current."""

    key: str
    statements: tuple[Statement, ...]

    @property
    def current(self) -> Statement:
        return self.statements[-1]

    @property
    def superseded(self) -> list[Statement]:
        """The latest statement of each value that is not the current one, oldest first."""
        now = normal_value(self.current.value)
        latest: dict[str, Statement] = {}
        for s in self.statements:
            if normal_value(s.value) != now:
                latest[normal_value(s.value)] = s
        return sorted(latest.values(), key=lambda s: s.when)


def changed_values(statements: Sequence[Statement]) -> list[Change]:
    """The keys stated with more than one value, each with its statements in date order."""
    by_key: dict[str, list[Statement]] = {}
    for s in sorted(statements, key=lambda s: s.when):  # stable: a session's own order is kept
        by_key.setdefault(s.key, []).append(s)
    return [
        Change(key, tuple(found))
        for key, found in sorted(by_key.items())
        if len({normal_value(s.value) for s in found}) > 1
    ]


def _day(when: str) -> str:
    return when[:16].replace("T", " ")


def render_changes(changes: Sequence[Change]) -> str:
    """The block at the head of ``raw_memories.md`` (empty without a change)."""
    if not changes:
        return ""
    lines = [
        "## Changed values (newest is current)\n",
        "Sessions gave different values for the same thing (the same subject key). Each is listed in",
        "the order it was stated (its session's last activity); the last one is CURRENT and the others",
        'are superseded: state only the current value (a former one only marked as such: "was ...").\n',
    ]
    for change in changes:
        steps = [f"{s.value} ({_day(s.when)}, session `{s.session}`)" for s in change.statements[:-1]]
        now = change.current
        steps.append(f"**CURRENT: {now.value}** ({_day(now.when)}, session `{now.session}`)")
        lines.append(f"- `{change.key}`: " + " -> ".join(steps))
    return "\n".join(lines) + "\n"


def _mentions(line: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", line, re.IGNORECASE) is not None


def stated_lines(text: str) -> list[str]:
    """The topic's lines that state something: the body, and the frontmatter's name and description
    (not memd's stamps: ``sources`` holds session ids); a line that does not count is left empty,
    so the line numbers stay the file's."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return lines
    out = [""]
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return out + [""] + lines[i + 1 :]
        out.append(line if line.startswith(STATING_KEYS) else "")
    return lines  # no closing line: all of it is text


def superseded_findings(scope_dir: Path, changes: Sequence[Change], *, max_bytes: int = 1 << 20) -> list[str]:
    """One finding per topic line that states a superseded value as if it were current."""
    if not changes:
        return []
    findings: list[str] = []
    topics = sorted(
        p
        for p in scope_dir.rglob("*.md")
        if p.is_file() and not p.is_symlink() and is_topic_path(p.relative_to(scope_dir).as_posix())
    )
    for path in topics:
        if path.stat().st_size > max_bytes:
            continue  # over every cap: validation names it
        rel = path.relative_to(scope_dir).as_posix()
        lines = stated_lines(path.read_text(encoding="utf-8", errors="replace"))
        for change in changes:
            now = change.current
            beside = any(_mentions(line, now.value) for line in lines)
            words = [w for w in change.key.split("-") if len(w) >= KEY_WORD_MIN_CHARS]
            for old in change.superseded:
                if len(old.value) < VALUE_MIN_CHARS or _mentions(now.value, old.value):
                    continue  # too short to tell, or part of the current value: no line can tell them apart
                for number, line in enumerate(lines, start=1):
                    about = beside or any(_mentions(line, w) for w in words)
                    if about and _mentions(line, old.value) and not FORMER.search(line):
                        findings.append(
                            f"{rel} line {number} states {change.key} as {old.value!r}, superseded by "
                            f"{now.value!r} (session {now.session}, {_day(now.when)}): state the current "
                            "value, or mark the old one as former"
                        )
                        break
    return findings
