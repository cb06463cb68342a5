"""The redaction vocabulary: rules, candidate spans, findings and results. No values are ever kept."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pipeline.redaction.filters import enough_distinct
from pipeline.redaction.placeholders import is_documented_example, is_placeholder_value
from pipeline.redaction.reasons import Reason

# Priorities decide the name of a merged span when two rules overlap: the most specific rule wins.
PROVIDER = 30
STRUCTURE = 20
CONTEXT = 15
GENERIC = 10

Candidate = tuple[int, int, str, int]
"""(start, end, rule name, priority) in byte offsets of the UTF-8 text. A candidate the rule keeps
in clear carries ``-Reason`` as its priority (see ``kept``), so reports can say why, never what."""


def kept(s: int, e: int, name: str, reason: Reason) -> Candidate:
    """A candidate considered and kept in clear, with its reason."""
    return (s, e, name, -reason)


class Rule(Protocol):
    """Something that, told where one of its anchors sits, adds the secret spans it finds there."""

    @property
    def name(self) -> str: ...

    @property
    def anchors(self) -> tuple[bytes, ...]: ...

    def collect(self, buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
        """Add candidates to ``out``; return the offset up to which this rule has looked (later
        hits of the same rule before it are skipped), or 0."""
        ...


@dataclass(frozen=True)
class RegexRule:
    """A compiled pattern tried at each anchor hit (anchors are lower-case literals found in the
    lower-cased text). ``back`` bytes before the anchor may belong to the match; with ``back == 0``
    the match must start at the anchor. ``group`` is the secret inside the match. The secret after
    its first ``skip`` characters (the constant prefix) must not be a placeholder as a whole
    (``xxxx...``, ``your-token-here``); a word inside a random body does not count. Rules with no
    fixed prefix to vouch for the shape also set ``min_distinct``: that many different characters
    (or half the length)."""

    name: str
    anchors: tuple[bytes, ...]
    pattern: re.Pattern[bytes]
    back: int = 0
    fwd: int = 8192
    group: int | str = 0
    check: Callable[[re.Match[bytes]], bool] | None = None
    namer: Callable[[re.Match[bytes]], str] | None = None
    priority: int = PROVIDER
    skip: int = 0
    min_distinct: int = 0
    whole_value_check: bool = True  # structures (PEM blocks, JWTs) have their own checks

    def collect(self, buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
        if self.back == 0:
            m = self.pattern.match(buf, start)
            if m is None:
                return 0
        else:
            for m in self.pattern.finditer(buf, max(0, start - self.back), min(len(buf), end + self.fwd)):
                if m.start() <= start and m.end() >= end:
                    break
                if m.start() > start:
                    return 0
            else:
                return 0
        s, e = m.span(self.group)
        if s >= e:
            return m.end()
        body = buf[s + self.skip : e] if self.whole_value_check or self.min_distinct else b""
        if self.min_distinct and not enough_distinct(body, min(self.min_distinct, len(body) // 2)):
            out.append((s, e, self.name, -Reason.NOT_RANDOM))
        elif self.whole_value_check and (is_placeholder_value(body) or is_documented_example(buf[s:e])):
            out.append((s, e, self.name, -Reason.PLACEHOLDER))
        elif self.check is None or self.check(m):
            out.append((s, e, self.namer(m) if self.namer else self.name, self.priority))
        else:
            out.append((s, e, self.name, -Reason.SHAPE))
        return m.end()

    def scanner(self) -> Scan:
        """``collect`` with the rule's fields bound once (the engine calls it at every anchor hit)."""
        if self.back:
            return self.collect
        match, group, name, namer, check = self.pattern.match, self.group, self.name, self.namer, self.check
        priority, skip, min_distinct, whole = (
            self.priority,
            self.skip,
            self.min_distinct,
            self.whole_value_check,
        )
        not_random, placeholder, shape = -Reason.NOT_RANDOM, -Reason.PLACEHOLDER, -Reason.SHAPE

        def scan(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
            m = match(buf, start)
            if m is None:
                return 0
            s, e = m.span(group)
            if s >= e:
                return m.end()
            body = buf[s + skip : e] if whole or min_distinct else b""
            if min_distinct and not enough_distinct(body, min(min_distinct, len(body) // 2)):
                out.append((s, e, name, not_random))
            elif whole and (is_placeholder_value(body) or is_documented_example(buf[s:e])):
                out.append((s, e, name, placeholder))
            elif check is None or check(m):
                out.append((s, e, namer(m) if namer else name, priority))
            else:
                out.append((s, e, name, shape))
            return m.end()

        return scan


Scan = Callable[[bytes, bytes, int, int, list[Candidate]], int]
"""(text, lower-cased text, anchor start, anchor end, output) -> adds candidates to the output and
returns how far it looked (see ``Rule.collect``)."""


@dataclass(frozen=True)
class ScanRule:
    """A rule whose logic does not fit one pattern (assignments, command lines, YAML blocks)."""

    name: str
    anchors: tuple[bytes, ...]
    scan: Scan

    def collect(self, buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
        return self.scan(buf, low, start, end, out)


Sweep = Callable[[bytes, list[Candidate]], None]


@dataclass(frozen=True)
class SweepRule:
    """A rule with no literal to anchor it (a token known only by its shape): ``sweep`` looks over
    the whole text once per scan, with its own fast search, and adds what it finds."""

    name: str
    sweep: Sweep
    anchors: tuple[bytes, ...] = ()

    def collect(self, buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
        return 0  # never anchored


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret found: the rule and where it is (character offsets). Never the value."""

    rule: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.rule} at {self.start}..{self.end}"


@dataclass(frozen=True, slots=True)
class Kept:
    """A candidate a rule considered and kept in clear: rule, character span, reason. Never the value."""

    rule: str
    start: int
    end: int
    reason: Reason


@dataclass(frozen=True)
class RedactionResult:
    """The redacted text and how many secrets each rule replaced."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class RedactionReport:
    """``memd redact --report``: the result, how many candidates each rule found, and each candidate
    kept in clear with its reason (positions only, never values)."""

    result: RedactionResult
    found: dict[str, int]
    kept: list[Kept]
