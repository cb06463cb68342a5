"""Tokens known by their shape alone: a short prefix, a separator, a long random body
(``phx_<43 random>``, ``mlsn.<64 hex>``, ``sgp_<16 hex>_<40 hex>``, ``os_v2_app_<base32>``),
whoever issued them. No list of vendors: the prefix is any short word in one case (with short
version or kind segments after it), and the body must be long and random in its alphabet.

No literal anchors such a token, so this rule sweeps the text once for a separator followed by 32
token characters (two literal-led searches, which the regex engine runs at memchr speed) and
judges each hit. Look-alikes that have the shape are kept: object ids are shorter (``cus_``,
``pi_``, ``chatcmpl-``: 14 to 29 characters), a response id's hex is 48 characters (a hex body
must be longer, or follow a hex segment), a prefix naming a hash or an id says what the body is.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import enough_distinct, is_placeholder
from pipeline.redaction.model import CONTEXT, Candidate, SweepRule
from pipeline.redaction.placeholders import is_documented_example
from pipeline.redaction.rules_nearby import PREFIXED_NAME, body_random

_HITS = (re.compile(rb"_[A-Za-z0-9]{32}"), re.compile(rb"\.[A-Za-z0-9]{32}"))
_TOKEN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_BACK = 32
"""How long a prefix (with its segments) may be."""
_BODY = re.compile(rb"[A-Za-z0-9_-]{32,512}+(?![A-Za-z0-9+/=.])")
_PREFIX = re.compile(rb"(?:[a-z]{2,12}|[A-Z]{2,12})(?:[_.-](?:[A-Za-z0-9]{1,6}|[0-9a-f]{12,24}))*")
"""A word in one case, then short segments (a version, a kind: ``os_v2_app``) or a hex one."""
_HEX = re.compile(rb"[0-9a-f]+")
_HEX_SEGMENT = re.compile(rb"[_.-][0-9a-f]{12,24}(?![0-9A-Za-z])")
_BASE32_LOWER = re.compile(rb"[a-z2-7]+|[a-z0-9]+")
_HASH_OR_ID = re.compile(
    rb"(?i:sha[0-9]*|md5|blake[0-9a-z]*|hash|digest|checksum|sum|crc[0-9]*|etag|integrity|commit|rev|oid|id|"
    rb"uuid|guid|tx|txid|block|object|obj|file|path|img|image|data|cache|build|trace|span|session|nonce)"
)
"""A prefix segment that says the body is a hash or an id (``sha256_``, ``commit.``, ``trace_``)."""
MIN_HEX_BODY = 56
"""A bare hex body at least this long (a response id's is 48; a key's is 64)."""
MIN_LOWER_BODY = 40


def _judge(prefix: bytes, body: bytes) -> bool:
    if any(_HASH_OR_ID.fullmatch(seg) for seg in re.split(rb"[_.-]", prefix)):
        return False
    core = body.replace(b"_", b"").replace(b"-", b"")
    if _HEX.fullmatch(core):
        long_enough = len(core) >= MIN_HEX_BODY or _HEX_SEGMENT.search(prefix) is not None
        return long_enough and len(core) >= 40 and enough_distinct(core, 12)
    if _BASE32_LOWER.fullmatch(core):  # lower-case base32 or base36
        return (
            len(core) >= MIN_LOWER_BODY
            and any(48 <= c <= 57 for c in core)
            and enough_distinct(core, 16)
            and b"-" not in body
        )
    return body_random(body) and not is_placeholder(body)


def _sweep(buf: bytes, out: list[Candidate]) -> None:
    for hits in _HITS:
        for hit in hits.finditer(buf):
            sep = hit.start()
            s = sep
            lo = max(0, sep - _BACK)
            while s > lo and buf[s - 1] in _TOKEN_CHARS:
                s -= 1
            if s == lo and s and buf[s - 1] in _TOKEN_CHARS:
                continue  # inside a longer run: base64 data, a path, a long name
            prefix = _PREFIX.fullmatch(buf, s, sep)
            if prefix is None:
                continue
            body = _BODY.match(buf, sep + 1)
            if body is None or not _judge(buf[s:sep], body.group()):
                continue
            if not is_documented_example(buf[s : body.end()]):
                out.append((s, body.end(), PREFIXED_NAME, CONTEXT))


def shape_rules() -> list[SweepRule]:
    return [SweepRule(PREFIXED_NAME, _sweep)]
