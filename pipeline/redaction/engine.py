"""The redaction engine: one Aho-Corasick pass over the lower-cased text finds every anchor of
every rule; each rule then confirms its shape right there. Rules are compiled once per process.
The text is normalised first (``normalise``: no terminal codes or invisible characters split a
secret), and the normalised text is what ``redact`` returns.

Text is handled as UTF-8 bytes (bytes make lower-casing and matching cheap even when the text holds
emoji; a value may hold any Unicode, its span then counts characters, not bytes). Placeholders already in the text (``[REDACTED:rule:tag]``) are
protected: nothing that overlaps one is reported, so redaction is idempotent; so are OpenSSH public
keys (``filters.ssh_key_type``), kept whatever words stand around them.
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import accumulate

import ahocorasick_rs

from pipeline.redaction.filters import Level, Lookalikes, ssh_public_key_spans, value_verdict
from pipeline.redaction.key import Tagger
from pipeline.redaction.model import (
    GENERIC,
    Candidate,
    Finding,
    Kept,
    RedactionReport,
    RedactionResult,
    RegexRule,
    Rule,
    Scan,
    ScanRule,
    SweepRule,
    kept,
)
from pipeline.redaction.normalise import normalise_bytes, normalise_mapped
from pipeline.redaction.reasons import Reason
from pipeline.redaction.rules_cli import cli_rules
from pipeline.redaction.rules_context import context_rules
from pipeline.redaction.rules_encoded import encoded_rules
from pipeline.redaction.rules_generic import generic_rules
from pipeline.redaction.rules_hooks import hook_rules
from pipeline.redaction.rules_joined import joined_rules
from pipeline.redaction.rules_keys import key_rules
from pipeline.redaction.rules_mail import mail_rules
from pipeline.redaction.rules_nearby import nearby_rules
from pipeline.redaction.rules_prose import prose_rules
from pipeline.redaction.rules_provider import provider_rules
from pipeline.redaction.rules_services import service_rules
from pipeline.redaction.rules_session import session_rules
from pipeline.redaction.rules_shape import shape_rules
from pipeline.redaction.rules_signed import signed_rules
from pipeline.redaction.rules_slots import slot_rules
from pipeline.redaction.rules_stated import stated_rules
from pipeline.redaction.seed import seed_rules
from pipeline.redaction.wrap import extend_joined, extend_wrapped

PLACEHOLDER_RE = re.compile(rb"\[REDACTED(?::[a-z0-9-]{1,40}:[0-9a-f]{4}|_SECRET|)\]")
"""What redaction writes (``[REDACTED:github-token:1f3a]``), plus the bare forms other tools write."""
PLACEHOLDER_ANCHOR = b"[redacted"
MAX_RULE_NAME = 24
PLACEHOLDER_MAX_LEN = len("[REDACTED::]") + MAX_RULE_NAME + 4
MIN_SECRET_LEN = 3
"""The shortest credential: a weak password written as a literal (``MYSQL_ROOT_PASSWORD=root``)."""
MAX_GROWTH_PER_REDACTION = PLACEHOLDER_MAX_LEN - MIN_SECRET_LEN
"""A redaction replaces at least MIN_SECRET_LEN characters with at most PLACEHOLDER_MAX_LEN: a line
grows by at most this much per secret redacted on it (and never gains a line break)."""


class _Compiled:
    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        anchors: dict[bytes, list[Rule]] = {}
        for rule in self.rules:
            for anchor in rule.anchors:
                if anchor != anchor.lower() or not anchor:
                    raise ValueError(f"rule {rule.name}: anchors must be non-empty lower-case: {anchor!r}")
                anchors.setdefault(anchor, []).append(rule)
        index = {id(rule): i for i, rule in enumerate(self.rules)}
        self.by_pattern: list[Sequence[tuple[int, Scan]]] = [
            tuple((index[id(r)], _scanner(r)) for r in rs) for rs in anchors.values()
        ]
        self.sweeps = [r.sweep for r in self.rules if isinstance(r, SweepRule)]
        self.placeholder_index = len(self.by_pattern)
        # a contiguous NFA, not a DFA: with the prose lexicon's ~2,000 anchors (many of them in
        # other scripts) a DFA costs ~23 MB of memory in every process that redacts, this ~2 MB, for
        # a scan that is about as fast
        self.automaton = ahocorasick_rs.BytesAhoCorasick(
            [*anchors.keys(), PLACEHOLDER_ANCHOR], implementation=ahocorasick_rs.Implementation.ContiguousNFA
        )

    def candidates(self, buf: bytes) -> list[Candidate]:
        """The spans to redact, merged and named."""
        found, protected = self.scan(buf)
        return _resolve(found, protected, buf)[0]

    def scan(self, buf: bytes) -> tuple[list[Candidate], list[tuple[int, int]]]:
        """Every rule's raw candidates (kept ones included), and the placeholders already there.
        The cyclic garbage collector waits meanwhile: the scan makes many small tuples and no cycle,
        and a collection in the middle walks every object of the process."""
        if not gc.isenabled():
            return self._scan(buf)
        gc.disable()
        try:
            return self._scan(buf)
        finally:
            gc.enable()

    def _scan(self, buf: bytes) -> tuple[list[Candidate], list[tuple[int, int]]]:
        low = buf.lower()
        out: list[Candidate] = []
        protected: list[tuple[int, int]] = []
        by_pattern = self.by_pattern
        resume = [0] * len(self.rules)
        placeholder = self.placeholder_index
        shield_end = 0  # the end of the last placeholder: a word inside one anchors no rule
        for index, start, end in self.automaton.find_matches_as_indexes(low, overlapping=True):
            if index == placeholder:
                m = PLACEHOLDER_RE.match(buf, start)
                if m is not None:
                    protected.append(m.span())
                    shield_end = m.end()
                continue
            if start < shield_end:
                continue  # ``[REDACTED:secret-in-prose:..]``'s "secret" is memd's, not the text's
            for number, collect in by_pattern[index]:
                if start >= resume[number]:
                    resume[number] = collect(buf, low, start, end, out)
        for sweep in self.sweeps:
            sweep(buf, out)
        protected.extend(ssh_public_key_spans(buf))  # a public key is kept whatever surrounds it
        return out, protected


def _scanner(rule: Rule) -> Scan:
    if isinstance(rule, ScanRule):
        return rule.scan
    if isinstance(rule, RegexRule):
        return rule.scanner()
    return rule.collect


_LEVELS = {int(level): level for level in Level}


def _resolve(
    found: list[Candidate], protected: list[tuple[int, int]], buf: bytes, keep: bool = False
) -> tuple[list[Candidate], list[Candidate]]:
    """Check deferred generic values that no stronger rule covers; drop what overlaps a placeholder;
    merge overlapping spans, each named after its strongest rule. With ``keep``, also return the
    candidates kept in clear (with ``-Reason`` as priority) that no redaction covers."""
    verified = sorted([c for c in found if c[3] >= GENERIC])
    deferred = [c for c in found if 0 < c[3] < GENERIC]
    rejected = [c for c in found if c[3] < 0] if keep else []
    if deferred:
        verdicts: dict[tuple[bytes, int], Reason | None] = {}  # for this call only: values are secrets
        starts = [c[0] for c in verified]  # _Spans of the verified spans, which are sorted already
        max_end = list(accumulate([c[1] for c in verified], max))
        for s, e, name, level in deferred:
            i = bisect_left(starts, e)
            if i and max_end[i - 1] > s:  # covered.overlaps(s, e), inline: this loop is hot
                continue
            value = buf[s:e]
            key = (value, level)  # transcripts repeat values (a tool result is stored twice)
            if key in verdicts:
                reason = verdicts[key]
            else:
                reason = verdicts[key] = value_verdict(value, _LEVELS[level])
            if reason is None:
                verified.append((s, e, name, GENERIC))
            elif keep:
                rejected.append(kept(s, e, name, reason))
        verified.sort()
    if protected:
        shield = _Spans(protected)
        verified = [c for c in verified if not shield.overlaps(c[0], c[1])]
    merged: list[Candidate] = []
    size = len(buf)
    last_end = -1  # the end of merged[-1]
    for s, e, name, prio in verified:
        if e - s < _SHORT and _chars(buf, s, e) < MIN_SECRET_LEN:  # too short to be a credential
            if keep:
                rejected.append(kept(s, e, name, Reason.TOO_SHORT))
            continue
        if e > last_end and e < size:  # (a span inside the previous one was extended with it)
            e = _extended(buf, s, e)
        if s < last_end:
            ms, me, mname, mprio = merged[-1]
            if (prio, e - s) > (mprio, me - ms):
                mname, mprio = name, prio
            last_end = max(me, e)
            merged[-1] = (ms, last_end, mname, mprio)
        else:
            merged.append((s, e, name, prio))
            last_end = e
    merged = _not_lookalikes(merged, buf, rejected if keep else None)
    if not keep:
        return merged, []
    hidden = _Spans([(c[0], c[1]) for c in merged] + protected)
    return merged, sorted({c for c in rejected if not hidden.overlaps(c[0], c[1])})


def _not_lookalikes(found: list[Candidate], buf: bytes, rejected: list[Candidate] | None) -> list[Candidate]:
    """``found`` (merged spans) without the look-alikes (``filters.Lookalikes``: samples, ciphertext,
    references), which go to ``rejected`` with their reason when it is given. One check for every
    rule's findings, once per span to redact."""
    if not found:
        return found
    judge = Lookalikes(buf)
    out: list[Candidate] = []
    for c in found:
        reason = judge.reason(c[0], c[1])
        if reason is None:
            out.append(c)
        elif rejected is not None:
            rejected.append(kept(c[0], c[1], c[2], reason))
    return out


_SHORT = 4 * MIN_SECRET_LEN  # a span this long in bytes holds MIN_SECRET_LEN characters at least
_BREAK_BYTES = frozenset(b"\\\r\n")
_QUOTE_BYTES = frozenset(b"\"'`")
_ESCAPED_QUOTES = frozenset((b'"', b"\\"))
_ESCAPED_BREAKS = frozenset((b"\\", b"n", b"r", b"\n", b"\r"))  # after a backslash: not ``\"``


def _extended(buf: bytes, s: int, e: int) -> int:
    """The end of the span ``[s, e)`` once the value goes on: over the next lines (a continuation,
    a wrapped block), or into the literals joined to it (``"ab" +`` then ``"cd"``)."""
    b = buf[e]
    if b in _BREAK_BYTES and (b != 92 or buf[e + 1 : e + 2] in _ESCAPED_BREAKS):
        e = extend_wrapped(buf, s, e)
        if e >= len(buf):
            return e
        b = buf[e]
    if b in _QUOTE_BYTES or (b == 92 and buf[e + 1 : e + 2] in _ESCAPED_QUOTES):
        e = extend_joined(buf, e)
    return e


def _chars(buf: bytes, s: int, e: int) -> int:
    """How many characters ``buf[s:e]`` holds (UTF-8 continuation bytes do not count)."""
    return e - s - sum(1 for b in buf[s:e] if 0x80 <= b < 0xC0)


class _Spans:
    """Sorted spans answering "does [s, e) overlap any of them?" in O(log n)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        spans = sorted(spans)
        self.starts = [s for s, _ in spans]
        self.max_end: list[int] = list(accumulate([e for _, e in spans], max))

    def overlaps(self, s: int, e: int) -> bool:
        i = bisect_left(self.starts, e)
        return i > 0 and self.max_end[i - 1] > s


@lru_cache(maxsize=1)
def compiled_rules() -> _Compiled:
    """Every rule, compiled once per process."""
    rules: list[Rule] = []
    rules.extend(provider_rules())
    rules.extend(service_rules())
    rules.extend(context_rules())
    rules.extend(cli_rules())
    rules.extend(slot_rules())
    rules.extend(session_rules())
    rules.extend(mail_rules())
    rules.extend(prose_rules())
    rules.extend(stated_rules())
    rules.extend(key_rules())
    rules.extend(nearby_rules())
    rules.extend(signed_rules())
    rules.extend(seed_rules())
    rules.extend(shape_rules())
    rules.extend(hook_rules())
    rules.extend(generic_rules())
    rules.extend(joined_rules())
    compiled: list[_Compiled] = []
    rules.extend(encoded_rules(lambda decoded: bool(compiled[0].candidates(decoded))))
    compiled.append(_Compiled(rules))
    return compiled[0]


def rule_names() -> list[str]:
    """The names a placeholder or a count can carry."""
    names = {r.name for r in compiled_rules().rules} | {"anthropic-api-key"}
    names |= {"openai-api-key", "openrouter-api-key", "db-url", "basic-auth-url", "aws-secret-access-key"}
    names.discard("url-credentials")
    return sorted(names)


class Redactor:
    """Finds and replaces secrets. ``key`` is the installation's redaction key
    (``load_or_create_key``): it makes each placeholder's tag stable for one secret and
    meaningless elsewhere."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the redaction key must be at least 16 bytes")
        self._tag = Tagger(key)
        self._rules = compiled_rules()

    def __repr__(self) -> str:
        return "Redactor()"

    def redact(self, text: str) -> RedactionResult:
        """``text`` normalised (``normalise``: what the model is sent) with every secret replaced by
        ``[REDACTED:<rule>:<tag>]``; the replacements counted by rule."""
        buf = _encode(text)
        normal = normalise_bytes(buf)
        if len(normal) != len(buf):
            buf, text = normal, normal.decode("utf-8", "surrogatepass")
        return self._render(text, buf, self._rules.candidates(buf))

    def report(self, text: str) -> RedactionReport:
        """``redact``, plus how many candidates each rule found and each one kept in clear with its
        rule, character span and reason (never its value). Spans are offsets in ``text`` as given."""
        text, buf, back = _normalised(text)
        found, protected = self._rules.scan(buf)
        spans, rejected = _resolve(found, protected, buf, keep=True)
        shield = _Spans(protected)
        counts = Counter(c[2] for c in found if not shield.overlaps(c[0], c[1]))
        positions = _char_spans(text, buf, rejected)
        kept_list = [
            Kept(c[2], back(cs), back(ce), Reason(-c[3]))
            for c, (cs, ce) in zip(rejected, positions, strict=True)
        ]
        return RedactionReport(self._render(text, buf, spans), dict(counts), kept_list)

    def _render(self, text: str, buf: bytes, spans: list[Candidate]) -> RedactionResult:
        if not spans:
            return RedactionResult(text=text, counts={})
        counts = dict(Counter(c[2] for c in spans))
        # placeholders by secret and rule, for this call only (the keys are the secrets themselves)
        marks: dict[tuple[bytes, str], str] = {}
        make_tag = self._tag
        pieces: list[str] = []
        if text.isascii():  # byte offsets are character offsets
            pos = 0
            for s, e, name, _ in spans:
                pieces.append(text[pos:s])
                key = (buf[s:e], name)
                mark = marks.get(key)
                if mark is None:
                    mark = marks[key] = f"[REDACTED:{name}:{make_tag(key[0])}]"
                pieces.append(mark)
                pos = e
            pieces.append(text[pos:])
            return RedactionResult(text="".join(pieces), counts=counts)
        # Character offsets from byte offsets, decoding only the pieces that are not ASCII: decoding
        # the whole result again costs more than the rules do on most text.
        pos = chars = 0
        for s, e, name, _ in spans:
            gap = buf[pos:s]
            start = chars + (len(gap) if gap.isascii() else len(gap.decode("utf-8", "surrogatepass")))
            secret = buf[s:e]
            end = start + (len(secret) if secret.isascii() else len(secret.decode("utf-8", "surrogatepass")))
            pieces.append(text[chars:start])
            key = (secret, name)
            mark = marks.get(key)
            if mark is None:
                mark = marks[key] = f"[REDACTED:{name}:{make_tag(secret)}]"
            pieces.append(mark)
            pos, chars = e, end
        pieces.append(text[chars:])
        return RedactionResult(text="".join(pieces), counts=counts)

    def find(self, text: str) -> list[Finding]:
        """Every secret in ``text``: rule and character span (offsets in ``text`` as given), never the value."""
        text, buf, back = _normalised(text)
        spans = self._rules.candidates(buf)
        positions = _char_spans(text, buf, spans)
        return [Finding(c[2], back(cs), back(ce)) for c, (cs, ce) in zip(spans, positions, strict=True)]

    def scan_clean(self, text: str) -> list[str]:
        """The commit gate: the rule name of each secret in ``text``; an empty list means clean.
        Refuse the commit on any entry (phase 2 reports these names, never the text)."""
        return [f.rule for f in self.find(text)]


def _char_spans(text: str, buf: bytes, spans: list[Candidate]) -> list[tuple[int, int]]:
    """The character offsets of byte spans sorted by start (they may overlap)."""
    if text.isascii():
        return [(c[0], c[1]) for c in spans]
    out = []
    chars = last = 0
    for s, e, _, _ in spans:
        if s >= last:
            chars += len(buf[last:s].decode("utf-8", "surrogatepass"))
        else:  # overlaps the previous span: count back from where that one started
            chars -= len(buf[s:last].decode("utf-8", "surrogatepass"))
        out.append((chars, chars + len(buf[s:e].decode("utf-8", "surrogatepass"))))
        last = s
    return out


def _normalised(text: str) -> tuple[str, bytes, Callable[[int], int]]:
    """``text`` normalised, as text and bytes, and a function taking a character offset in it back
    to the character offset in ``text``."""
    original = _encode(text)
    buf, back = normalise_mapped(original)
    if len(buf) == len(original):
        return text, buf, _same
    normal = buf.decode("utf-8", "surrogatepass")

    def char_back(offset: int) -> int:
        at = back(len(normal[:offset].encode("utf-8", "surrogatepass")))
        return len(original[:at].decode("utf-8", "surrogatepass"))

    return normal, buf, char_back


def _same(offset: int) -> int:
    return offset


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
