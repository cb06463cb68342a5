"""A password after a label in a language the lexicon does not hold: "სერვერის პაროლი: X",
"የሰርቨሩ የይለፍ ቃል፦ X", "սերվերի գաղտնաբառ՝ X".

The label's words are unknown, so the value alone must vouch for itself: it ends its line or
clause, and it reads as a password someone chose, not as a name: a symbol among letters and digits
(``kd8Tqz!mwp3``), or digits inside a mix of cases (``Ab3kdQz9x``); a word with a number after it
(``iPhone15``, ``Python3``), a version, a path or a reference stays. Only labels written in a
script other than ASCII's count, found by a colon right after such a character (one byte test: a
UTF-8 continuation byte, then ``:``), or by the colons other scripts write (``፦``, ``៖``, ``՝``);
the rules for the languages the lexicon holds (``rules_stated``) see the rest.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import is_placeholder, is_reference
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule

_COLONS = ("\u1366", "\u17d6", "\u055d")  # Ethiopic, Khmer, Armenian
_ANCHORS = (
    *(bytes((c,)) + b":" for c in range(0x80, 0xC0)),
    *(c.encode() for c in _COLONS),
)
_VALUE = re.compile(
    rb"[ \t]{0,3}(?P<v>[!#-\[\]-~]{6,64})(?=[ \t]*(?:$|\r?\n|\\+[nr\"]|\"|[.,;)!?](?:[ \t\r\n\\\"]|$)))"
)
_TRAILING = b".,;:!?)"
_SYMBOL = re.compile(rb"[!#$%&*+=?@^~|]")
_LETTER = re.compile(rb"[A-Za-z]")
_DIGIT = re.compile(rb"[0-9]")
_MIXED = re.compile(rb"[a-z].*[A-Z]|[A-Z].*[a-z]")
_INNER_DIGIT = re.compile(rb"[A-Za-z][0-9]+[A-Za-z]")
_CODE_LIKE = re.compile(rb"[/\\<>{}\[\]()'`]|://|^[-.]|\.\.|^[0-9.:-]+$|&\w+=")
_LABEL_DIGIT = re.compile(rb"[0-9=]")


def chosen_password(value: bytes) -> bool:
    """Does ``value``, with no word before it to say so, read as a password someone chose?"""
    if not (_LETTER.search(value) and _DIGIT.search(value)) or _CODE_LIKE.search(value):
        return False
    if not (_SYMBOL.search(value) or (_MIXED.search(value) and _INNER_DIGIT.search(value))):
        return False
    return not is_placeholder(value) and not is_reference(value)


def _label(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    colon = end
    if buf[start] < 0xC0 and buf[start] >= 0x80:  # a continuation byte, then ":"
        colon = start + 1
    lo = max(0, colon - 48)
    line = buf[max(buf.rfind(b"\n", lo, colon) + 1, lo) : colon]
    if _LABEL_DIGIT.search(line):
        return 0  # "版本 2:", "x = 名前:": not a label of words
    m = _VALUE.match(buf, end)
    if m is None:
        return 0
    s, e = m.span("v")
    while e > s and buf[e - 1] in _TRAILING:
        e -= 1
    if not chosen_password(buf[s:e]):
        return 0
    out.append((s, e, "password", CONTEXT))
    return e


def label_rules() -> list[ScanRule]:
    return [ScanRule("password", _ANCHORS, _label)]
