"""Which topics a newer one replaces, so a search never offers the older variant.

A topic is superseded when its ``expires`` day has passed, or when a newer topic of the same scope
is a near-duplicate of it: their names (and file names) share most of their terms (version words
such as ``v2``, ``old`` or a year left out) and their texts
most of their weight (cosine of term counts). The newer one is the one with the later ``updated``
(else ``created``); two undated or same-day twins both stay. Forgotten topics need no rule here:
forgetting withdraws them from the working tree (``pipeline.search.corpus``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from datetime import date

from pipeline.search.corpus import Topic
from pipeline.search.terms import terms

NAME_OVERLAP = 0.6
"""How alike the two names must be: the terms they share over the terms of either (Jaccard), so a
general topic ("Database") and a narrower one ("Database migrations") are not twins."""
TEXT_COSINE = 0.55
"""How alike the two texts must be (cosine of their term counts)."""
_VERSION_WORDS = re.compile(r"^(?:v?\d+|new|old|older|newer|latest|updated|current|draft|copy|final|legacy)$")


def name_terms(topic: Topic) -> frozenset[str]:
    """The terms of a topic's name and file name, without version words (``v2``, ``new``, ``2024``)."""
    words = terms(_SEPARATORS.sub(" ", f"{topic.name} {topic.file.removesuffix('.md')}"))
    return frozenset(w for w in words if not _VERSION_WORDS.match(w))


_SEPARATORS = re.compile(r"[-_.]+")
"""Split here, an identifier counts by its words only (``deploy-old`` is "deploy" and "old")."""


def text_vector(topic: Topic) -> Counter[str]:
    return Counter(terms(f"{topic.name} {topic.description} {topic.description} {topic.body}"))


def cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(n * b[t] for t, n in a.items() if t in b)
    return dot / math.sqrt(sum(n * n for n in a.values()) * sum(n * n for n in b.values()))


def superseded(topics: Sequence[Topic], today: date) -> set[str]:
    """The ids of ``topics`` that are expired or replaced by a newer near-duplicate in their scope."""
    out = {t.id for t in topics if t.expired(today)}
    by_scope: dict[str, list[Topic]] = {}
    for topic in topics:
        if topic.id not in out:
            by_scope.setdefault(topic.scope, []).append(topic)
    for group in by_scope.values():
        if len(group) < 2:
            continue
        names = {t.id: name_terms(t) for t in group}
        vectors: dict[str, Counter[str]] = {}
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                older, newer = _older_newer(a, b)
                if older is None or newer is None:
                    continue
                na, nb = names[a.id], names[b.id]
                if not na or not nb or len(na & nb) / len(na | nb) < NAME_OVERLAP:
                    continue
                va = vectors.setdefault(a.id, text_vector(a))
                vb = vectors.setdefault(b.id, text_vector(b))
                if cosine(va, vb) >= TEXT_COSINE:
                    out.add(older.id)
    return out


def _older_newer(a: Topic, b: Topic) -> tuple[Topic | None, Topic | None]:
    da, db = a.day, b.day
    if da is None or db is None or da == db:
        return None, None
    return (a, b) if da < db else (b, a)
