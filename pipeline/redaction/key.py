"""The per-installation redaction key and the keyed tag it gives each secret.

The key lives in ``<state_dir>/redaction.key`` (32 random bytes, hex, mode 0600). It is created
once, atomically: a complete file is written under a temporary name and hard-linked into place,
so two processes starting together agree on one key and nobody ever reads a half-written file.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

import structlog

from pipeline.errors import RedactionKeyError

KEY_FILE = "redaction.key"
KEY_BYTES = 32
TAG_HEX = 4

log = structlog.get_logger(__name__)


def tag(key: bytes, secret: bytes) -> str:
    """The short keyed hash of ``secret`` (HMAC-SHA256): equal secrets get equal tags under one key."""
    return hmac.digest(key, secret, "sha256").hex()[:TAG_HEX]


class Tagger:
    """``tag`` with the key schedule computed once (the HMAC state is copied per secret)."""

    def __init__(self, key: bytes) -> None:
        self._base = hmac.new(key, digestmod=hashlib.sha256)

    def __call__(self, secret: bytes) -> str:
        mac = self._base.copy()
        mac.update(secret)
        return mac.hexdigest()[:TAG_HEX]


def read_key(state_dir: Path) -> bytes | None:
    """The installation's redaction key, or None where memd never made one (a reader that must not
    write, such as `memd mcp`)."""
    try:
        return _read(state_dir / KEY_FILE)
    except FileNotFoundError:
        return None


def load_or_create_key(state_dir: Path) -> bytes:
    """Read the installation's redaction key, creating it (0600, atomically) on first use."""
    path = state_dir / KEY_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = state_dir / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(secrets.token_bytes(KEY_BYTES).hex() + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, path)  # fails if another process won the race: then use theirs
                log.info("redaction_key_created", path=str(path))
            except FileExistsError:
                pass
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise RedactionKeyError(f"cannot create the redaction key {path}: {exc.strerror or exc}") from None
    return _read(path)


def _read(path: Path) -> bytes:
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise RedactionKeyError(f"cannot read the redaction key {path}: {exc}") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise RedactionKeyError(
            f"the redaction key {path} is malformed (expected {KEY_BYTES * 2} hex digits): "
            "remove it to let memd create a new one (tags of earlier redactions will change)"
        )
    if mode & 0o077:
        try:
            path.chmod(0o600)
            log.warning("redaction_key_permissions_tightened", path=str(path))
        except OSError:
            log.warning("redaction_key_permissions_open", path=str(path))
    return key
