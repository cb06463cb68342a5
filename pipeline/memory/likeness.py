"""Whether a topic is a forgotten memory come back: the same file, or the same content in other words.

A forgotten topic is kept as a ``ForgottenTopic``: its file, its name and description (what phase 2
is told not to write again) and the shingles of its body, never the body itself. A shingle is a
run of ``SHINGLE_WORDS`` consecutive words of the normalised body (case folded, every character
that is not a letter or a digit a space), hashed to 64 bits. Two bodies are alike when their
overlap, ``|A ∩ B| / min(|A|, |B|)``, is at least ``LIKENESS_THRESHOLD``: a recreated topic that
holds most of the forgotten text (or is most of it) is caught whatever its file name or the text
around it. A body too short for ``MIN_SHINGLES`` shingles is compared as a whole (normalised).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pipeline.frozen import frozen_by_position

SHINGLE_WORDS = 3
LIKENESS_THRESHOLD = 0.5
MIN_SHINGLES = 3
_NOT_WORD = re.compile(r"[^\w]+|_+")


def words(text: str) -> list[str]:
    """The body's words, case folded, punctuation and Markdown marks dropped."""
    return _NOT_WORD.sub(" ", text.casefold()).split()


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def shingles(text: str) -> frozenset[int]:
    """The hashed word shingles of ``text``; a text shorter than ``MIN_SHINGLES`` shingles gives one
    hash of its whole normalised text."""
    w = words(text)
    if len(w) < SHINGLE_WORDS + MIN_SHINGLES - 1:
        return frozenset({_hash(" ".join(w))}) if w else frozenset()
    return frozenset(_hash(" ".join(w[i : i + SHINGLE_WORDS])) for i in range(len(w) - SHINGLE_WORDS + 1))


def overlap(a: frozenset[int], b: frozenset[int]) -> float:
    """``|a ∩ b| / min(|a|, |b|)``: 0.0 when either is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def alike(a: frozenset[int], b: frozenset[int]) -> bool:
    return overlap(a, b) >= LIKENESS_THRESHOLD


@frozen_by_position
class ForgottenTopic:
    """A topic the person forgot (``memd memories forget``): it must not come back to its scope."""

    scope: str
    file: str
    name: str
    description: str
    shingles: frozenset[int]
    forgotten_at: str
    """ISO date-time of the forget."""

    @property
    def id(self) -> str:
        return f"{self.scope}/{self.file}"

    def as_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "file": self.file,
            "name": self.name,
            "description": self.description,
            "shingles": sorted(self.shingles),
            "forgotten_at": self.forgotten_at,
        }

    @classmethod
    def from_json(cls, value: Any) -> ForgottenTopic | None:
        """The record, or None when ``value`` is not one (a hand-edited store)."""
        if not isinstance(value, dict):
            return None
        try:
            return cls(
                scope=str(value["scope"]),
                file=str(value["file"]),
                name=str(value.get("name", "")),
                description=str(value.get("description", "")),
                shingles=frozenset(int(h) for h in value.get("shingles", [])),
                forgotten_at=str(value.get("forgotten_at", "")),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def recreated_by(self, file: str, body: str) -> str | None:
        """Why the topic ``file`` with ``body`` is this forgotten memory again (None: it is not)."""
        if file == self.file:
            return "the same file"
        share = overlap(shingles(body), self.shingles)
        if share >= LIKENESS_THRESHOLD:
            return f"{share:.0%} of its text is the forgotten text"
        return None
