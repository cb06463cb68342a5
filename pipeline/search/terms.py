"""Words as search terms: accents and case folded, identifiers split (``camelCase``, ``snake_case``,
``kebab-case``, ``dotted.names``), stop words dropped, and English inflections stemmed, so
"deploying", "deploys" and "deployment" meet "deploy", and ``retryPolicy`` meets "retry policies".

Standard library only. ``terms`` keeps a cache of each word's stem: a memory's vocabulary is small.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "ever",
        "every",
        "each",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "let",
        "lets",
        "via",
        "per",
        "use",
        "using",
        "used",
        "uses",
        "one",
        "thing",
        "things",
        "something",
        "anything",
        "know",
        "tell",
        "say",
        "said",
        "way",
        "get",
        "got",
    ]
)
"""Words that say nothing about which memory is meant (they would only match by chance)."""

MIN_STEM = 3


def fold(text: str) -> str:
    """Case-folded, with accents taken off (``Café`` -> ``cafe``, ``Straße`` -> ``strasse``)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """The folded words of ``text``, an identifier both whole and split into its parts
    (``retryPolicy`` -> ``retrypolicy``, ``retry``, ``policy``; ``max_retries`` -> ``maxretries``,
    ``max``, ``retries``)."""
    out: list[str] = []
    for match in _CHUNK.finditer(text):
        chunk = match.group(0)
        if chunk.isalnum():
            _word(chunk, out)
            continue
        parts = _JOINERS.split(chunk)
        if len(parts) > 1:
            out.append(_fold_word("".join(parts)))
        for part in parts:
            if part:
                _word(part, out)
    return out


def _word(token: str, out: list[str]) -> None:
    if not token.isascii():
        out.append(_fold_word(token.replace("’", "'")))
    elif token.islower() or token.isupper() or token.isdigit():
        out.append(token.lower())
    else:  # camelCase, HTTPServer: the whole and its parts
        out.append(token.lower())
        out.extend(part.lower() for part in _CAMEL.findall(token))


_CHUNK = re.compile(r"[^\W_]+(?:(?:['’]|[_.\-]+)[^\W_]+)*")
"""A word, or words joined into one identifier (``snake_case``, ``kebab-case``, ``dotted.name``)."""
_JOINERS = re.compile(r"[_.\-]+")


@lru_cache(maxsize=65536)
def _fold_word(word: str) -> str:
    return fold(word)


def terms(text: str) -> list[str]:
    """The search terms of ``text``: its words without stop words, stemmed."""
    cache = _TERMS
    if len(cache) > _TERMS_MAX:
        cache.clear()
    out: list[str] = []
    for word in words(text):
        term = cache.get(word)
        if term is None:
            term = cache[word] = "" if _dropped(word) else stem(word)
        if term:
            out.append(term)
    return out


_TERMS: dict[str, str] = {}
"""Each word's term ("" for a stop word): a memory's vocabulary is small, its words many."""
_TERMS_MAX = 200_000


def _dropped(word: str) -> bool:
    return not word.isdigit() and (word in STOP_WORDS or len(word) < 2)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer (Porter's rules cut down): plurals, -ing, -ed, -ment, -ation, -er,
    -ly, -ness, -able, a final -e, a doubled final consonant. Words of other languages and
    identifiers pass through nearly whole; the same rules on both sides is what matters."""
    w = word.split("'", 1)[0]
    if len(w) <= MIN_STEM or not w.isalpha():
        return w
    w = _plural(w)
    for suffix, repl in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) + len(repl) >= MIN_STEM:
            base = w[: len(w) - len(suffix)] + repl
            if suffix in ("ing", "ed", "er") and not _has_vowel(base):
                continue
            w = base
            if suffix in ("ing", "ed", "er", "ingly", "edly") and _doubled(w):
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > MIN_STEM:
        w = w[:-1]
    if w.endswith("y") and len(w) > MIN_STEM and w[-2] not in "aeiou":
        w = w[:-1] + "i"
    return w


_SUFFIXES = (
    ("izations", "iz"),
    ("isations", "iz"),
    ("ization", "iz"),
    ("isation", "iz"),
    ("urations", "ur"),
    ("uration", "ur"),
    ("arations", "ar"),
    ("aration", "ar"),
    ("orations", "or"),
    ("oration", "or"),
    ("ational", "at"),
    ("ations", "at"),
    ("ation", "at"),
    ("ements", ""),
    ("ement", ""),
    ("ments", ""),
    ("ment", ""),
    ("ingly", ""),
    ("edly", ""),
    ("ness", ""),
    ("ables", ""),
    ("able", ""),
    ("ibles", ""),
    ("ible", ""),
    ("ions", ""),
    ("ion", ""),
    ("ers", ""),
    ("ing", ""),
    ("ise", "iz"),
    ("ize", "iz"),
    ("ed", ""),
    ("er", ""),
    ("ly", ""),
)


def _plural(w: str) -> str:
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("ss") or w.endswith("us") or w.endswith("is"):
        return w
    if w.endswith("es") and len(w) > 4 and w[-3] in "sxz" or w.endswith(("ches", "shes")):
        return w[:-2]
    if w.endswith("s") and len(w) > 3:
        return w[:-1]
    return w


def _has_vowel(w: str) -> bool:
    return any(c in "aeiouy" for c in w)


def _doubled(w: str) -> bool:
    return len(w) > MIN_STEM and w[-1] == w[-2] and w[-1] not in "aeiouslz"
