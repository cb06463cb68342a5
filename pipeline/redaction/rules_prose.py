"""Passwords written in prose: "my password is ...", "Passwort: ...", "log in with admin / ...",
"creds are dev:...", in English, German, French, Spanish, Portuguese, Italian, Dutch, Polish,
Russian, Japanese and Chinese.

Prose says a lot about passwords that is not one ("the password is stored in Vault", "le mot de
passe est incorrect"): a value after a password's name in a sentence is one only when it does not
read as a word (it holds a digit or a symbol, or mixes case inside it) or is quoted. A ``user /
password`` or ``user:password`` pair after "log in with", "creds" or "credentials" is one whatever
it looks like (only a placeholder or a reference is spared).
"""

from __future__ import annotations

import json
import re

from pipeline.redaction.filters import Level, is_reference, value_verdict
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule, kept
from pipeline.redaction.reasons import Reason

_NAMES = [
    "password",
    "passwort",
    "kennwort",
    "wachtwoord",
    "senha",
    "contraseña",
    "contrasena",
    "hasło",
    "пароль",
    "Пароль",
    "パスワード",
    "密码",
]
_NAME_ANCHORS = (
    *(n.encode() for n in _NAMES),
    # as a transcript holds them JSON-escaped, once or twice
    *(json.dumps(n)[1:-1].encode() for n in _NAMES if not n.isascii()),
    *(json.dumps(json.dumps(n)[1:-1])[1:-1].encode() for n in _NAMES if not n.isascii()),
    b"mot de passe",
    b"pw is",
    b"pw:",
    b"pw ",
)
_E_ACUTE = rb"(?:\xc3\xa9|\xc3\xa8|\\+u00e[89])"  # Portuguese é, Italian è (raw or JSON-escaped)
_COPULA = (
    rb"(?:[ \t]+(?:is|was|ist|lautet|est|es|era|" + _E_ACUTE + rb"|-|\xe2\x80\x94)[ \t]+"
    rb"|[ \t]*(?P<colon>:|\xef\xbc\x9a|\\+uff1a)[ \t]*)"
)
_FILLER = (
    rb"(?P<filler>(?:[ \t]+(?!(?:is|was|ist|lautet|est|es|era)[ \t])"
    rb"(?:[^\s:=\"'`\xef\\]|\\+u[0-9a-fA-F]{4}){1,24}){0,4}?)"
)
_VALUE = rb"(?P<q>\\*[\"'`]|\xe2\x80\x9c|\xc2\xab)?(?P<v>[^\s\"'`\\]{3,128})"
# Both patterns are matched where the name (the anchor the engine found) ends.
_PROSE = re.compile(_FILLER + _COPULA + _VALUE, re.IGNORECASE)
_OF = [
    "for",
    "of",
    "to",
    "from",
    "on",
    "at",
    "del",
    "de",
    "da",
    "do",
    "per",
    "voor",
    "für",
    "pour",
    "para",
    "от",
    "для",
    "к",
    "на",
]
_OF_FORMS = sorted(
    {
        f
        for w in _OF
        for f in (w.encode(), json.dumps(w)[1:-1].encode(), json.dumps(json.dumps(w)[1:-1])[1:-1].encode())
    },
    key=len,
    reverse=True,
)
_PROSE_BARE = re.compile(  # "мой пароль <v>", "пароль от сервера <v>": no copula, the value ends the sentence
    rb"(?:[ \t]+(?:"
    + b"|".join(re.escape(w) for w in _OF_FORMS)
    + rb")[ \t]+(?:[^\s\"'`\\]|\\+u[0-9a-fA-F]{4}){1,24})?(?P<bare>[ \t]+)"
    + _VALUE,
    re.IGNORECASE,
)
_GLUED = frozenset(b"-_.$@/ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_AFTER_NAME = frozenset((b" ", b"\t", b":", b"\xef", b"\\"))
_CODE_NAMES = frozenset((b"password", b"pw"))
_SHORT_NAMES = frozenset((b"pw is", b"pw:", b"pw "))
_SENTENCE_END = re.compile(rb"[ \t]*(?:$|\r?\n|\\+[nr\"]|[\"'`]|[.,;)!?](?:[ \t\r\n\\\"'`]|$))")
_TRAILING = b".,;:!?)]}\"'`"
_WORDISH = re.compile(rb"[A-Za-z\x80-\xff][a-z\x80-\xff]*")
"""A word as prose writes it (lower case, maybe capitalised): not a password by its look."""

_PAIR_LEAD = (
    b"log in ",
    b"login ",
    b"log in with",
    b"login with",
    b"log in as",
    b"login as",
    b"sign in with",
    b"sign in as",
    b"signin with",
    b"logged in as",
    b"creds",
    b"credentials",
    b"user/pass",
    b"username/password",
    b"login/password",
)
_PAIR = re.compile(
    rb"(?:log ?in|sign ?in|logged in|creds|credentials|user/pass(?:word)?|username/password|login/password)"
    rb"(?:[ \t]+(?:with|as|using|are|is)|[ \t]*[:=]|(?<=[Ii][Nn])(?=[ \t]+[\w.@+-]{1,64}[ \t]+/[ \t]))"
    rb"[ \t]*(?P<user>[\w.@+-]{1,64})[ \t]*(?P<sep>/|:)[ \t]*"
    rb"(?P<v>[^\s\"'`]{1,128})",
    re.IGNORECASE,
)


def _prose(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if low[start:end] in _SHORT_NAMES:
        end = start + 2  # "pw is", "pw:", "pw for ...": the rest is matched below
    if (start and buf[start - 1] in _GLUED) or buf[end : end + 1] not in _AFTER_NAME:
        return 0  # ``DB_PASSWORD``, ``--password``, ``"password":``: a name in code, the other rules'

    m = _PROSE.match(buf, end) or _PROSE_BARE.match(buf, end)
    if m is None:
        return 0
    if m.re is _PROSE and m.group("colon") and not m.group("filler") and low[start:end] in _CODE_NAMES:
        return 0  # ``password: ...`` is an assignment: the generic rule's
    s, e = m.span("v")
    while e > s and buf[e - 1] in _TRAILING:
        e -= 1
    v = buf[s:e]
    quoted = bool(m.group("q"))
    if m.re is _PROSE_BARE and not quoted and _SENTENCE_END.match(buf, e) is None:
        return m.end()  # "password reset for user u_42 ...": a sentence goes on after it
    reason = value_verdict(v, Level.LITERAL_PASSWORD)
    if reason is None and not quoted and (_WORDISH.fullmatch(v) or is_reference(v)):
        reason = Reason.WORDS
    out.append((s, e, "password", CONTEXT) if reason is None else kept(s, e, "password", reason))
    return e


def _pair(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _PAIR.match(buf, start)
    if m is None:
        return 0
    s, e = m.span("v")
    while e > s and buf[e - 1] in _TRAILING:
        e -= 1
    v = buf[s:e]
    if m.group("sep") == b"/" and (v[:1] == b"/" or (_WORDISH.fullmatch(v) and buf[s - 1] == 47)):
        return m.end()  # a path (``login: src/auth``), not ``admin / hunter2`` or ``demo/Tr0ub4dor``
    if _WORDISH.fullmatch(v) and v[:1].isupper():
        return m.end()  # a name: "log in with GitHub / Google"
    reason = value_verdict(v, Level.LITERAL_PASSWORD)
    if reason is None and is_reference(v) and not v.isalpha():
        reason = Reason.REFERENCE
    out.append((s, e, "password", CONTEXT) if reason is None else kept(s, e, "password", reason))
    return e


_LABELLED_LEAD = (b"u:", b"usr:", b"user:", b"username:", b"login:")
_LABELLED = re.compile(  # "u: admin  p: hunter2!", "user: ops, pass: Tr0ub4dor" on one line
    rb"(?:u|usr|user|username|login)[ \t]*:[ \t]*[\w.@+-]{1,64}[ \t]*[,;|/]?[ \t]+"
    rb"(?:p|pw|pwd|pass|passwd|password)[ \t]*[:=][ \t]*(?P<v>[^\s\"'`\\]{3,128})",
    re.IGNORECASE,
)


def _labelled(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if start and buf[start - 1] in _GLUED:
        return 0  # ``menu:``, ``self.user:``: a word or a name in code
    m = _LABELLED.match(buf, start)
    if m is None:
        return 0
    s, e = m.span("v")
    while e > s and buf[e - 1] in _TRAILING:
        e -= 1
    v = buf[s:e]
    reason = value_verdict(v, Level.LITERAL_PASSWORD)
    if reason is None and is_reference(v):
        reason = Reason.REFERENCE
    out.append((s, e, "password", CONTEXT) if reason is None else kept(s, e, "password", reason))
    return e


def prose_rules() -> list[ScanRule]:
    return [
        ScanRule("password", tuple(a.lower() for a in _NAME_ANCHORS), _prose),
        ScanRule("password", _PAIR_LEAD, _pair),
        ScanRule("password", _LABELLED_LEAD, _labelled),
    ]
