"""Ranking topics for a query, or abstaining.

The words first: BM25F over three fields of each topic (its name and file name, its description,
its body; a match in the name counts most), every term stemmed and folded (``terms``), and a query
term also meeting the words it is a close prefix of ("config" and "configuration"), at a discount.
A topic must hold enough of the query to be offered at all. The query's *asking words* go first:
its stop words (``terms``) and the words a question wraps around what it asks ("can you remind me",
"details", "please", "in this project": ``ASKING_WORDS``). Of what is left, the words the memory
holds somewhere weigh their IDF, and a topic's *coverage*, the share of that weight it matches,
must reach ``MIN_COVERAGE``; a word no topic holds weighs nothing there, so a long question is not
sunk by its own wording. But each word asked counts once in ``MIN_MATCHED``: a topic that matches
only one word of a query asking two or more (held by the memory or not) is not offered. So a query
that shares one word with the memory and nothing else ("kubernetes deploy with argo", where only
"deploy" is known) gets an empty list, not the best of bad matches.

Then what memd knows beyond the words, as gentle factors that reorder close matches but never
lift a poor one: the scope (the session's project first, then global), recency (``updated``),
use (how often the topic was read lately, ``pipeline.hits``), and evidence (a topic resting on tool
output only, ``evidence: tool``, ranks under one that matches as well and rests on the user's words
or is unmarked). Superseded topics (``supersede``) are left out before anything is ranked, and another
project's topics are never offered: a session sees its own project's memory and the global one
(``visible``), as everywhere memd publishes memory.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from pipeline.layout import GLOBAL_SCOPE
from pipeline.search.corpus import Topic
from pipeline.search.supersede import superseded
from pipeline.search.terms import terms

FIELDS = ("name", "description", "body")
FIELD_WEIGHT = {"name": 3.0, "description": 2.0, "body": 1.0}
FIELD_B = {"name": 0.3, "description": 0.5, "body": 0.75}
K1 = 1.2
PREFIX_WEIGHT = 0.6
"""How much a close-prefix match counts against an exact one."""
PREFIX_MIN = 4
PREFIX_SLACK = 3
MIN_COVERAGE = 0.5
"""The share of the query's known weight a topic must match to be offered (else the search abstains)."""
MIN_MATCHED = 2
"""The distinct words of the query a topic must match to be offered, when the query asks that many."""
ASKING_WORDS = frozenset(
    terms(
        "explain explanation remind reminder recall remember details detail info information "
        "please thanks thank need needs want wanted wonder wondering help helpful "
        "project projects repo repository codebase here "
        "work works worked working happen happens supposed usually currently actually exactly "
        "again okay hey hi show find look describe description kind sort anyone "
        "approach procedure process guide instructions steps right correct proper properly "
        "whats what's hows how's where's wheres which's"
    )
)
"""Words a question wraps around what it asks: they say nothing of which memory is meant (matched
or not, they neither count for a topic nor against it)."""
SCOPE_FACTOR = {"own": 1.0, "global": 0.85}
TOOL_EVIDENCE_FACTOR = 0.9
"""A topic resting on tool output only, against any other: under one of its scope that matches the words
as well, whatever their days (recency moves a score by at most 10%; only more use can lift it back),
still above a clearly poorer match, and a smaller step than the scopes' (this project 1.0, global 0.85)."""
RECENCY_HALF_LIFE_DAYS = 180.0
RECENCY_SPAN = 0.1
USE_SPAN = 0.1
USE_SATURATION = 20
SNIPPET_MAX_CHARS = 240
SNIPPET_LEAD = 60
"""How much of a long line a snippet shows before its first matching word."""
MAX_QUERY_TERMS = 32


def visible_scopes(own_scope: str | None) -> set[str]:
    """The scopes a session of ``own_scope`` (None: outside any project) may be shown: its project's
    and the global one, never another project's."""
    return {GLOBAL_SCOPE} if own_scope is None else {GLOBAL_SCOPE, own_scope}


def visible(topics: Sequence[Topic], own_scope: str | None) -> list[Topic]:
    """The topics a session of ``own_scope`` may be shown (``visible_scopes``)."""
    mine = visible_scopes(own_scope)
    return [t for t in topics if t.scope in mine]


@dataclass(frozen=True)
class Hit:
    topic: Topic
    score: float
    coverage: float
    snippet: str


class Index:
    """The live topics of a memory (superseded ones left out), indexed for ``search``: each term's
    postings hold, per topic, its BM25F saturation (the IDF is applied at query time)."""

    def __init__(self, topics: Sequence[Topic], *, today: date) -> None:
        self.today = today
        gone = superseded(topics, today)
        self.superseded = frozenset(gone)
        self.topics: list[Topic] = [t for t in topics if t.id not in gone]
        fields: list[dict[str, Counter[str]]] = []
        for topic in self.topics:
            fields.append(
                {
                    "name": Counter(terms(f"{topic.name} {topic.file.removesuffix('.md')}")),
                    "description": Counter(terms(topic.description)),
                    "body": Counter(terms(topic.body)),
                }
            )
        n = max(len(self.topics), 1)
        average = {f: max(sum(sum(d[f].values()) for d in fields) / n, 1.0) for f in FIELDS}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for number, doc in enumerate(fields):
            weighted: dict[str, float] = {}
            for f in FIELDS:
                norm = 1 - FIELD_B[f] + FIELD_B[f] * sum(doc[f].values()) / average[f]
                for term, tf in doc[f].items():
                    weighted[term] = weighted.get(term, 0.0) + FIELD_WEIGHT[f] * tf / norm
            for term, w in weighted.items():
                self.postings.setdefault(term, []).append((number, w / (K1 + w)))
        self.vocabulary = sorted(self.postings)

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1 + (len(self.topics) - df + 0.5) / (df + 0.5))

    def variants(self, term: str) -> dict[str, float]:
        """The indexed terms a query term meets, with how much each counts (1 for itself)."""
        out: dict[str, float] = {term: 1.0} if term in self.postings else {}
        if len(term) < PREFIX_MIN or not term.isalpha():
            return out
        at = bisect.bisect_left(self.vocabulary, term)
        while at < len(self.vocabulary) and self.vocabulary[at].startswith(term):
            longer = self.vocabulary[at]
            if 0 < len(longer) - len(term) <= PREFIX_SLACK:
                out.setdefault(longer, PREFIX_WEIGHT)
            at += 1
        for cut in range(max(PREFIX_MIN, len(term) - PREFIX_SLACK), len(term)):
            if term[:cut] in self.postings:
                out.setdefault(term[:cut], PREFIX_WEIGHT)
        return out

    def search(
        self,
        query: str,
        *,
        own_scope: str | None,
        scopes: Collection[str] | None = None,
        limit: int = 5,
        uses: Mapping[str, int] | None = None,
    ) -> list[Hit]:
        """The best ``limit`` topics for ``query`` among ``scopes`` (None: both) of those ``own_scope``
        (the session's project) may see, its own first; empty when none holds enough of the query."""
        allowed = visible_scopes(own_scope)
        if scopes is not None:
            allowed.intersection_update(scopes)
        asked = list(dict.fromkeys(terms(query)))
        wanted = ([q for q in asked if q not in ASKING_WORDS] or asked)[:MAX_QUERY_TERMS]
        if not wanted or not self.topics or limit <= 0:
            return []
        meets = {q: self.variants(q) for q in wanted}
        weight = {q: max((self.idf(t) for t in meets[q]), default=0.0) for q in wanted}
        total = sum(weight.values())
        if total <= 0:
            return []
        needed = min(MIN_MATCHED, len(wanted))
        words: dict[int, float] = {}
        matched: dict[int, float] = {}
        count: dict[int, int] = {}
        for q in wanted:
            best: dict[int, tuple[float, float]] = {}
            for term, share in meets[q].items():
                idf = self.idf(term)
                for number, saturation in self.postings[term]:
                    value = share * idf * saturation
                    old = best.get(number)
                    if old is None:
                        best[number] = (value, share)
                    elif value > old[0] or share > old[1]:
                        best[number] = (max(value, old[0]), max(share, old[1]))
            for number, (value, share) in best.items():
                words[number] = words.get(number, 0.0) + value
                matched[number] = matched.get(number, 0.0) + weight[q] * share
                count[number] = count.get(number, 0) + 1
        scored: list[tuple[float, float, Topic]] = []
        for number, value in words.items():
            covered = matched[number] / total
            topic = self.topics[number]
            if covered < MIN_COVERAGE or count[number] < needed or topic.scope not in allowed:
                continue
            scored.append((value * self._prior(topic, own_scope, uses or {}), covered, topic))
        top = heapq.nsmallest(
            limit, scored, key=lambda s: (-s[0], -(s[2].day or date.min).toordinal(), s[2].id)
        )
        return [Hit(t, round(rank, 4), round(part, 3), snippet(t, wanted)) for rank, part, t in top]

    def _prior(self, topic: Topic, own_scope: str | None, uses: Mapping[str, int]) -> float:
        scope = SCOPE_FACTOR["own" if topic.scope == own_scope else "global"]
        recency = 1.0 - RECENCY_SPAN
        if topic.day is not None:
            age = max((self.today - topic.day).days, 0)
            recency += RECENCY_SPAN * 0.5 ** (age / RECENCY_HALF_LIFE_DAYS)
        used = uses.get(topic.id, 0)
        use = 1.0 + USE_SPAN * min(1.0, math.log1p(used) / math.log1p(USE_SATURATION))
        evidence = TOOL_EVIDENCE_FACTOR if topic.from_tools else 1.0
        return scope * recency * use * evidence


_LINE = re.compile(r"[^\n]+")


def snippet(topic: Topic, wanted: Sequence[str]) -> str:
    """The body line holding most of the query's terms (the description when none does), cut to
    ``SNIPPET_MAX_CHARS`` around it."""
    want = set(wanted)
    best, best_count = "", 0
    for match in _LINE.finditer(topic.body):
        line = match.group(0).strip()
        if not line or line.startswith("---"):
            continue
        count = len(want.intersection(terms(line)))
        if count > best_count:
            best, best_count = line, count
    text = best if best_count else (topic.description or topic.body.strip())
    text = " ".join(text.split())
    if len(text) <= SNIPPET_MAX_CHARS:
        return text
    start = 0
    if best_count:  # a long line: the window starts a little before its first matching word
        first = next((m.start() for m in _TOKEN.finditer(text) if want.intersection(terms(m.group(0)))), 0)
        start = max(0, min(first - SNIPPET_LEAD, len(text) - SNIPPET_MAX_CHARS + 1))
    head = "…" if start else ""
    room = SNIPPET_MAX_CHARS - len(head) - 1
    return head + text[start : start + room].rstrip() + "…"


_TOKEN = re.compile(r"\S+")
