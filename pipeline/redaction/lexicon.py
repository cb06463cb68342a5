"""The multilingual lexicon of secrets stated in prose (``prose_lexicon.txt``), read once per
process: the words that name a password, a PIN, a key or a token in each language (whole words and
stems), and each language's ways of saying "is" (copulas before the value, final copulas after it,
particles glued to the name). The rule that uses it is ``rules_stated``; this module only reads."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pipeline import invisible

LEXICON_FILE = Path(__file__).with_name("prose_lexicon.txt")
KINDS = ("password", "pin", "key", "token")
_FIELDS = (*KINDS, "copula", "final", "particle")
_MAX_BYTES = 1 << 20


class LexiconError(ValueError):
    """The lexicon file is not as its header says."""


@dataclass(frozen=True)
class Lexicon:
    names: dict[str, str]
    """A secret's word (lower case as written; no ``*``) and its kind."""
    stems: frozenset[str]
    """The names that are stems: the word's own endings may follow them."""
    copulas: frozenset[str]
    finals: frozenset[str]
    particles: frozenset[str]
    languages: frozenset[str]


def parse(text: str) -> Lexicon:
    names: dict[str, str] = {}
    stems: set[str] = set()
    sets: dict[str, set[str]] = {"copula": set(), "final": set(), "particle": set()}
    languages: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head, sep, body = line.partition(":")
        parts = head.split()
        if not sep or len(parts) != 2 or parts[1] not in _FIELDS:
            raise LexiconError(f"line {number}: expected '<language> <field>: entries': {line[:60]!r}")
        language, field = parts
        languages.add(language)
        for raw in body.split(","):
            entry = invisible.strip(raw.strip()).lower()  # a zero-width joiner: normalise removes it too
            if not entry:
                continue
            if field in sets:
                sets[field].add(entry)
                continue
            if entry.endswith("*"):
                entry = entry[:-1]
                stems.add(entry)
            names.setdefault(entry, field)
    for name in [n for n in names if any(n != s and n.startswith(s) and names[s] == names[n] for s in stems)]:
        del names[name]  # a stem takes it in: one anchor, one look
        stems.discard(name)
    return Lexicon(
        names,
        frozenset(stems),
        frozenset(sets["copula"]),
        frozenset(sets["final"]),
        frozenset(sets["particle"]),
        frozenset(languages),
    )


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The lexicon file, parsed once (a file of memd's own: its size is checked all the same)."""
    if LEXICON_FILE.stat().st_size > _MAX_BYTES:
        raise LexiconError(f"{LEXICON_FILE.name} is larger than {_MAX_BYTES} bytes")
    return parse(LEXICON_FILE.read_text(encoding="utf-8"))
