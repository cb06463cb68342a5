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


_HEX_BYTE = rb"0[xX][0-9a-fA-F]{2}"
_GUTTER = rb"(?:(?:\r?\n|\\+n)[ \t]*(?:[0-9]{1,6}(?:\t|\\+t|[ \t]*\xe2\x94\x82)|\+)?(?:[ \t]|\\+t)*)?"
"""A line break inside an array, and the line-number gutter or diff mark a tool printed before the next line."""
_HEX_BYTE_GAP = rb",[ \t]*" + _GUTTER
_HEX_ARRAY = re.compile(
    rb"[\[{(][ \t]*" + _GUTTER + rb"(?P<v>" + _HEX_BYTE + rb"(?:" + _HEX_BYTE_GAP + _HEX_BYTE + rb"){15,127})"
)
_HEX_ARRAY_BACK = 200
_HEX_BYTES = re.compile(_HEX_BYTE)
_KEY_WORDS = re.compile(rb"(?i:key|secret|seed|private|priv|sk)(?![a-z])")


def _hex_byte_array(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A key's raw bytes in code (``[]byte{0x03, 0x3a, ...}``, ``uint8_t sk[64] = {0xd1, ...}``):
    32 or 64 random bytes, or 16 and more under a key's name."""
    lo = max(0, start - _HEX_ARRAY_BACK)
    opened = max(buf.rfind(b"{", lo, start), buf.rfind(b"[", lo, start), buf.rfind(b"(", lo, start))
    if opened < 0:
        return 0
    m = _HEX_ARRAY.match(buf, opened)
    if m is None or m.end() < end:
        return 0
    numbers = _HEX_BYTES.findall(m.group("v"))
    named = _KEY_WORDS.search(buf, max(0, opened - 80), opened) is not None
    if (len(numbers) in _KEY_LENGTHS or named) and len({n.lower() for n in numbers}) >= len(numbers) // 2:
        out.append((*m.span("v"), NAME, STRUCTURE))
    return m.end()


# Key containers known by the magic bytes they start with, found in their base64 (``base64 -w0
# release.jks``): Java keystores (JKS, JCEKS), Tor's hidden-service secret key, minisign's and
# signify's secret keys.
_CONTAINER_MAGICS = (
    b"\xfe\xed\xfe\xed",
    b"\xce\xce\xce\xce",
    b"== ed25519v1-secret: type0 ==",
    b"EdScB2",
    b"Ed\x00\x00B2",
    b"EdBK",
)
MIN_CONTAINER_BLOB = 40


def _magic_prefix(magic: bytes) -> bytes:
    """The base64 characters ``magic`` fixes at the start of a blob (lower-cased: an anchor)."""
    return base64.b64encode(magic)[: len(magic) * 8 // 6].lower()


_CONTAINER_ANCHORS = tuple(_magic_prefix(m) for m in _CONTAINER_MAGICS)


def _blob_starts(buf: bytes, start: int) -> bool:
    """Can a base64 blob start at ``start``: not inside a longer run, but after ``NAME=``, an
    escaped line break or tab (``\\n`` in JSON), or a diff's ``+``."""
    before = buf[start - 1]
    if before not in _B64_CHARS or before == 61:
        return True
    two = buf[max(0, start - 2) : start]
    return two[:1] == b"\\" or (before == 43 and (start < 2 or buf[start - 2] in b"\r\n" or two == b"n+"))


def _container(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if start and not _blob_starts(buf, start):
        return 0
    m = _B64_RUN.match(buf, start, min(len(buf), start + MAX_BLOB))
    if m is None or m.end() - start < MIN_CONTAINER_BLOB:
        return 0
    try:
        raw = base64.b64decode(buf[start : start + 40], validate=True)
    except (binascii.Error, ValueError):
        return m.end()
    if raw.startswith(_CONTAINER_MAGICS):
        out.append((start, m.end(), NAME, STRUCTURE))
    return m.end()


_SIGNING_KEY_LINE = re.compile(
    rb"ed25519[ \t]+[A-Za-z0-9_]{1,32}[ \t]+(?P<v>[A-Za-z0-9+/]{43})(?![A-Za-z0-9+/=])"
)


def _signing_key_line(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A Matrix homeserver's signing key file: ``ed25519 <key id> <32-byte seed, unpadded base64>``
    (a public key is never written so; an OpenSSH key line is ``ssh-ed25519 AAAA...``)."""
    if start and buf[start - 1 : start] in (b"-", b"_"):
        return 0
    m = _SIGNING_KEY_LINE.match(buf, start)
    if m is not None and enough_distinct(m.group("v"), 16):
        out.append((*m.span("v"), NAME, STRUCTURE))
        return m.end()
    return 0


_BECH32_DATA = re.compile(rb"[02-9ac-hj-np-z]{38,200}(?![0-9a-z])")
_HRP_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
MAX_HRP = 24
_SECRET_HRP = re.compile(rb"(?:^|[_-])sk$|priv|sec")
"""A human-readable part that says secret: a secret key (``..._sk``), a private key, a secret."""
_BECH32_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
_BECH32_CONSTANTS = (1, 0x2BC830A3)  # bech32, bech32m
_BECH32_VALUE = {ord(c): i for i, c in enumerate(_BECH32)}


def _xor(top: int) -> int:
    """The generator terms the checksum's top five bits select, XORed (a table replaces the loop)."""
    out = 0
    for i, g in enumerate(_BECH32_GEN):
        if top >> i & 1:
            out ^= g
    return out


_BECH32_TOP = tuple(_xor(top) for top in range(32))


def bech32_valid(hrp: bytes, data: bytes) -> bool:
    """Does ``hrp`` ``1`` ``data`` (lower case) carry a valid bech32 or bech32m checksum?"""
    chk = 1
    values = [c >> 5 for c in hrp] + [0] + [c & 31 for c in hrp] + [_BECH32_VALUE[c] for c in data]
    for v in values:
        chk = ((chk & 0x1FFFFFF) << 5 ^ v) ^ _BECH32_TOP[chk >> 25]
    return chk in _BECH32_CONSTANTS


def _bech32_secret(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A bech32 string whose human-readable part says secret (``ed25519e_sk1...``,
    ``suiprivkey1...``), its checksum valid: a wallet's or a node's secret key in its own encoding."""
    m = _BECH32_DATA.match(low, end)
    if m is None:
        return 0
    lo = end - 1
    while lo > 0 and end - lo <= MAX_HRP and low[lo - 1] in _HRP_CHARS:
        lo -= 1
    if end - lo > MAX_HRP or (lo and low[lo - 1] in b"+/"):
        return m.end()  # inside a longer run (base64, a hash): not a name
    for s in (lo, lo + 1):  # ``\nfoo_sk1...``: an escaped line break is not the name's
        hrp = low[s : end - 1]
        if hrp and _SECRET_HRP.search(hrp) and bech32_valid(hrp, m.group(0)):
            out.append((s, m.end(), NAME, STRUCTURE))
            return m.end()
    return m.end()


_B58_RUN = re.compile(rb"[1-9A-HJ-NP-Za-km-z]{51,}")
_B58_BYTES = frozenset(b"123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0")
"""Base58's alphabet and the letters it leaves out (a run holding them is no base58 run)."""
_B58_KEY_LENGTHS = frozenset((51, 52, 86, 87, 88))
"""A WIF key's length (51 or 52 characters) or 64 bytes' (86 to 88)."""
_WIF_FIRST = frozenset((b"5", b"K", b"L", b"c", b"9"))
_KEYPAIR_CHARS = 86
_KEYPAIR_BYTES = 64


def _b58_bytes(value: bytes) -> int:
    n = 0
    for c in value:
        n = n * 58 + _B58.index(c)
    return (n.bit_length() + 7) // 8 + len(value) - len(value.lstrip(b"1"))


def _key_word_window(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """Near a word naming a private key: a WIF key (base58check decides: a random string fails
    it), or 64 bytes in base58 (an Ed25519 keypair as Solana's tools print it)."""
    hi = min(len(buf), end + WIF_WINDOW)
    for m in _B58_RUN.finditer(buf, end, hi):
        s, e = m.span()
        if s and buf[s - 1] == 92 and buf[s] in b"nrt":
            s += 1  # ``\n5Kd...``: the escape's letter is not the key's
        elif s and buf[s - 1] in _B58_BYTES:
            continue  # the window cut a longer run
        v = buf[s:e]
        if len(v) not in _B58_KEY_LENGTHS or (e < len(buf) and buf[e] in _B58_BYTES):
            continue
        if len(v) < _KEYPAIR_CHARS:
            found = v[:1] in _WIF_FIRST and base58check(v)
        else:
            found = _b58_bytes(v) == _KEYPAIR_BYTES and enough_distinct(v, 20)
        if found:
            out.append((s, e, NAME, STRUCTURE))
    return hi


_XML_MEMBER = re.compile(rb"<(?P<t>d|p|q|dp|dq|inverseq)>(?P<v>[A-Za-z0-9+/]{40,4096}={0,2})</(?P=t)>", re.I)
_XML_KEY_BACK = 8192


def _xml_private_member(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """.NET's ``<RSAKeyValue>``: the private members (``D``, ``P``, ``Q``, ``DP``, ``DQ``,
    ``InverseQ``) of a key element that holds a ``Modulus``."""
    m = _XML_MEMBER.match(buf, start)
    if m is None:
        return 0
    if low.rfind(b"<modulus>", max(0, start - _XML_KEY_BACK), start) >= 0:
        out.append((*m.span("v"), NAME, STRUCTURE))
    return m.end()


def key_rules() -> list[ScanRule]:
    return [
        ScanRule(NAME, (b", 0x", b",0x"), _hex_byte_array),
        ScanRule(NAME, _CONTAINER_ANCHORS, _container),
        ScanRule(NAME, (b"ed25519 ",), _signing_key_line),
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
        ScanRule(
            NAME, (b"wif", b"privkey", b"private key", b"secret key", b"importprivkey"), _key_word_window
        ),
        ScanRule(NAME, (b"sk1", b"key1", b"sec1"), _bech32_secret),
        ScanRule(NAME, (b"<d>", b"<p>", b"<q>", b"<dp>", b"<dq>", b"<inverseq>"), _xml_private_member),
    ]
