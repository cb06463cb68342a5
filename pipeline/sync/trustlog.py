"""The trust log: every change of who may sign the memory (a machine trusted, a key revoked, a key
rotated) is one entry, a small file ``trust/log/<sha256 of its text>`` added in a commit signed by a
machine trusted there, and never changed or removed (the name is the hash of the text, and a commit
that drops an entry is refused: ``pipeline.sync.trust``). The log is a set: a merge keeps every
entry of both sides, so a revocation travels with the memory and no merge undoes it.

**Who may sign** is derived from the log, never merged as text: the keys some entry trusts, less
every key some entry revokes. A revoked key stays revoked for good (a machine whose key was revoked
makes a new one: `memd sync rotate`). ``trust/allowed_signers`` is written beside the log as the
derived file (git's allowed-signers format, for a person or ``git log --show-signature`` to read);
memd never reads it where a log exists. A memory from before the log (only that file) reads as
a log of one ``trust`` entry per line (``legacy``), written out at memd's next change of trust.

An entry is ASCII lines ``<field> <value>``, the first ``memd-trust-log 1``::

    memd-trust-log 1
    action trust|revoke
    principal memd-<machine id>@<host>
    key ssh-ed25519 AAAA...            (trust)
    fingerprint SHA256:...             (revoke)
    by SHA256:...                      (the key of the machine that wrote it; legacy for a line
                                        taken from a memory older than the log)
    at 2026-12-07T14:00:00+00:00
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.errors import BadSignerLine
from pipeline.sync.signers import TRUST_FILE, AllowedSigner, parse_file, parse_line, render

LOG_DIR = "trust/log"
MAGIC = "memd-trust-log 1"
MAX_ENTRY_BYTES = 2048
MAX_ENTRIES = 1000
LEGACY = "legacy"
TRUST, REVOKE = "trust", "revoke"
_FIELDS = ("action", "principal", "key", "fingerprint", "by", "at")


@dataclass(frozen=True)
class Entry:
    action: str
    principal: str
    fingerprint: str
    """The key's ``SHA256:`` fingerprint (a trust entry's is computed from its key)."""
    by: str
    at: str
    key: str = ""
    """``<type> <base64>`` (trust entries only)."""

    def text(self) -> bytes:
        rows = [MAGIC, f"action {self.action}", f"principal {self.principal}"]
        rows.append(f"key {self.key}" if self.action == TRUST else f"fingerprint {self.fingerprint}")
        rows += [f"by {self.by}", f"at {self.at}"]
        return ("\n".join(rows) + "\n").encode("ascii")

    @property
    def name(self) -> str:
        return hashlib.sha256(self.text()).hexdigest()

    @property
    def path(self) -> str:
        return f"{LOG_DIR}/{self.name}"


def is_log_path(path: str) -> bool:
    head, _, name = path.rpartition("/")
    return head == LOG_DIR and len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def is_trust_path(path: str) -> bool:
    """The allowed signers or an entry of the trust log."""
    return path == TRUST_FILE or is_log_path(path)


def parse_entry(name: str, data: bytes) -> Entry:
    """The entry of file ``trust/log/<name>``; ``BadSignerLine`` for one memd did not write (its
    name not the hash of its text included)."""
    if len(data) > MAX_ENTRY_BYTES:
        raise BadSignerLine(f"trust log entry {name[:12]} is {len(data)} bytes, over {MAX_ENTRY_BYTES}")
    if hashlib.sha256(data).hexdigest() != name:
        raise BadSignerLine(f"trust log entry {name[:12]} is not named by the hash of its text (changed?)")
    try:
        lines = data.decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise BadSignerLine(f"trust log entry {name[:12]} is not plain ASCII") from None
    if not lines or lines[0] != MAGIC:
        raise BadSignerLine(f"trust log entry {name[:12]} is not a memd trust log entry")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        field, _, value = line.partition(" ")
        if field not in _FIELDS or field in fields or not value:
            raise BadSignerLine(f"trust log entry {name[:12]} has a line memd does not write")
        fields[field] = value
    action = fields.get("action")
    if action == TRUST and "key" in fields and "fingerprint" not in fields:
        signer = parse_line(f"{fields.get('principal', '')} {fields['key']}")
        by, at = fields.get("by", ""), fields.get("at", "")
        entry = trusted(signer, by=by, at=at)
    elif action == REVOKE and "fingerprint" in fields and "key" not in fields:
        by, at = fields.get("by", ""), fields.get("at", "")
        entry = Entry(REVOKE, fields.get("principal", ""), fields["fingerprint"], by, at)
    else:
        raise BadSignerLine(f"trust log entry {name[:12]} is neither a trust nor a revoke entry")
    if not entry.by or not entry.at or not entry.principal or entry.text() != data:
        raise BadSignerLine(f"trust log entry {name[:12]} is not as memd writes one")
    return entry


@dataclass(frozen=True)
class Log:
    entries: dict[str, Entry]
    """name -> entry."""
    written: bool
    """The tree holds the log itself (False: read from a legacy ``trust/allowed_signers``)."""

    @property
    def revoked(self) -> dict[str, str]:
        """fingerprint -> the principal it was (revoked keys)."""
        return {e.fingerprint: e.principal for e in self.entries.values() if e.action == REVOKE}

    def signers(self) -> list[AllowedSigner]:
        """The allowed signers (``trust.AllowedSigner``): trusted, less revoked, in a stable order."""
        revoked = self.revoked
        out: dict[str, AllowedSigner] = {}
        for e in sorted(self.entries.values(), key=lambda e: (e.at, e.name)):
            if e.action == TRUST and e.fingerprint not in revoked:
                key_type, key = e.key.split(" ", 1)
                out.setdefault(e.fingerprint, AllowedSigner(e.principal, key_type, key))
        return list(out.values())


def trusted(signer: AllowedSigner, *, by: str, at: str) -> Entry:
    """The entry trusting ``signer``."""
    return Entry(TRUST, signer.principal, signer.fingerprint, by, at, f"{signer.key_type} {signer.key}")


def revoked(principal: str, fingerprint: str, *, by: str, at: str) -> Entry:
    """The entry revoking the key of ``fingerprint``."""
    return Entry(REVOKE, principal, fingerprint, by, at)


def read_log(files: Mapping[str, bytes], legacy: bytes | None) -> Log | None:
    """The log of a tree: its ``trust/log/`` files (``path -> bytes``), or, with none, the legacy
    allowed-signers file ``legacy``; None with neither. ``BadSignerLine`` for an entry memd did
    not write."""
    found = {path.rsplit("/", 1)[-1]: data for path, data in files.items() if is_log_path(path)}
    if len(found) > MAX_ENTRIES:
        raise BadSignerLine(f"the trust log has {len(found)} entries, over the cap of {MAX_ENTRIES}")
    if found:
        return Log({name: parse_entry(name, data) for name, data in found.items()}, True)
    if legacy is None:
        return None
    entries = [trusted(s, by=LEGACY, at=LEGACY) for s in parse_file(legacy)]
    return Log({e.name: e for e in entries}, False)


def union(*logs: Log | None) -> Log | None:
    """Every entry of every log (a merge)."""
    present = [log for log in logs if log is not None]
    if not present:
        return None
    entries: dict[str, Entry] = {}
    for log in present:
        entries.update(log.entries)
    return Log(entries, any(log.written for log in present))


def tree_files(log: Log) -> dict[str, bytes]:
    """The files a tree holds for ``log``: every entry (none for a legacy log, still read from its
    allowed-signers file alone), and the derived allowed signers."""
    out = {e.path: e.text() for e in log.entries.values()} if log.written else {}
    out[TRUST_FILE] = render(log.signers())
    return out


def dropped(parent: Log | None, child: Log | None) -> list[str]:
    """The entries of ``parent``'s written log that ``child`` lacks (a log only grows)."""
    if parent is None or not parent.written:
        return []
    have = child.entries if child is not None else {}
    return sorted(name for name in parent.entries if name not in have)
