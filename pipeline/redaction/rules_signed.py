"""Signatures that grant access on their own: the query parameters of presigned URLs (S3's
``X-Amz-Signature`` / ``X-Amz-Credential`` / ``X-Amz-Security-Token``, Google's
``X-Goog-Signature`` / ``X-Goog-Credential``, CloudFront's ``Signature``, any ``signature=`` or
``sig=`` with a random value) and the ``response`` of an HTTP Digest ``Authorization`` header.

Only the value goes: the URL keeps its host, path and every other parameter.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import has_digit, is_reference, token_body_ok
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule, kept
from pipeline.redaction.placeholders import is_placeholder_value
from pipeline.redaction.reasons import Reason

_PARAMS = (
    b"x-amz-signature=",
    b"x-amz-credential=",
    b"x-amz-security-token=",
    b"x-goog-signature=",
    b"x-goog-credential=",
    b"signature=",
    b"sig=",
)
_PARAM = re.compile(
    rb"(?<![A-Za-z0-9_-])(?P<name>(?i:x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature"
    rb"|x-goog-credential|signature|sig))=(?P<v>(?:[A-Za-z0-9._~+/=-]++|%[0-9A-Fa-f]{2})++)"
)
MIN_PARAM = 8
MIN_SIGNATURE = 16
"""A bare ``signature=`` or ``sig=`` value is one when at least this long, random and with a digit
(``signature=None``, ``sig=sign(payload)`` are code)."""
_PRESIGNED = frozenset(
    b"x-amz-signature x-amz-credential x-amz-security-token x-goog-signature x-goog-credential".split()
)


def _signed_param(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _PARAM.match(buf, start) if start == 0 or low[start - 1] in b"?&;\"' \t\n" else None
    if m is None:
        return 0
    s, e = m.span("v")
    v = m.group("v")
    if len(v) < MIN_PARAM:
        return e
    name = m.group("name").lower()
    if is_placeholder_value(v):
        out.append(kept(s, e, "signed-url", Reason.PLACEHOLDER))
    elif name in _PRESIGNED or (
        len(v) >= MIN_SIGNATURE and has_digit(v) and token_body_ok(v, 10) and not is_reference(v)
    ):
        out.append((s, e, "signed-url", CONTEXT))
    else:
        out.append(kept(s, e, "signed-url", Reason.NOT_RANDOM))
    return e


_DIGEST_WINDOW = 1024
_RESPONSE = re.compile(rb"(?<![A-Za-z0-9_-])response=\\*\"?(?P<v>[0-9a-fA-F]{32,128})(?![0-9a-fA-F])")


def _digest(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``Authorization: Digest username=..., response="<hash>"``: the hash answers the challenge."""
    hi = min(len(buf), end + _DIGEST_WINDOW)
    line_end = buf.find(b"\n", end, hi)
    hi = line_end if line_end >= 0 else hi
    for m in _RESPONSE.finditer(buf, end, hi):
        out.append((*m.span("v"), "digest-response", CONTEXT))
    return hi


def signed_rules() -> list[ScanRule]:
    return [
        ScanRule("signed-url", _PARAMS, _signed_param),
        ScanRule("digest-response", (b"digest username=", b"digest realm="), _digest),
    ]
