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
"""How far after the word naming it (``seed``, ``mnemonic``, ``recovery phrase``) a phrase may end."""
_ESCAPES = re.compile(rb"\\+[nrt\"]")
_TOKEN = re.compile(rb"[^\s\"']+")
_NUMBERING = re.compile(rb"[0-9]{1,2}[.):]")
_PUNCT = b".,;:\"'`)"
ANCHORS = (
    b"seed",
    b"mnemonic",
    b"recovery phrase",
    b"secret phrase",
    b"phrase:",
    b"bip39",
    b"bip-39",
    b"wallet",
)


@lru_cache(maxsize=1)
def wordlist() -> frozenset[str]:
    """The 2048 BIP-39 English words."""
    words = WORDLIST.read_text(encoding="ascii").split()
    if len(words) != 2048:
        raise ValueError(f"{WORDLIST} holds {len(words)} words, not the 2048 of BIP-39")
    return frozenset(words)


def _phrase(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """The phrases in the window after the word naming one: runs of 12 or more listed words,
    separated by blanks or line breaks (raw or JSON-escaped) and maybe numbered."""
    hi = min(len(buf), end + WINDOW)
    window = buf[end:hi]
    if b"\\" in window:  # escapes become blanks of the same length: offsets stay
        window = _ESCAPES.sub(lambda m: b" " * len(m.group()), window)
    words = wordlist()
    run: list[tuple[int, int]] = []
    for m in _TOKEN.finditer(window):
        token = m.group()
        if _NUMBERING.fullmatch(token):
            continue
        word = token.rstrip(_PUNCT)
        if 3 <= len(word) <= 8 and word.islower() and word.isalpha() and word.decode() in words:
            s = end + m.start()
            run.append((s, s + len(word)))
            if len(word) == len(token):
                continue
        _close(run, out)
        run = []
    _close(run, out)
    return hi


def _close(run: list[tuple[int, int]], out: list[Candidate]) -> None:
    if len(run) >= PHRASE_LENGTHS[0]:
        out.append((run[0][0], run[-1][1], "seed-phrase", STRUCTURE))


def seed_rules() -> list[ScanRule]:
    return [ScanRule("seed-phrase", ANCHORS, _phrase)]
