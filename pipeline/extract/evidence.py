"""Checking what each extracted memory claims to rest on against the transcript the model was sent.

The model names, per memory, its evidence (``user``, ``agent`` or ``tool``) and a short verbatim
quote. memd reads the rendered transcript back into its turns (``pipeline.extract.turns``: no tool
output can pose as a turn there) and keeps a claim only as far as the quote proves it:

- ``user`` holds when the quote is in one of the user's turns; otherwise it falls to ``agent`` when
  the quote is in the agent's own words or calls, else to ``tool``;
- ``agent`` holds when the quote is in a user or agent turn, else it falls to ``tool``;
- ``tool`` stays ``tool``.

A quote matches a turn when every run of three words of it (words compared without case or
punctuation; parts split at ``...`` or ``…`` are checked alone) occurs in that one turn; a quote of
fewer than three words proves nothing. A quote found nowhere (empty, paraphrased, or made up)
proves nothing either: the least trusted source, ``tool``. A re-extraction sees only the session's
new part: a memory carried over with the quote of a memory the previous extract verified keeps
what was verified then (never more than it claims now).

What the check keeps of the turns is only a hash of each run of three words, never their text: a
batch entry carries it in the state store until its result arrives (``Prepared.evidence_turns``),
and the redacted transcript stays out of the store.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

from pipeline.extract.turns import parse_turns
from pipeline.vocabulary import Evidence

_RANK = {Evidence.TOOL: 0, Evidence.AGENT: 1, Evidence.USER: 2}
_SOURCE = {"user": Evidence.USER, "assistant": Evidence.AGENT, "tool": Evidence.AGENT}
_ELLIPSIS = re.compile(r"\.\.\.+|…")
_WORD = re.compile(r"\w+")
SHINGLE = 3
_OPEN = "<transcript>\n"
_CLOSE = "\n</transcript>"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _shingles(words: list[str]) -> set[str]:
    runs = (" ".join(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1))
    return {hashlib.sha256(run.encode()).hexdigest()[:12] for run in runs}


def _key(quote: str) -> str:
    return " ".join(_words(quote))


def transcript_of(prompt: str) -> str:
    """The rendered transcript inside the request's ``<transcript>`` fence (content cannot close it:
    ``pipeline.extract.request.defuse``)."""
    start = prompt.find(_OPEN)
    end = prompt.rfind(_CLOSE)
    return prompt[start + len(_OPEN) : end] if 0 <= start < end else ""


class Turns:
    """The user's and the agent's turns of a rendered transcript, each as the hashes of its runs of
    words with the source it speaks for (tool output is left out: a quote found only there proves
    ``tool``, as does a quote found nowhere). ``pairs`` is what a batch entry keeps (``Prepared``)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.turns = [
            (Evidence(source), set(hashes.split())) for source, hashes in pairs if source in set(Evidence)
        ]

    @staticmethod
    def of(rendered: str) -> Turns:
        pairs = []
        for t in parse_turns(rendered):
            if t.kind in _SOURCE:
                text = t.body if t.kind != "tool" else t.header
                pairs.append((str(_SOURCE[t.kind]), " ".join(sorted(_shingles(_words(text))))))
        return Turns(pairs)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(str(source), " ".join(sorted(hashes))) for source, hashes in self.turns]

    def found_in(self, quote: str) -> set[Evidence]:
        """The sources of the turns that hold every part of ``quote`` (each part in one turn)."""
        parts = [_words(p) for p in _ELLIPSIS.split(quote)]
        wanted = [_shingles(w) for w in parts if len(w) >= SHINGLE]
        if not wanted:
            return set()
        return {source for source, hashes in self.turns if all(w <= hashes for w in wanted)}


def verified(claimed: str, quote: str, turns: Turns, previous: Mapping[str, str] | None = None) -> Evidence:
    """What ``claimed`` evidence holds given where ``quote`` is (see the module docstring)."""
    claim = Evidence(claimed) if claimed in set(Evidence) else Evidence.TOOL
    if claim == Evidence.TOOL:
        return Evidence.TOOL
    found = turns.found_in(quote)
    held = Evidence.TOOL
    if claim == Evidence.USER and Evidence.USER in found:
        held = Evidence.USER
    elif found & {Evidence.USER, Evidence.AGENT}:
        held = Evidence.AGENT
    before = (previous or {}).get(_key(quote))
    if before is not None and before in set(Evidence) and _RANK[Evidence(before)] > _RANK[held]:
        held = min(Evidence(before), claim, key=_RANK.__getitem__)
    return held


def previous_evidence(memories: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """Normalised quote -> verified evidence, from a previous extract's stored memories."""
    out: dict[str, str] = {}
    for m in memories:
        quote, evidence = m.get("evidence_quote"), m.get("evidence")
        if isinstance(quote, str) and quote.strip() and isinstance(evidence, str):
            out[_key(quote)] = evidence
    return out
