"""No two topics of a scope say the same thing, and the index lists each topic once: checked in code.

Two topic files are duplicates when

- their names are the same once normalised (case, punctuation and spacing ignored: ``Test
  conventions`` and ``test-conventions!`` are one name), or
- their bodies mostly overlap: the share of the shorter body's word 3-shingles (runs of three
  consecutive words of the normalised text: lower case, only letters and digits) that are also in
  the other body is at least ``OVERLAP_THRESHOLD`` (0.6), and the shorter body has at least
  ``MIN_SHINGLES`` shingles (a two-line note is not judged by overlap).

Containment of the shorter body, not Jaccard: a topic copied into a longer one (the 64-times-written
fact of anthropics/claude-code#79217 pasted into another file) is a duplicate however much the
longer file adds.

Each finding is one sentence naming both files, for the agent's repair turn
(``pipeline.consolidate.agent``); ``count`` says how many of a scope's findings these are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from pipeline.layout import INDEX, is_topic_path
from pipeline.memory import frontmatter
from pipeline.memory.listing import ScopeListing, index_links

OVERLAP_THRESHOLD = 0.6
"""The share of the shorter body's word 3-shingles found in the other body that makes two topics one."""
SHINGLE_WORDS = 3
MIN_SHINGLES = 8
"""Bodies with fewer shingles than this are judged by name only."""
READ_MAX_BYTES = 1_000_000
MARK = "duplicate:"
"""Every finding of this check starts with its file then ``MARK``, so a run can count them."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def normal_words(text: str) -> list[str]:
    """The words of ``text``: lower case, letters and digits only."""
    return _WORD.findall(text.lower())


def normal_name(name: str) -> str:
    return " ".join(normal_words(name))


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    words = normal_words(text)
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def overlap(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """The share of the smaller set found in the other (0 when either is empty)."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if not small:
        return 0.0
    return len(small & large) / len(small)


@dataclass(frozen=True)
class _Topic:
    rel: str
    name: str
    shingles: frozenset[tuple[str, ...]]


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > READ_MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _topics(scope_dir: Path, rels: Iterable[str]) -> list[_Topic]:
    out = []
    for rel in rels:
        text = _read(scope_dir / rel)
        if text is None:
            continue
        parsed = frontmatter.parse(text, strict=False)
        out.append(_Topic(rel, normal_name(parsed.meta.name), shingles(parsed.body)))
    return out


def pair_findings(topics: list[_Topic]) -> list[str]:
    out = []
    for a, b in combinations(sorted(topics, key=lambda t: t.rel), 2):
        if a.name and a.name == b.name:
            out.append(
                f"{a.rel}: {MARK} it has the same name as {b.rel} ({a.name!r}): merge them into one file "
                "and delete the other, with its line in MEMORY.md"
            )
            continue
        if min(len(a.shingles), len(b.shingles)) < MIN_SHINGLES:
            continue
        share = overlap(a.shingles, b.shingles)
        if share >= OVERLAP_THRESHOLD:
            out.append(
                f"{a.rel}: {MARK} {share:.0%} of the shorter of it and {b.rel} is in the other (the cap is "
                f"{OVERLAP_THRESHOLD:.0%}): one fact lives in one place; merge them into one file and delete "
                "the other, with its line in MEMORY.md"
            )
    return out


def index_findings(scope_dir: Path, listing: ScopeListing) -> list[str]:
    """A topic the index links on more than one line."""
    if INDEX not in listing.files:
        return []
    text = _read(scope_dir / INDEX) or ""
    lines: dict[str, list[int]] = {}
    for number, target in index_links(text):
        norm = os.path.normpath(target)
        if number not in lines.setdefault(norm, []):
            lines[norm].append(number)
    return [
        f"{INDEX}: {MARK} {rel} is listed on lines {', '.join(map(str, numbers))}: list each topic once"
        for rel, numbers in sorted(lines.items())
        if len(numbers) > 1
    ]


def check(scope_dir: Path, listing: ScopeListing) -> list[str]:
    """Every duplicate in the scope: topics saying the same thing, a topic listed twice in the index."""
    topics = _topics(scope_dir, (rel for rel in listing.files if is_topic_path(rel)))
    return pair_findings(topics) + index_findings(scope_dir, listing)


def count(findings: Iterable[str]) -> int:
    """How many of ``findings`` are duplicates."""
    return sum(1 for f in findings if f.split(": ", 1)[-1].startswith(MARK))
