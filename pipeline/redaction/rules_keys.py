"""Private keys outside a PEM armour: base64 DER (PKCS#1, PKCS#8 plain or encrypted, SEC1, PKCS#12,
an OpenSSH key's body), Nostr ``nsec1`` keys (bech32), BIP-32 extended private keys and Bitcoin
WIF keys (base58check) next to a key word.

DER is recognised by what makes it private, not by a list of files: the structure's own markers
(a version number before the algorithm, which a public key does not have; an encrypted key's
PBES2 identifier; PKCS#12's version 3) sit at fixed places in the encoding, so their base64 is
known at each of the three alignments and the engine finds it as an anchor. The blob is then
decoded and the marker checked where it must be.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from pipeline.redaction.filters import enough_distinct
from pipeline.redaction.model import STRUCTURE, Candidate, ScanRule

NAME = "private-key"
_B64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_B64_MASK = bytes(97 if c in _B64_CHARS else 32 for c in range(256))  # base64 -> "a", others -> " "
_B64_RUN = re.compile(rb"[A-Za-z0-9+/=]+")
MIN_DER_BLOB = 44
"""The shortest base64 DER private key (an Ed25519 PKCS#8 key is 48 characters)."""
MAX_BLOB = 16384

# What marks a DER structure as private key material (searched within its first bytes).
_MARKERS = (
    bytes.fromhex("020100300d06092a864886f70d0101010500"),  # PKCS#8, RSA: version 0, rsaEncryption
    bytes.fromhex("02010030130607 2a8648ce3d0201".replace(" ", "")),  # PKCS#8, EC
    bytes.fromhex("020100300506032b6570"),  # PKCS#8, Ed25519
    bytes.fromhex("020101300506032b6570"),  # PKCS#8 v2, Ed25519
    bytes.fromhex("020100300506032b656e"),  # PKCS#8, X25519
    bytes.fromhex("020100300506032b6571"),  # PKCS#8, Ed448
    bytes.fromhex("06092a864886f70d01050d"),  # encrypted PKCS#8 (PBES2)
    bytes.fromhex("060a2a864886f70d010c0103"),  # PKCS#12 shrouded key (pbeWithSHAAnd3-KeyTripleDES)
    bytes.fromhex("0201033082"),  # PKCS#12: version 3
    bytes.fromhex("0201033080"),
    bytes.fromhex("0201033081"),
    bytes.fromhex("0201033083"),
    bytes.fromhex("0201000282"),  # PKCS#1, RSA: version 0, then the modulus
    bytes.fromhex("0201000281"),
    b"openssh-key-v1\x00",  # an OpenSSH private key's body without its armour
    bytes.fromhex("30770201010420"),  # SEC1 EC keys: version 1, then the private key (P-256)
    bytes.fromhex("30740201010420"),  # secp256k1
    bytes.fromhex("3081a40201010430"),  # P-384
    bytes.fromhex("3081dc0201010442"),  # P-521
)
_DER_LOOKAHEAD = 40
"""A marker counts only within this many bytes of the blob's start (past the outer header)."""


def _encoded_variants(marker: bytes) -> list[bytes]:
    """The base64 text ``marker`` becomes at each of the three alignments (only the characters it
    fixes whole), lower-cased as anchors."""
    out = []
    for shift in range(3):
        padded = b"\x00" * shift + marker
        text = base64.b64encode(padded[: len(padded) // 3 * 3])
        # characters that mix a padding byte with the marker's are not fixed: drop them
        lead = (shift * 8 + 5) // 6
        core = text[lead:]
        if len(core) >= 6:
            out.append(core.lower())
    return out


_DER_ANCHORS = tuple(dict.fromkeys(v for m in _MARKERS for v in _encoded_variants(m)))


def _blob(buf: bytes, start: int, end: int) -> tuple[int, int]:
    lo = max(0, start - _DER_LOOKAHEAD * 2)
    s = lo + 1 + buf[lo:start].translate(_B64_MASK).rfind(b" ")
    eq = buf.rfind(b"=", s, start)  # ``NAME_BASE64=MIIK...``: padding ends a blob, never starts one
    if eq >= 0:
        s = eq + 1
    m = _B64_RUN.match(buf, end, min(len(buf), end + MAX_BLOB))
    return s, end if m is None else m.end()


def _der(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    s, e = _blob(buf, start, end)
    if e - s < MIN_DER_BLOB or (s and buf[s - 1] in b"-_"):
        return e
    head = buf[s : s + (_DER_LOOKAHEAD + 30) // 3 * 4]
    core = head.rstrip(b"=")
    try:
        raw = base64.b64decode(core[: len(core) // 4 * 4], validate=True)
    except (binascii.Error, ValueError):
        return e
    if raw[:1] != b"0" and not raw.startswith(b"openssh-key-v1"):
        return e  # DER starts with a SEQUENCE (0x30)
    window = raw[:_DER_LOOKAHEAD]
    if any(m in window for m in _MARKERS):
        out.append((s, e, NAME, STRUCTURE))
    return e


_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_NSEC = re.compile(rb"nsec1[02-9ac-hj-np-z]{58}(?![0-9a-z])")
_XPRV = re.compile(rb"[xtyzuv]prv[1-9A-HJ-NP-Za-km-z]{100,112}(?![1-9A-Za-z])")
_B58 = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_WIF = re.compile(rb"(?<![1-9A-Za-z])[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}(?![1-9A-Za-z])")
WIF_WINDOW = 200


def _nsec(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _NSEC.match(buf, start)
    if m is None or (start and buf[start - 1 : start].isalnum()):
        return 0
    if enough_distinct(m.group(0)[5:], 12):
        out.append((*m.span(), NAME, STRUCTURE))
    return m.end()


def _xprv(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _XPRV.match(buf, start)
    if m is None or (start and buf[start - 1 : start].isalnum()):
        return 0
    out.append((*m.span(), NAME, STRUCTURE))
    return m.end()


def base58check(value: bytes) -> bool:
    """Does ``value`` decode as base58 with a valid 4-byte double-SHA-256 checksum?"""
    n = 0
    for c in value:
        i = _B58.find(bytes((c,)))
        if i < 0:
            return False
        n = n * 58 + i
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    raw = b"\x00" * (len(value) - len(value.lstrip(b"1"))) + raw
    if len(raw) < 5:
        return False
    body, check = raw[:-4], raw[-4:]
    return hashlib.sha256(hashlib.sha256(body).digest()).digest()[:4] == check


def _wif(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A WIF key near a word naming one: base58check decides (a random string fails it)."""
    hi = min(len(buf), end + WIF_WINDOW)
    for m in _WIF.finditer(buf, end, hi):
        if base58check(m.group(0)):
            out.append((*m.span(), NAME, STRUCTURE))
    return hi


_HEX_KEY_ARG = re.compile(rb"\([ \t]*\\*[\"'`]?(?P<v>(?:0x)?[0-9a-fA-F]{64})(?![0-9A-Za-z])")


def _hex_key_arg(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``new Wallet("0x<64 hex>")``, ``privateKeyToAccount(...)``: a raw private key handed to the
    constructor that takes one."""
    m = _HEX_KEY_ARG.match(buf, end - 1)
    if m is not None and enough_distinct(m.group("v"), 10):
        out.append((*m.span("v"), NAME, STRUCTURE))
    return 0


_BYTE_ARRAY = re.compile(
    rb"\[[ \t]*(?P<v>(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])[ \t]*,[ \t]*){31,63}"
    rb"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))[ \t]*\]"
)
_KEY_LENGTHS = (32, 64)


def _byte_array(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A key's raw bytes as a JSON array of 32 or 64 numbers from 0 to 255 (a Solana or NaCl
    keypair file, a seed): random bytes of a key's length, which no other list has."""
    m = _BYTE_ARRAY.match(buf, start)
    if m is None:
        return 0
    numbers = m.group("v").split(b",")
    if len(numbers) in _KEY_LENGTHS and len(set(numbers)) >= len(numbers) // 2:
        out.append((*m.span("v"), NAME, STRUCTURE))
    return m.end()


def key_rules() -> list[ScanRule]:
    return [
        ScanRule(NAME, tuple(b"[" + bytes([d]) for d in b"0123456789"), _byte_array),
        ScanRule(NAME, _DER_ANCHORS, _der),
        ScanRule(NAME, (b"nsec1",), _nsec),
        ScanRule(
            NAME,
            (
                b"wallet(",
                b"privatekeytoaccount(",
                b"signingkey(",
                b"fromsecretkey(",
                b"privatekey(",
                b"signer(",
            ),
            _hex_key_arg,
        ),
        ScanRule(NAME, (b"xprv", b"tprv", b"yprv", b"zprv"), _xprv),
        ScanRule(NAME, (b"wif", b"privkey", b"private key", b"secret key", b"importprivkey"), _wif),
    ]
