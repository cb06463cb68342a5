"""Who may sign the memory repository's commits, as data: one allowed signer (a machine's name and
public key), the line `memd sync key` prints and `memd sync trust` takes, and git's allowed-signers
file (``trust/allowed_signers``). The rules are ``pipeline.sync.trust``; the log the signers are
derived from is ``pipeline.sync.trustlog``."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.errors import BadSignerLine

TRUST_DIR = "trust"
TRUST_FILE = f"{TRUST_DIR}/allowed_signers"
MAX_TRUST_FILE_BYTES = 64 * 1024
MAX_SIGNERS = 200
NAMESPACES = 'namespaces="git"'
KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "ssh-rsa",
    }
)
_PRINCIPAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


@dataclass(frozen=True)
class AllowedSigner:
    principal: str
    key_type: str
    key: str

    def line(self) -> str:
        return f"{self.principal} {NAMESPACES} {self.key_type} {self.key}"

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256(base64.b64decode(self.key)).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def parse_line(line: str) -> AllowedSigner:
    """One allowed-signers line memd accepts: ``<principal> [namespaces="git"] <type> <base64>``."""
    words = line.strip().split()
    if len(words) == 4 and words[1] == NAMESPACES:
        words = [words[0], words[2], words[3]]
    if len(words) != 3:
        raise BadSignerLine(
            f"not one allowed-signers line: expected '<principal> <key type> <key>' (as `memd sync key` "
            f"prints it), got {len(line.split())} words"
        )
    principal, key_type, key = words
    if not _PRINCIPAL.match(principal):
        raise BadSignerLine(
            f"not a principal memd accepts: {principal[:60]!r} (letters, digits and ._@+- only, no wildcard)"
        )
    if key_type not in KEY_TYPES:
        raise BadSignerLine(f"not an ed25519, ecdsa or rsa public key: {key_type[:40]!r}")
    try:
        blob = base64.b64decode(key, validate=True)
        (size,) = struct.unpack(">I", blob[:4])
        named = blob[4 : 4 + size].decode("ascii")
    except (binascii.Error, struct.error, UnicodeDecodeError, ValueError):
        raise BadSignerLine("the key is not valid base64 of an SSH public key") from None
    if named != key_type or len(blob) > 4096:
        raise BadSignerLine(f"the key is not a {key_type} public key")
    return AllowedSigner(principal, key_type, key)


def parse_file(data: bytes | None) -> list[AllowedSigner]:
    """The signers of an allowed-signers file (none when there is no file); ``BadSignerLine`` for
    a file memd did not write."""
    if data is None:
        return []
    if len(data) > MAX_TRUST_FILE_BYTES:
        raise BadSignerLine(f"{TRUST_FILE} is {len(data)} bytes, over the cap of {MAX_TRUST_FILE_BYTES}")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise BadSignerLine(f"{TRUST_FILE} is not plain ASCII") from None
    found = [parse_line(line) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if len(found) > MAX_SIGNERS:
        raise BadSignerLine(f"{TRUST_FILE} names {len(found)} keys, over the cap of {MAX_SIGNERS}")
    return found


def render(signers: Iterable[AllowedSigner]) -> bytes:
    """The file for ``signers`` (one line per key, the first principal of a key kept)."""
    seen: dict[str, AllowedSigner] = {}
    for signer in signers:
        seen.setdefault(signer.key, signer)
    return "".join(s.line() + "\n" for s in seen.values()).encode("ascii")
