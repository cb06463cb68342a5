"""Secrets in base64: the blob piped to ``base64 -d`` (``echo ... | base64 --decode``,
``base64 -d <<< ...``), and any base64 blob that decodes to a secret of a known shape (a provider
token, a private key, a ``password=...`` line).

A blob decoding to a known shape starts with the base64 of that shape's prefix: the engine finds
those encoded prefixes as anchors (``Z2hwX`` is ``ghp_``), decodes the blob and runs the rules on
what it decodes to. A blob piped to ``base64 -d`` is the secret when what it decodes to is not
ordinary text (words without digits or symbols).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from pipeline.redaction.filters import Level, value_verdict
from pipeline.redaction.model import CONTEXT, Candidate, Scan, ScanRule, kept
from pipeline.redaction.reasons import Reason

_B64 = re.compile(rb"[A-Za-z0-9+/_-]{8,16384}={0,2}")
_B64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-=")
MIN_BLOB = 8
MAX_DEPTH = 1
"""Base64 inside base64 is decoded once more at most."""

# What a decoded blob may start with: prefixes of secrets (their base64 is the anchor).
_DECODED_PREFIXES = (
    b"ghp_",
    b"gho_",
    b"ghs_",
    b"ghu_",
    b"github_pat_",
    b"glpat-",
    b"sk-ant-",
    b"sk-proj-",
    b"sk-",
    b"sk_live_",
    b"xoxb-",
    b"xoxp-",
    b"AKIA",
    b"ASIA",
    b"AIza",
    b"npm_",
    b"hf_",
    b"eyJ",
    b"-----BEGIN",
    b"password",
    b"PASSWORD",
    b"aws_secret_access_key",
    b"AWS_SECRET_ACCESS_KEY",
    b"api_key",
    b"API_KEY",
    b"token",
    b"TOKEN",
    b"secret",
    b"SECRET",
    # a URL: its userinfo may hold a password (``https://user:pw@host`` encoded whole)
    b"https://",
    b"http://",
    b"ftp://",
    b"sftp://",
    b"smtp://",
    b"smtps://",
    b"postgres",
    b"mysql://",
    b"mongodb",
    b"redis://",
    b"amqp://",
)


def _encoded_prefix(prefix: bytes) -> bytes:
    """The base64 characters fixed by ``prefix`` at the start of a blob (whole 3-byte groups)."""
    n = len(prefix) // 3 * 3
    return base64.b64encode(prefix[:n])


_ENCODED = {_encoded_prefix(p): p for p in _DECODED_PREFIXES if len(p) >= 3}

Finder = Callable[[bytes], bool]
"""Does this decoded text hold a secret? (the engine's own rules, handed in: no import cycle)"""


def _decode(blob: bytes) -> bytes | None:
    core = blob.rstrip(b"=")
    if len(core) < MIN_BLOB:
        return None
    alt = b"-" in core or b"_" in core
    try:
        raw = (base64.urlsafe_b64decode if alt else base64.b64decode)(core + b"=" * (-len(core) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw


_PRINTABLE = bytes(range(32, 127)) + b"\t\n\r"


def _printable(raw: bytes) -> bool:
    return not raw.translate(None, _PRINTABLE)


def _blob_at(buf: bytes, start: int) -> tuple[int, int] | None:
    if start and buf[start - 1] in _B64_CHARS and buf[start - 1] != 61:  # ``NAME=<blob>`` starts one
        return None
    m = _B64.match(buf, start)
    return None if m is None else m.span()


def _known_shape(finder: Finder) -> Scan:
    def scan(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
        """A blob starting with the base64 of a secret's prefix: a secret when it decodes to one."""
        span = _blob_at(buf, start)
        if span is None:
            return 0
        s, e = span
        if buf[s:end] not in _ENCODED:  # the anchor matched case-insensitively
            return e
        raw = _decode(buf[s:e])
        if raw is not None and _printable(raw) and finder(raw):
            out.append((s, e, "base64-secret", CONTEXT))
        return e

    return scan


_PIPED = re.compile(
    rb"(?:echo(?:[ \t]+-[neE]+)*|printf(?:[ \t]+%s)?|<<<)[ \t]+(?P<q>\\*[\"']?)(?P<v>[A-Za-z0-9+/_-]{4,16384}={0,2})"
    rb"(?P=q)[ \t]*(?:\|[ \t]*)?base64[ \t]+(?:-d|-D|--decode)\b"
)
_HERE = re.compile(
    rb"base64[ \t]+(?:-d|-D|--decode)[ \t]*<<<[ \t]*(?P<q>\\*[\"']?)(?P<v>[A-Za-z0-9+/_-]{4,16384}={0,2})"
)
_LINE_BACK = 16384 + 64


_PROSE_TEXT = re.compile(rb"[A-Za-z][A-Za-z ,.!?'-]*")
"""Decoded text that reads as words (``Hello, World!``): not a secret."""
# ``kubectl get secret db -o jsonpath='{.data.password}' | base64 -d`` then its output, the secret,
# alone on the next line (maybe prefixed as a tool result's line).
_SECRET_COMMAND = re.compile(rb"kubectl[^\n]{0,300}\bsecrets?\b|\.data\.|\bsecret\b")
_OUTPUT_LINE = re.compile(
    rb"[ \t]*(?:\r?\n|\\+n)[ \t]*(?:\xe2\x94\x82|[|>#])?[ \t]*(?P<v>[^\s\"'`\\]{3,256})"
    rb"(?=[ \t]*(?:\r?\n|\\+[nr\"]|[\"'`]|$))"
)


def _judge(raw: bytes) -> Reason | None:
    """Why decoded bytes are not a secret (``None``: they are one)."""
    if not _printable(raw):
        return None if len(raw) >= MIN_BLOB else Reason.TOO_SHORT
    text = raw.strip()
    if b" " in text and _PROSE_TEXT.fullmatch(text):
        return Reason.WORDS
    return value_verdict(text, Level.PASSWORD)


def _piped(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``echo <blob> | base64 -d``: the blob is a secret unless it decodes to ordinary words."""
    lo = max(buf.rfind(b"\n", max(0, start - _LINE_BACK), start) + 1, start - _LINE_BACK, 0)
    found = [m for m in _PIPED.finditer(buf, lo, min(len(buf), end + 16)) if m.end() >= end - 2]
    here = _HERE.match(buf, start)
    if here is not None:
        found.append(here)
    for m in found:
        s, e = m.span("v")
        raw = _decode(m.group("v"))
        if raw is None:
            continue
        reason = _judge(raw)
        out.append(
            (s, e, "base64-secret", CONTEXT) if reason is None else kept(s, e, "base64-secret", reason)
        )
    if not found and _SECRET_COMMAND.search(buf, lo, start):
        shown = _OUTPUT_LINE.match(buf, end)
        if shown is not None:
            s, e = shown.span("v")
            reason = value_verdict(shown.group("v"), Level.PASSWORD)
            out.append(
                (s, e, "base64-secret", CONTEXT) if reason is None else kept(s, e, "base64-secret", reason)
            )
    return end


def encoded_rules(finder: Finder) -> list[ScanRule]:
    """``finder`` says whether decoded text holds a secret (the engine runs its rules on it)."""
    return [
        ScanRule("base64-secret", tuple(dict.fromkeys(k.lower() for k in _ENCODED)), _known_shape(finder)),
        ScanRule("base64-secret", (b"base64 -d", b"base64 --decode"), _piped),
    ]
