"""A topic that restates what a tool returned must say so: checked in code after phase 2.

A run whose new inputs rest on tool output only has every topic it wrote stamped ``evidence: tool``
(``pipeline.checks.provenance``). A run whose inputs mix the user's words and tool output leaves the
marking to the model; this check holds it to it. For each topic the run wrote that is not marked
``evidence: tool``, memd compares it with each tool-only memory of the run's new inputs (the lines
under ``TOOL_ONLY_NOTE`` in their raw notes); the topic restates the memory (``restates``) when

- it contains ``RESTATED`` (0.5) or more of the memory's word 3-grams (lower case, punctuation
  dropped; a memory of fewer than ``MIN_WORDS`` words is too short to tell by this measure), or
- it carries ``CARRIED`` (2) or more of the memory's distinctive tokens that nothing else explains:
  tokens shaped like code (``distinctive``: hosts, file names, flags, identifiers, versions and
  numbers, split at ``/ : @ = ?`` and the like, so a URL gives its host and its file apart;
  slash-joined plain words such as ``tests/integration`` count whole) found in no input of the run
  resting on the user's or the agent's words (their memories' text, ``InputRecord.told``) and not
  in the topic's previous version (unless that version was itself marked ``evidence: tool``). A
  paraphrase keeps a fact's names while every 3-gram changes; one shared token (``README.md``), a
  plain word (``curl``) or a product's name (``GitHub``) is no sign.

Both measures read the topic's name, description and body.

A restatement goes back to the model for its repair turn: mark the topic, or move that fact into one
that is marked. Over-marking is the safe side; ``benchmarks/tool_marks_bench.py`` measures both.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from pipeline.checks.provenance import TopicSnapshot
from pipeline.layout import is_topic_path
from pipeline.memory import frontmatter
from pipeline.memory.inputs import TOOL_ONLY_NOTE
from pipeline.memory.listing import list_scope

RESTATED = 0.5
MIN_WORDS = 6
CARRIED = 2
"""How many of a tool-only memory's distinctive tokens, explained by nothing else, make a topic
carrying them a restatement of it."""
MIN_TOKEN_CHARS = 4
"""A distinctive token is at least this long (``e.g`` and ``-n`` are not; ``x.sh`` and ``3.11`` are)."""
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SPLIT = re.compile(r"[^\w.\-]+", re.UNICODE)
"""Anything but word characters, dots and hyphens joins tokens: ``https://evil.example/x.sh`` is
``https``, ``evil.example`` and ``x.sh``."""
_EDGES = "\"'`()[]{}<>,;:!?*"
_CODE_CASE = re.compile(r"^[a-z]+[A-Z]|[a-z][A-Z].*[a-z][A-Z]")
"""camelCase (``initClient``, ``macOS``), or a capital after a lower-case letter twice
(``HttpClientFactory``): a product's name (``GitHub``, ``PostgreSQL``) is not."""
_PATH = re.compile(r"[\w.\-]+(?:/[\w.\-]+)+")
_SHAPED = re.compile(r"[._\-\d]")


def tool_memories(raw_memories: Iterable[str]) -> list[tuple[str, str]]:
    """``(name, body)`` of each memory listed under ``TOOL_ONLY_NOTE`` in the raw notes given."""
    out: list[tuple[str, str]] = []
    for raw in raw_memories:
        _, found, tail = raw.partition(TOOL_ONLY_NOTE)
        if not found:
            continue
        for line in tail.splitlines():
            if not line.startswith("- "):
                if line.strip():
                    break
                continue
            name, _, body = line[2:].partition(": ")
            out.append((name.strip(), body.strip()))
    return out


def _grams(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def restated(memory: str, body: str) -> float:
    """The share of ``memory``'s word 3-grams found in ``body`` (0 when it has fewer than ``MIN_WORDS`` words)."""
    if len(_WORD.findall(memory)) < MIN_WORDS:
        return 0.0
    grams = _grams(memory)
    return len(grams & _grams(body)) / len(grams) if grams else 0.0


def _atoms(text: str) -> list[str]:
    return [a for a in (piece.rstrip(".").strip("-") for piece in _SPLIT.split(text)) if a]


def _paths(text: str) -> list[str]:
    """The slash-joined words of ``text`` (``tests/integration``), whole."""
    stripped = (chunk.strip(_EDGES + "/.") for chunk in text.split())
    return [chunk for chunk in stripped if _PATH.fullmatch(chunk)]


def _shaped(atom: str) -> bool:
    return len(atom) >= MIN_TOKEN_CHARS and bool(_SHAPED.search(atom) or _CODE_CASE.search(atom))


def tokens(text: str) -> set[str]:
    """Every token of ``text`` (its parts as ``distinctive`` splits them, and slash-joined words
    whole), case folded."""
    return {a.casefold() for a in _atoms(text) + _paths(text)}


def distinctive(text: str) -> set[str]:
    """The tokens of ``text`` shaped like code, case folded: at least ``MIN_TOKEN_CHARS`` long and
    holding a dot, an underscore, a hyphen or a digit, or in code's case (``_CODE_CASE``):
    ``evil.example``, ``x.sh``, ``memd_app``, ``pre-commit``, ``3.11``, ``fooBar``. Slash-joined
    words none of whose parts is so shaped count whole (``tests/integration``)."""
    found = {a.casefold() for a in _atoms(text) if _shaped(a)}
    for path in _paths(text):
        if len(path) >= MIN_TOKEN_CHARS and not any(_shaped(a) for a in _atoms(path)):
            found.add(path.casefold())
    return found


def carried(memory: str, body: str, known: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The distinctive tokens of ``memory`` that ``body`` carries, those in ``known`` aside."""
    return (distinctive(memory) - known) & tokens(body)


def restates(memory: str, body: str, known: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether ``body`` restates ``memory`` (the module's rule); ``known``: tokens the run's other
    words explain."""
    return restated(memory, body) >= RESTATED or len(carried(memory, body, known)) >= CARRIED


def _text(topic: frontmatter.TopicFile) -> str:
    return f"{topic.meta.name}\n{topic.meta.description}\n{topic.body}"


def unmarked_findings(
    scope_dir: Path,
    before: dict[str, TopicSnapshot],
    memories: list[tuple[str, str]],
    *,
    told: Iterable[str] = (),
    renames: Mapping[str, str] | None = None,
) -> list[str]:
    """A sentence for each topic the run wrote that restates a tool-only memory without ``evidence: tool``.

    ``told``: the text of the run's inputs resting on the user's or the agent's words; ``renames``
    maps a topic to the path it was renamed from in this run (its previous version's)."""
    if not memories:
        return []
    said = set().union(*(tokens(t) for t in told))
    renames = renames or {}
    out: list[str] = []
    for rel in list_scope(scope_dir).files:
        if not is_topic_path(rel):
            continue
        data = (scope_dir / rel).read_bytes()
        if rel in before and hashlib.sha256(data).hexdigest() == before[rel].sha256:
            continue  # not written by this run
        try:
            topic = frontmatter.parse(data.decode("utf-8"))
        except (frontmatter.FrontmatterError, UnicodeDecodeError):
            continue  # validation reports it
        if topic.meta.from_tools:
            continue
        known = said | _previous_tokens(before[rel] if rel in before else before.get(renames.get(rel, "")))
        text = _text(topic)
        for name, body in memories:
            if restates(body, text, known):
                out.append(
                    f"{rel} restates {name or 'a memory'!r}, which rests on tool output only: mark the topic "
                    "`evidence: tool`, or move that fact into a topic so marked"
                )
                break
    return out


def _previous_tokens(previous: TopicSnapshot | None) -> set[str]:
    """The tokens of a topic's previous version, none when it was marked ``evidence: tool``."""
    if previous is None or previous.meta is None or previous.meta.from_tools:
        return set()
    return tokens(previous.text)
