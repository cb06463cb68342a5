"""Secrets carried in a URL's path: an incoming webhook's address is its credential (whoever holds
it may post), and a key or token may sit in the path as a segment of its own. No list of vendors:
a path word says what follows (``/hooks/``, ``/webhook/``, ``/incoming/``: a hook's id and secret;
``/key/``, ``/token/``: a credential), and each segment after it is judged by its shape.

After a hook's word, a segment is the hook's secret when it mixes letters and digits and is not
short (``/hooks/catch/51234987/a8kq2x/``: the numeric id stays, the random part goes); after a
credential's word, the segment must look like a random token on its own. The span runs from the
first such segment to the last, so ids between them go too. The URL must have a scheme and a host
(``.git/hooks/pre-commit`` is a path, not an address), and a documented address (a placeholder in
its path: ``/hooks/<your-hook-id>``, ``XXXX...``) is kept whole.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import has_digit, is_placeholder
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule
from pipeline.redaction.placeholders import is_documented_example
from pipeline.redaction.rules_nearby import token_shape

NAME = "webhook-url"
_HOOK_WORDS = (b"hook", b"hooks", b"webhook", b"webhooks", b"webhookb2", b"incoming", b"incomingwebhook")
_KEY_WORDS = (b"key", b"keys", b"token", b"tokens", b"secret", b"apikey")
_URL_BACK = 256
"""How far before the path word the URL's scheme may be."""
_URL_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/@%+=,;!$&*")
_PATH = re.compile(rb"[A-Za-z0-9._~@%+=,;!$&*:-]+(?:/[A-Za-z0-9._~@%+=,;!$&*:-]*)*")
"""The rest of the path after the word (up to a query, a fragment, a quote or a blank)."""
_SEGMENT_CHARS = re.compile(rb"[A-Za-z0-9._~@=-]+")
_LETTER = re.compile(rb"[A-Za-z]")
MIN_HOOK_SEGMENT = 6
_DOC = re.compile(rb"(?i:x{6,}|your[-_]|example)")


def _hook_secret(segment: bytes) -> bool:
    """A segment of a hook's path that is an id-and-secret, not a word or a number."""
    return (
        len(segment) >= MIN_HOOK_SEGMENT
        and _SEGMENT_CHARS.fullmatch(segment) is not None
        and has_digit(segment)
        and _LETTER.search(segment) is not None
        and not is_placeholder(segment)
    )


def _has_scheme(buf: bytes, start: int) -> bool:
    """Does the run of URL characters the path word sits in start with ``scheme://host``?"""
    lo = max(0, start - _URL_BACK)
    s = start
    while s > lo and buf[s - 1] in _URL_CHARS:
        s -= 1
    sep = buf.find(b"://", s, start)
    return sep > s and buf[sep + 3 : sep + 4] not in (b"/", b"")


def _collect(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    word = low[start + 1 : end - 1]
    path = _PATH.match(buf, end)
    if path is None or not _has_scheme(buf, start):
        return 0
    rest = path.group()
    if _DOC.search(rest) is not None or is_documented_example(rest):
        return path.end()  # a documented address: its placeholder says the real one goes here
    hook = word in _HOOK_WORDS
    segments = rest.split(b"/") if hook else rest.split(b"/")[:1]  # a key's word: the next segment
    first = last = -1
    pos = end
    for segment in segments:
        if _hook_secret(segment) if hook else token_shape(segment):
            first = pos if first < 0 else first
            last = pos + len(segment)
        pos += len(segment) + 1
    if first >= 0:
        out.append((first, last, NAME, CONTEXT))
    return path.end()


def hook_rules() -> list[ScanRule]:
    words = (*_HOOK_WORDS, *_KEY_WORDS)
    return [ScanRule(NAME, tuple(b"/" + w + b"/" for w in words), _collect)]
