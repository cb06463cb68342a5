"""Checking what each extracted memory claims to rest on against the transcript the model was sent.

The model names, per memory, its evidence (``user``, ``agent`` or ``tool``) and a short verbatim
quote. memd reads the rendered transcript back into its turns (``pipeline.extract.turns``: no tool
output can pose as a turn there) and keeps a claim only as far as the quote proves it:

- ``user`` holds when the quote is in one of the user's turns; otherwise it falls to ``agent`` when
  the quote is in the agent's own words or calls, else to ``tool``;
- ``agent`` holds when the quote is in a user or agent turn, else it falls to ``tool``;
- ``tool`` stays ``tool``.

A quote matches when each of its parts (split at ``...`` or ``…``, at least 4 characters each, 8
in all) appears in one turn, ignoring case, spacing and surrounding quotation marks. A quote found nowhere
(empty, paraphrased, or made up) proves nothing: the least trusted source, ``tool``. A re-extraction
sees only the session's new part: a memory carried over with the quote of a memory the previous
extract verified keeps what was verified then (never more than it claims now).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from pipeline.extract.turns import parse_turns
from pipeline.vocabulary import Evidence

_RANK = {Evidence.TOOL: 0, Evidence.AGENT: 1, Evidence.USER: 2}
_SOURCE = {"user": Evidence.USER, "assistant": Evidence.AGENT, "tool": Evidence.AGENT}
_ELLIPSIS = re.compile(r"\.\.\.+|…")
_QUOTES = "\"'`“”‘’«»"
MIN_PART = 4
MIN_QUOTE = 8
_OPEN = "<transcript>\n"
_CLOSE = "\n</transcript>"


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def transcript_of(prompt: str) -> str:
    """The rendered transcript inside the request's ``<transcript>`` fence (content cannot close it:
    ``pipeline.extract.request.defuse``)."""
    start = prompt.find(_OPEN)
    end = prompt.rfind(_CLOSE)
    return prompt[start + len(_OPEN) : end] if 0 <= start < end else ""


class Turns:
    """The user's and the agent's turns of a rendered transcript, normalised for matching, each with
    the source it speaks for (tool output is left out: a quote found only there proves ``tool``, as
    does a quote found nowhere). ``pairs`` is what a batch entry keeps of them (``Prepared``)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.turns = [(Evidence(source), body) for source, body in pairs if source in set(Evidence)]

    @staticmethod
    def of(rendered: str) -> Turns:
        return Turns(
            [
                (_SOURCE[t.kind], _norm(t.body if t.kind != "tool" else t.header + t.body))
                for t in parse_turns(rendered)
                if t.kind in _SOURCE
            ]
        )

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(str(source), body) for source, body in self.turns]

    def found_in(self, quote: str) -> set[Evidence]:
        """The sources whose turns hold every part of ``quote`` (in one turn)."""
        parts = [_norm(p).strip(_QUOTES + " .,;:") for p in _ELLIPSIS.split(quote.strip().strip(_QUOTES))]
        parts = [p for p in parts if p]
        if not parts or any(len(p) < MIN_PART for p in parts) or sum(map(len, parts)) < MIN_QUOTE:
            return set()
        return {source for source, body in self.turns if all(p in body for p in parts)}


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
    before = (previous or {}).get(_norm(quote))
    if before is not None and before in set(Evidence) and _RANK[Evidence(before)] > _RANK[held]:
        held = min(Evidence(before), claim, key=_RANK.__getitem__)
    return held


def previous_evidence(memories: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """Normalised quote -> verified evidence, from a previous extract's stored memories."""
    out: dict[str, str] = {}
    for m in memories:
        quote, evidence = m.get("evidence_quote"), m.get("evidence")
        if isinstance(quote, str) and quote.strip() and isinstance(evidence, str):
            out[_norm(quote)] = evidence
    return out
