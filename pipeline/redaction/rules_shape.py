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

import base64
import binascii
import re

from pipeline.redaction.filters import enough_distinct, is_placeholder
from pipeline.redaction.model import CONTEXT, Candidate, SweepRule
from pipeline.redaction.placeholders import is_documented_example
from pipeline.redaction.rules_nearby import PREFIXED_NAME, body_random, camel_words

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


_INSIDE = (b":", b"/", b"+", b"=", b"@", b"%")
_ID_PART = re.compile(rb"[A-Za-z0-9]{12,40}")
_ID_RUN = re.compile(rb"[A-Za-z0-9]{12,40}|[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{4,8}")
"""What an id part may be (``_id_and_secret`` judges it): a random run, or an owner id and a stamp."""
_OWNER_PART = re.compile(rb"(?P<id>[A-Za-z0-9_-]{16,32})\.[A-Za-z0-9_-]{4,8}")
_DIGITS = re.compile(rb"[0-9]{15,20}")
MIN_ID_BODY = 32


def _id_and_secret(prefix: bytes, body: bytes) -> bool:
    """A token of an id part and a secret part (``<id>.<secret>``), no word before them: the id
    random in both cases (``tknA9xQ...``), or a numeric owner id in base64 then a short stamp
    (``<base64 of 1234...>.<stamp>.<secret>``); the secret long and random."""
    if len(body) < MIN_ID_BODY:
        return False
    owner = _OWNER_PART.fullmatch(prefix)
    if owner is not None:
        raw = owner.group("id")
        try:
            decoded = base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
        except (binascii.Error, ValueError):
            return False
        return _DIGITS.fullmatch(decoded) is not None and body_random(body)
    if _ID_PART.fullmatch(prefix) is None or camel_words(prefix):
        return False
    upper = sum(1 for c in prefix if 65 <= c <= 90)
    lower = sum(1 for c in prefix if 97 <= c <= 122)
    if upper < 2 or lower < 2 or not enough_distinct(prefix, 10):
        return False
    core = body.replace(b"_", b"").replace(b"-", b"")
    if _HEX.fullmatch(core):
        return len(core) >= MIN_HEX_BODY + 8 and enough_distinct(core, 12)  # a key's 64 hex digits
    return body_random(body)


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
            named = _PREFIX.fullmatch(buf, s, sep) is not None
            if not named and (buf[s - 1 : s] in _INSIDE or _ID_RUN.fullmatch(buf, s, sep) is None):
                continue  # neither a prefix nor an id part (which starts a token: not after ``:``, ``/``)
            body = _BODY.match(buf, sep + 1)
            if body is None:
                continue
            if not (_judge if named else _id_and_secret)(buf[s:sep], body.group()):
                continue
            if not is_documented_example(buf[s : body.end()]):
                out.append((s, body.end(), PREFIXED_NAME, CONTEXT))


# A secret after its owner's numeric ids and a colon (``<bot id>:<secret>``,
# ``<n>/<account id>/<app id>:<secret>``): one literal-led search for a colon then a token's run.
_COLON_HIT = re.compile(rb":[A-Za-z0-9_-]{30}")
_IDS = re.compile(rb"(?:[0-9]{1,20}/){0,3}[0-9]{6,20}")
_IDS_BACK = 72
_COLON_BODY = re.compile(rb"[A-Za-z0-9_-]{30,256}+(?![A-Za-z0-9+=.:@])")
_ID_LEFT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:+=-")
_LETTER_THEN = re.compile(rb"[A-Za-z]+\Z")
ID_COLON_NAME = "id-token"


def _colon_sweep(buf: bytes, out: list[Candidate]) -> None:
    for hit in _COLON_HIT.finditer(buf):
        colon = hit.start()
        s = colon
        lo = max(0, colon - _IDS_BACK)
        while s > lo and (48 <= buf[s - 1] <= 57 or buf[s - 1] == 47):
            s -= 1
        if _IDS.fullmatch(buf, s, colon) is None:
            continue
        if s and buf[s - 1] in _ID_LEFT and _LETTER_THEN.search(buf, max(0, s - 8), s) is None:
            continue  # inside a longer value (a timestamp, an address); ``bot<id>:`` is a word's
        body = _COLON_BODY.match(buf, colon + 1)
        if body is None:
            continue
        v = body.group()
        core = v.replace(b"_", b"").replace(b"-", b"")
        ok = (len(core) >= 32 and enough_distinct(core, 12)) if _HEX.fullmatch(core) else body_random(v)
        if ok and not is_documented_example(buf[s : body.end()]):
            out.append((s, body.end(), ID_COLON_NAME, CONTEXT))  # the ids are the token's too


def shape_rules() -> list[SweepRule]:
    return [SweepRule(PREFIXED_NAME, _sweep), SweepRule(ID_COLON_NAME, _colon_sweep)]
