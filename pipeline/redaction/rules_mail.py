"""Passwords in mail programs' and servers' own syntaxes that are not ``name = value`` (a
keyword line, ``Pass ...``, is the assignment rule's: ``rules_generic``):

- a passwd-file or directory entry whose scheme tag says the password is stored in clear
  (``{PLAIN}``, ``{CLEARTEXT}``; a hashed scheme's value is a hash and is kept);
- sendmail's ``AuthInfo`` fields, whose ``P`` field is the password.

Each value is judged as a literal password (a configuration file holds no variables).
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import Level
from pipeline.redaction.model import Candidate, ScanRule

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
        ScanRule("password", (b"{plain}", b"{cleartext}", b"{clear}", b"{plaintext}"), _clear_scheme),
        ScanRule("password", (b"authinfo",), _authinfo),
    ]
