"""A generated redaction corpus split leave-class-out into development halves and a held-out half.

Every class of case (a syntax, a language, a key encoding, a token family, a kind of look-alike)
belongs to exactly one split. ``dev.py`` holds the first development classes. ``eval.py`` was the
first evaluation half; its figures have been read, so it is now development material too (reported
as "dev-2 (looked at, now development)"). ``heldout.py`` was the first held-out half; it was measured
once and its figures read, so it is development material as well (reported as "dev-3 (looked at, now
development)"). ``heldout2.py`` was the second held-out half, measured once and looked at too
("dev-4"). ``heldout3.py`` holds new classes whose shapes none of the others hold, written without
reading the rules; it is the only held-out split. Rules are written against the development
splits only; the held-out split measures whether they generalise to shapes they were never shown.
Every split covers every family of issue 33 (values in credential slots, cookies and sessions,
tokens by shape, cloud keys, private keys, values split over lines, prose in other languages, mail
configuration, look-alikes), so a figure per family exists on each. Never tune a rule against
``heldout3.py``; once it has been looked at, relabel it as development and write a new one.

This module holds what the splits share and says nothing about any of them: the case record, the
seeded drawing of values (fake secrets only, random bodies, checksums valid where the format has
one), the spelling of names, and the transcript-like text a case is embedded in (a split may bring
its own framing). A class's generator returns its snippet with each secret piece (or the look-alike)
between ``MARK_OPEN`` and ``MARK_CLOSE``; ``build`` embeds it, strips the marks and records the
exact spans.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

MARK_OPEN = "\x01"
MARK_CLOSE = "\x02"
ALNUM = string.ascii_letters + string.digits
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
SEED = 0x33_6E_0A
T = TypeVar("T")


def mark(value: str) -> str:
    """``value`` marked as one secret piece (or as the look-alike that must be kept)."""
    return f"{MARK_OPEN}{value}{MARK_CLOSE}"


@dataclass(frozen=True)
class Case:
    half: str  # "dev" | "eval" (dev-2) | "heldout" (dev-3) | "heldout2" (dev-4) | "heldout3" (held out)
    family: str
    cls: str  # "family/subclass"
    kind: str  # "secret" | "lookalike"
    text: str
    spans: tuple[tuple[int, int], ...]  # the secret's pieces (several when split) or the look-alike

    @property
    def pieces(self) -> list[str]:
        return [self.text[a:b] for a, b in self.spans]


Frame = str  # "file" | "command" | "prose" | "http" | "inline"; a split's own framer may add kinds


@dataclass(frozen=True)
class Spec:
    """One class: its family, its name, whether its cases are secrets or look-alikes, how its
    snippet sits in a transcript, and the generator of one snippet."""

    family: str
    name: str
    kind: str
    frame: Frame
    make: Callable[[Draw], str]


class Draw:
    """Seeded values of the right shapes. All fake: random bodies, never a real credential."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def pick(self, items: Sequence[T]) -> T:
        return self.r.choice(items)

    def chars(self, n: int, alphabet: str = ALNUM) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def hex(self, n: int) -> str:
        return self.chars(n, HEX)

    def raw(self, n: int) -> bytes:
        return self.r.randbytes(n)

    def b64(self, n: int) -> str:
        return base64.b64encode(self.raw(n)).decode()

    def b64url(self, n: int) -> str:
        return base64.urlsafe_b64encode(self.raw(n)).rstrip(b"=").decode()

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{self.pick('89ab')}{h[17:20]}-{h[20:32]}"

    def password(self) -> str:
        """A password as people pick them: letters, digits, a symbol or two, 9 to 16 characters."""
        n = self.r.randint(9, 16)
        body = [self.pick(string.ascii_lowercase) for _ in range(n)]
        for _ in range(self.r.randint(1, 3)):
            body[self.r.randrange(n)] = self.pick(string.digits)
        body[self.r.randrange(n)] = self.pick(string.ascii_uppercase)
        if self.r.random() < 0.7:
            body[self.r.randrange(1, n)] = self.pick("!#%*@^~+-_.$")
        return "".join(body)

    def weak(self) -> str:
        """A weak but real password: a word and digits."""
        word = self.pick(["summer", "falcon", "orange", "tiger", "galaxy", "pepper", "rocket", "maple"])
        return word + self.chars(self.r.randint(2, 4), string.digits) + self.pick(["", "!", "#", "?"])

    def phrase(self) -> str:
        """A passphrase of pseudo-words (random syllables), joined by a dash or a space."""
        syll = [c + v for c in "bdfghklmnprstvz" for v in "aeiou"]
        words = ["".join(self.pick(syll) for _ in range(self.r.randint(2, 3))) for _ in range(4)]
        return self.pick(["-", " ", "."]).join(words)

    def pin(self) -> str:
        return self.chars(self.r.randint(4, 8), string.digits)

    def token(self, lo: int = 24, hi: int = 44, alphabet: str = ALNUM) -> str:
        return self.chars(self.r.randint(lo, hi), alphabet)

    def value(self) -> str:
        """A value for a credential slot: a password, a random token, hex or base64."""
        kind = self.r.randrange(4)
        if kind == 0:
            return self.password()
        if kind == 1:
            return self.token()
        if kind == 2:
            return self.hex(self.pick([32, 40, 64]))
        return self.b64(self.pick([24, 30, 32]))

    def user(self) -> str:
        return self.pick(["admin", "deploy", "svc_ci", "root", "app", "jenkins", "backup", "grafana", "ops"])

    def host(self) -> str:
        return self.pick(
            ["db.internal", "10.0.3.17", "prod-cache", "queue.corp.example", "nas.lan", "ci-runner-2"]
        )


# -- checksummed encodings (generic: each half uses what its own formats need) --


def base62_crc32(body: str, width: int = 6) -> str:
    """GitHub-style checksum: CRC-32 of the body in base 62, left-padded to ``width``."""
    crc = zlib.crc32(body.encode())
    digits = ""
    while crc:
        crc, rem = divmod(crc, 62)
        digits = B62[rem] + digits
    return digits.rjust(width, "0")


def base58check(payload: bytes) -> str:
    """Base58Check: payload plus the first four bytes of its double SHA-256."""
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, rem = divmod(n, 58)
        out = B58[rem] + out
    pad = len(data) - len(data.lstrip(b"\0"))
    return "1" * pad + out


def _bech32_polymod(values: list[int]) -> int:
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if ((top >> i) & 1) else 0
    return chk


def bech32(hrp: str, data: bytes, *, witness_version: int | None = None, const: int = 1) -> str:
    """Bech32 (``const`` 1) or Bech32m (``const`` 0x2BC830A3) of ``data`` with a valid checksum."""
    acc = bits = 0
    five: list[int] = [] if witness_version is None else [witness_version]
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            five.append((acc >> bits) & 31)
    if bits:
        five.append((acc << (5 - bits)) & 31)
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    poly = _bech32_polymod(expanded + five + [0] * 6) ^ const
    check = [(poly >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32[d] for d in five + check)


def luhn_digit(digits: str) -> str:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return str((10 - total % 10) % 10)


def wrap64(b64: str, width: int = 64) -> str:
    return "\n".join(b64[i : i + width] for i in range(0, len(b64), width))


# -- names: the spellings of one name in the usual styles --


def nth(d: Draw, key: str) -> int:
    """How many times ``key`` was asked of this draw before (a class's cases take turns)."""
    counts: dict[str, int] = d.__dict__.setdefault("_turns", {})
    counts[key] = counts.get(key, 0) + 1
    return counts[key] - 1


def b64url_json(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()


def b58(raw: bytes) -> str:
    """Plain Base58 (no checksum), as Solana prints keys and addresses."""
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, rem = divmod(n, 58)
        out = B58[rem] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def prefixed(snippet: str, prefixes: Iterator[str]) -> str:
    """Each line of ``snippet`` after its prefix; a marked piece over a line break is closed before
    the break and reopened after the next prefix, so no prefix is ever inside a piece."""
    out = [next(prefixes)]
    inside = False
    for ch in snippet:
        if ch == MARK_OPEN:
            inside = True
        elif ch == MARK_CLOSE:
            inside = False
        if ch == "\n":
            out += [MARK_CLOSE] if inside else []
            out += ["\n", next(prefixes)]
            out += [MARK_OPEN] if inside else []
        else:
            out.append(ch)
    return "".join(out).replace(MARK_OPEN + MARK_CLOSE, "")


def spell(parts: Sequence[str], style: str) -> str:
    """``["db", "password"]`` as ``DB_PASSWORD``, ``db_password``, ``dbPassword``, ``DbPassword``,
    ``db-password`` or ``db.password``."""
    if style == "UPPER":
        return "_".join(p.upper() for p in parts)
    if style == "snake":
        return "_".join(parts)
    if style == "camel":
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    if style == "pascal":
        return "".join(p.capitalize() for p in parts)
    if style == "kebab":
        return "-".join(parts)
    if style == "dot":
        return ".".join(parts)
    raise ValueError(style)


# -- transcript-like text around a snippet --

_CHATTER = [
    "Let me check the configuration first.",
    "I'll look at the logs to see why the job fails.",
    "The build passed locally; running the tests again.",
    "Reading the file to find where the client is set up.",
    "Now I'll update the deployment and restart the service.",
    "That error comes from the connection pool, not from the parser.",
]
_LOG = [
    "INFO  worker started (pid 48211)",
    "   Compiling serde_json v1.0.128",
    "npm warn deprecated inflight@1.0.6: This module is not supported",
    "2026-11-30T09:14:02Z DEBUG pool size=8 idle=3",
    "collected 214 items",
    "  - name: build",
    "Done in 3.42s.",
    "fatal: not a git repository (or any of the parent directories): .git",
]
_ASKS = [
    "why doesn't this connect?",
    "can you fix the config below?",
    "this is what I have right now:",
    "the deploy fails with this setup",
    "please wire this into the app",
]
_COMMANDS = {
    "file": ["cat {f}", "sed -n 1,40p {f}", "head -n 30 {f}", "less {f}"],
    "command": ["history | tail -5", "cat ~/.bash_history | tail", "fc -l -4"],
    "http": ["curl -sv https://api.example.test/v1/status 2>&1 | head -20"],
}
_FILES = ["config/settings.conf", "deploy/app.cfg", ".config/app/config", "infra/vars", "local.cfg"]


def frame(draw: Draw, snippet: str, kind: Frame, filename: str | None = None) -> str:
    """``snippet`` as it sits in a transcript: a file printed by a tool, a shell history, a
    verbose HTTP exchange, a user's message, or a line of assistant chatter."""
    r = draw.r
    log = r.sample(_LOG, 2)
    if kind == "prose":
        lead = r.choice(["", "Hi! ", "ok so ", "FYI: ", "Quick note. "])
        return f"{lead}{snippet}\n{r.choice(_CHATTER)}"
    if kind == "inline":
        return f"{r.choice(_CHATTER)}\n{snippet}\n{log[0]}"
    if kind == "http":
        return f"$ {r.choice(_COMMANDS['http'])}\n*   Trying 127.0.0.1:443...\n{snippet}\n< HTTP/2 200\n"
    if kind == "command":
        n = r.randint(480, 990)
        return f"$ {r.choice(_COMMANDS['command'])}\n  {n}  git status\n  {n + 1}  {snippet}\n  {n + 2}  ls -la\n"
    name = filename or r.choice(_FILES)
    if r.random() < 0.5:
        cmd = r.choice(_COMMANDS["file"]).format(f=name)
        return f"$ {cmd}\n{snippet}\n$ {log[0]}"
    return f"{r.choice(_ASKS)}\n\n```\n{snippet}\n```\n\n{log[1]}"


def _strip_marks(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    start = -1
    for ch in text:
        if ch == MARK_OPEN:
            start = pos
        elif ch == MARK_CLOSE:
            spans.append((start, pos))
        else:
            out.append(ch)
            pos += 1
    return "".join(out), tuple(spans)


Framer = Callable[[Draw, str, Frame], str]


def build(
    half: str, specs: Sequence[Spec], per_class: int, seed: int = SEED, framer: Framer | None = None
) -> list[Case]:
    """``per_class`` cases of every class in ``specs``, each from its own seeded draw (so a class's
    cases do not change when another class is added), framed by ``framer`` (``frame`` unless a split
    brings its own)."""
    place = framer or frame
    cases: list[Case] = []
    for spec in specs:
        draw = Draw(seed ^ zlib.crc32(f"{half}/{spec.family}/{spec.name}".encode()))
        for _ in range(per_class):
            snippet = spec.make(draw)
            text, spans = _strip_marks(place(draw, snippet, spec.frame))
            if not spans or any(a >= b for a, b in spans):
                raise ValueError(f"{spec.family}/{spec.name}: a case with no marked value")
            cases.append(Case(half, spec.family, f"{spec.family}/{spec.name}", spec.kind, text, spans))
    return cases
