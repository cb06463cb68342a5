"""Forgetting that travels: ``tombstones/<hash>`` in the memory repository, one per forgotten session.

A tombstone names a session by a hash of its id (``session_hash``), so the repository does not list
what was forgotten. Every machine that merges it drops that session's inputs, withdraws the topic
files citing it and forgets its extracts in its own state store: a machine that still has the
input, or merges an older commit, does not bring it back. A tombstone is never removed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

TOMBSTONE_DIR = "tombstones"
HASH_CHARS = 32
_NAME = re.compile(rf"^{TOMBSTONE_DIR}/[0-9a-f]{{{HASH_CHARS}}}$")
TOMBSTONE_TEXT = b"forgotten by memd: this session's memory must not come back\n"


def session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]


def path_of(session_id: str) -> str:
    return f"{TOMBSTONE_DIR}/{session_hash(session_id)}"


def is_tombstone_path(path: str) -> bool:
    return bool(_NAME.match(path))


def hashes_in(files: Mapping[str, object]) -> set[str]:
    """The session hashes tombstoned in a tree (``path -> anything``)."""
    return {p.rsplit("/", 1)[1] for p in files if is_tombstone_path(p)}


def is_tombstoned(session_id: str, hashes: set[str]) -> bool:
    return session_hash(session_id) in hashes


def write(top: Path, sessions: Iterable[str]) -> list[str]:
    """Write the tombstones of ``sessions`` under a checkout ``top``; the paths written anew."""
    written: list[str] = []
    for session in sorted(set(sessions)):
        rel = path_of(session)
        target = top / rel
        if target.is_file() and not target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(TOMBSTONE_TEXT)
        written.append(rel)
    return written


def read(top: Path) -> set[str]:
    """The session hashes tombstoned in a checkout ``top``."""
    folder = top / TOMBSTONE_DIR
    if not folder.is_dir() or folder.is_symlink():
        return set()
    return {p.name for p in folder.iterdir() if is_tombstone_path(f"{TOMBSTONE_DIR}/{p.name}")}
