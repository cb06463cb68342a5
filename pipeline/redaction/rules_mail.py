"""Passwords in mail programs' and servers' own syntaxes that are not ``name = value``:

- a configuration line of a keyword, blanks and one value (``Pass ...`` in a sync client's file,
  ``SmtpPassword ...``, ``smtp_pass ...``; as in ssh_config, mbsync, msmtp, Apache), where the
  keyword's name says password or secret, the keyword opens its line (after indentation, a diff's
  ``+`` or a line-number gutter) and the value is the rest of it;
- a passwd-file or directory entry whose scheme tag says the password is stored in clear
  (``{PLAIN}``, ``{CLEARTEXT}``; a hashed scheme's value is a hash and is kept);
- sendmail's ``AuthInfo`` fields, whose ``P`` field is the password.

Each value is judged as a literal password (a configuration file holds no variables).
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import Level
from pipeline.redaction.model import Candidate, ScanRule
from pipeline.redaction.rules_generic import classify

_GUTTER = rb"[ \t]*[0-9]{1,6}(?:\t|\\+t|\xe2\x86\x92|[ \t]*\xe2\x94\x82)"
_LINE_HEAD = re.compile(
    rb"(?:(?:\r?\n|\\+n|^)(?:" + _GUTTER + rb"|[+-](?![+-]))?|\\*\"" + _GUTTER + rb")[ \t]*\Z"
)
"""What may stand between a line's start and its keyword: blanks, a diff's mark, a line number
(a file's listing may open a JSON string)."""
_PLAIN_WORD = re.compile(rb"[A-Za-z][a-z]*")
"""A word alone ("Password changed"): a status line, not a value."""
_HEAD_BACK = 24
_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEYWORD_VALUE = re.compile(
    rb"[A-Za-z0-9_.-]*[ \t]+(?P<q>\\*[\"']?)(?P<v>[^\s\"'\\]{3,256})(?P=q)[ \t]*(?=\r?\n|\\+[nr]|\\*\"|$)"
)


def _keyword_line(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _KEYWORD_VALUE.match(buf, end)
    if m is None:
        return 0  # (most hits: the word in a sentence, a ``name=`` assignment)
    s = start
    while s > 0 and start - s < 64 and buf[s - 1] in _NAME_CHARS:
        s -= 1
    if s and buf[s - 1] == 92 and buf[s] in b"nrt":
        s += 1  # a JSON-escaped line break or tab, not the name's first letter
    if _LINE_HEAD.search(buf, max(0, s - _HEAD_BACK), s) is None:
        return 0
    name = buf[s : m.start("q")].rstrip()
    level = classify(name)
    if level is Level.PASSWORD:
        level = Level.LITERAL_PASSWORD
    if level is not None and level >= Level.SECRET and _PLAIN_WORD.fullmatch(m.group("v")) is None:
        out.append((*m.span("v"), "password", int(level)))
    return m.end()


_CLEAR_SCHEME = re.compile(rb"\{(?i:plain|cleartext|clear|plaintext)\}(?P<v>[^:\s\"'\\]{1,256})")


def _clear_scheme(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _CLEAR_SCHEME.match(buf, start)
    if m is None:
        return 0
    out.append((*m.span("v"), "password", int(Level.LITERAL_PASSWORD)))
    return m.end()


_AUTHINFO_LINE = re.compile(rb"[^\r\n]{0,400}?(?=\r?\n|\\+n|$)")
_AUTHINFO_P = re.compile(rb"\\*\"P[:=](?P<v>[^\"\\\r\n]{1,256})\\*\"")


def _authinfo(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    line = _AUTHINFO_LINE.match(buf, end)
    hi = end if line is None else line.end()
    for m in _AUTHINFO_P.finditer(buf, end, hi):
        out.append((*m.span("v"), "password", int(Level.LITERAL_PASSWORD)))
    return hi


def mail_rules() -> list[ScanRule]:
    return [
        ScanRule("password", (b"pass", b"pwd", b"secret"), _keyword_line),
        ScanRule("password", (b"{plain}", b"{cleartext}", b"{clear}", b"{plaintext}"), _clear_scheme),
        ScanRule("password", (b"authinfo",), _authinfo),
    ]
