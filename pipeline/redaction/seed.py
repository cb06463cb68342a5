"""BIP-39 recovery phrases: 12 to 24 words of the BIP-39 English list (``bip39_english.txt``, the
2048 words of the standard, loaded on first use) found near a word that names one."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pipeline.redaction.model import STRUCTURE, Candidate, ScanRule

WORDLIST = Path(__file__).with_name("bip39_english.txt")
PHRASE_LENGTHS = (12, 15, 18, 21, 24)
WINDOW = 400
"""How far from the word naming it (``seed``, ``mnemonic``, ``recovery phrase``) a phrase may start."""
_RUN = re.compile(rb"(?:[a-z]{3,8}(?:[ \t]+|[ \t]*(?:\r?\n|\\+n)[ \t]*(?:\d{1,2}[.)][ \t]+)?)){11,}[a-z]{3,8}")
_WORD = re.compile(rb"[a-z]{3,8}")
ANCHORS = (b"seed", b"mnemonic", b"recovery phrase", b"secret phrase", b"phrase:", b"bip39", b"bip-39", b"wallet")


@lru_cache(maxsize=1)
def wordlist() -> frozenset[str]:
    """The 2048 BIP-39 English words."""
    words = WORDLIST.read_text(encoding="ascii").split()
    if len(words) != 2048:
        raise ValueError(f"{WORDLIST} holds {len(words)} words, not the 2048 of BIP-39")
    return frozenset(words)


def _phrase(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    hi = min(len(buf), end + WINDOW)
    words = None
    for m in _RUN.finditer(buf, max(0, start - WINDOW), hi):
        words = words or wordlist()
        run = [(w.start(), w.end()) for w in _WORD.finditer(buf, *m.span())]
        best: tuple[int, int] | None = None
        i = 0
        while i < len(run):  # the longest stretch of listed words, at least 12 long
            j = i
            while j < len(run) and buf[run[j][0] : run[j][1]].decode() in words:
                j += 1
            if j - i >= PHRASE_LENGTHS[0] and (best is None or j - i > best[1] - best[0]):
                best = (i, j)
            i = j + 1
        if best is not None:
            out.append((run[best[0]][0], run[best[1] - 1][1], "seed-phrase", STRUCTURE))
    return hi


def seed_rules() -> list[ScanRule]:
    return [ScanRule("seed-phrase", ANCHORS, _phrase)]
