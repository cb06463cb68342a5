"""How well `memd mcp`'s `memory_search` finds the right memory: an offline recall evaluation.

    .venv/bin/python benchmarks/search_eval_bench.py [--repeat 1] [--show-misses]

The fixture (``benchmarks/data/search_eval/``) is a memory of four projects and the global scope
(``memory/``) and labelled queries (``queries.json``), each asked from one project's session, made
hard the way users' queries are: questions in whole, chatty sentences ("can you remind me how we
...", "I need the details on ... please"), inflected forms ("migrating" for a topic about
migrations), code identifiers in another style (``maxActiveRuns`` for ``max_active_runs``), accents
and case, near-duplicate topics and older variants of a newer one (the older must never be offered),
a project topic against a global one, no-answer queries that share a word with the memory, and
isolation queries whose only answer is in another project (a session never sees another project's
memory: they must get an empty list, and count with the no-answer queries).

Figures, for memd's search (``pipeline.search``) beside a plain BM25 (lower-cased words, no
stemming, no priors, no abstention) run on the same fixture in the same run; both search only what
the session may see (its project's topics and the global ones, ``pipeline.search.rank.visible``), so
they differ in ranking alone:

- Recall@5: answerable queries with an expected topic in the first five results;
- top-1: answerable queries whose first result is an expected topic;
- superseded offered: results naming an older variant the query lists as replaced;
- no-result precision: of the queries answered with an empty list, the share that had no answer;
- no-result recall: of the queries with no answer (isolation queries included), the share answered
  with an empty list;
- other project leaked: results naming another project's topic (must be 0).

Targets (the issue's): Recall@5 >= 0.95, top-1 >= 0.90, no-result precision 1.0, nothing leaked.
Exits 1 when one is missed. ``tests/pipeline/search/test_recall_frozen.py`` keeps the figures from
falling.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.layout import GLOBAL_SCOPE
from pipeline.search.corpus import Corpus, Topic
from pipeline.search.rank import Index, visible

DATA = Path(__file__).resolve().parent / "data" / "search_eval"
TARGETS = {"recall_at_5": 0.95, "top_1": 0.90, "no_result_precision": 1.0}
K = 5

Search = Callable[[str, str], list[str]]
"""(query, the session's own scope) -> the ids returned, best first."""


@dataclass(frozen=True)
class Figures:
    recall_at_5: float
    top_1: float
    no_result_precision: float
    no_result_recall: float
    superseded_offered: int
    leaked: int
    """Results naming another project's topic."""
    misses: tuple[str, ...]

    def row(self) -> list[str]:
        return [
            f"{self.recall_at_5:.3f}",
            f"{self.top_1:.3f}",
            f"{self.no_result_precision:.3f}",
            f"{self.no_result_recall:.3f}",
            str(self.superseded_offered),
            str(self.leaked),
        ]


def load(data: Path = DATA) -> tuple[list[Topic], list[dict[str, object]], date]:
    spec = json.loads((data / "queries.json").read_text(encoding="utf-8"))
    topics = Corpus(data / "memory").topics()
    return topics, list(spec["queries"]), date.fromisoformat(spec["today"])


def evaluate(search: Search, queries: Sequence[dict[str, object]]) -> Figures:
    answerable = hit5 = top1 = empty = empty_right = no_answer = superseded = leaked = 0
    misses: list[str] = []
    for q in queries:
        query, own = str(q["query"]), str(q["own"])
        expect, forbid = set(q["expect"]), set(q["forbid"])  # type: ignore[call-overload]
        got = search(query, own)[:K]
        superseded += len(forbid.intersection(got))
        leaked += sum(1 for i in got if not i.startswith((f"{own}/", f"{GLOBAL_SCOPE}/")))
        if not got:
            empty += 1
            empty_right += not expect
        if not expect:
            no_answer += 1
            if got:
                misses.append(f"[{q['kind']}] {query!r}: expected nothing, got {got[:2]}")
            continue
        answerable += 1
        hit5 += bool(expect.intersection(got))
        top1 += bool(got) and got[0] in expect
        if not got or got[0] not in expect:
            misses.append(f"[{q['kind']}] {query!r}: expected {sorted(expect)}, got {got[:3]}")
    return Figures(
        recall_at_5=hit5 / answerable if answerable else 1.0,
        top_1=top1 / answerable if answerable else 1.0,
        no_result_precision=empty_right / empty if empty else 1.0,
        no_result_recall=empty_right / no_answer if no_answer else 1.0,
        superseded_offered=superseded,
        leaked=leaked,
        misses=tuple(misses),
    )


def _scopes(topics: Sequence[Topic]) -> set[str]:
    return {t.scope for t in topics} | {GLOBAL_SCOPE}


def memd_search(topics: Sequence[Topic], today: date) -> Search:
    """memd's search as `memd mcp` runs it: an index of what each session may see."""
    indexes = {own: Index(visible(topics, own), today=today) for own in _scopes(topics)}
    return lambda query, own: [h.topic.id for h in indexes[own].search(query, own_scope=own, limit=K)]


_WORD = re.compile(r"\w+")


def plain_bm25(topics: Sequence[Topic], *, k1: float = 1.2, b: float = 0.75) -> Search:
    """Okapi BM25 as a search box without memd's knowledge would run it, over what each session
    may see."""
    boxes = {own: _bm25(visible(topics, own), k1=k1, b=b) for own in _scopes(topics)}
    return lambda query, own: boxes[own](query)


def _bm25(topics: Sequence[Topic], *, k1: float, b: float) -> Callable[[str], list[str]]:
    docs = [Counter(_WORD.findall(f"{t.name} {t.description} {t.body}".lower())) for t in topics]
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / max(len(docs), 1)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs)

    def search(query: str) -> list[str]:
        words = set(_WORD.findall(query.lower()))
        scored = []
        for topic, d, length in zip(topics, docs, lengths, strict=True):
            score = 0.0
            for w in words:
                tf = d.get(w, 0)
                if tf:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
            if score > 0:
                scored.append((score, topic.id))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [i for _, i in scored[:K]]

    return search


def run(data: Path = DATA) -> dict[str, Figures]:
    topics, queries, today = load(data)
    return {
        "memd": evaluate(memd_search(topics, today), queries),
        "plain BM25": evaluate(plain_bm25(topics), queries),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args(argv)
    topics, queries, today = load(args.data)
    kinds = Counter(str(q["kind"]) for q in queries)
    print(
        f"fixture: {len(topics)} topics, {len(queries)} queries ({', '.join(f'{k} {n}' for k, n in kinds.items())})"
    )
    started = time.perf_counter()
    figures = run(args.data)
    elapsed = time.perf_counter() - started
    header = [
        "",
        "Recall@5",
        "top-1",
        "no-result precision",
        "no-result recall",
        "superseded offered",
        "other project leaked",
    ]
    print(" | ".join(header))
    for name, f in figures.items():
        print(" | ".join([name, *f.row()]))
    print(
        f"targets: Recall@5 >= {TARGETS['recall_at_5']}, top-1 >= {TARGETS['top_1']}, "
        "no-result precision = 1.0, other project leaked = 0"
    )
    print(f"(both evaluated in {elapsed * 1000:.0f} ms)")
    memd = figures["memd"]
    if args.show_misses:
        for name, f in figures.items():
            for miss in f.misses:
                print(f"{name} miss: {miss}")
    ok = all(getattr(memd, key) >= target for key, target in TARGETS.items()) and memd.leaked == 0
    print("verdict:", "targets met" if ok else "targets MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
