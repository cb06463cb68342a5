"""The remote is not trusted: what it brings passes the checks of a local consolidation first.

First, before a byte of it is read or reaches the memory repository (``object_findings``, on what
``pipeline.gitrepo.quarantine`` lists): every object of every incoming commit, not only the tip's,
is within its size cap (a file of memory, the README, a tombstone, a tree or commit), and all of
them together, and all the remote sent at all, within ``MAX_INCOMING_BYTES`` and
``MAX_INCOMING_OBJECTS`` (``SizeScreen``). Then, before anything
fetched is merged (let alone published), and once every incoming commit was found signed by a
trusted machine (``pipeline.sync.trust``): every path is ``README.md``, the allowed signers
(``trust/allowed_signers``), a tombstone, a forget record (``forgotten/``) or a file of a valid scope, every entry a regular file (no symlink, no submodule); every scope the
remote changed passes ``pipeline.checks.validate.validate_scope`` (frontmatter, index, caps, the
secret gate) as the remote has it; and every file version any incoming commit carries, not only the
last one's, passes the secret gate. A finding stops the sync with the reason; nothing is merged.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.checks.validate import validate_scope
from pipeline.gitrepo.message_gate import SecretFinder, describe_secret
from pipeline.gitrepo.quarantine import IncomingObject
from pipeline.gitrepo.remote import REGULAR_MODES, Entry
from pipeline.layout import Caps, is_scope
from pipeline.memory import forget_records, tombstones
from pipeline.sync.merge import ROOT_FILES, by_scope, scope_of
from pipeline.sync.trust import TRUST_FILE
from pipeline.sync.trustlog import MAX_ENTRY_BYTES, is_log_path, is_trust_path

MAX_ROOT_FILE_BYTES = 64 * 1024
MAX_FILE_BYTES = 2 * 1024 * 1024
"""No file of memory is anywhere near this (topics have their own, smaller cap): a bigger one is refused."""
MAX_FINDINGS = 20
MAX_TOMBSTONE_BYTES = 1024
MAX_META_BYTES = 1024 * 1024
"""A commit bigger than this is no commit memd writes."""
MAX_TREE_BYTES = 8 * 1024 * 1024
"""A tree bigger than this is no tree memd writes (``tombstones/`` grows by 60 bytes a forgotten
session: about 140,000 of them fit)."""
MAX_INCOMING_BYTES = 256 * 1024 * 1024
"""All the objects one sync brings together (every version of every file, trees, commits)."""
MAX_INCOMING_OBJECTS = 200_000


def path_findings(entries: Mapping[str, Entry]) -> list[str]:
    """Paths and modes memory never holds."""
    out: list[str] = []
    for path, entry in sorted(entries.items()):
        if entry.mode not in REGULAR_MODES:
            kind = {"120000": "a symlink", "160000": "a submodule"}.get(entry.mode, f"mode {entry.mode}")
            out.append(f"{path} is {kind}; memory holds regular files only")
            continue
        found = scope_of(path)
        if path in ROOT_FILES or is_trust_path(path) or tombstones.is_tombstone_path(path):
            continue
        if forget_records.is_record_path(path):
            continue
        if found is None or not is_scope(found[0]):
            out.append(f"{path} is not a file of a memory scope, a tombstone or the README")
            continue
        if any(part.startswith(".") for part in found[1].split("/")):
            out.append(f"{path} is hidden; memory holds no hidden files")
    return out


def file_cap(path: str) -> int:
    """The most bytes any version of the file at ``path`` may have."""
    if path in ROOT_FILES:
        return MAX_ROOT_FILE_BYTES
    if tombstones.is_tombstone_path(path):
        return MAX_TOMBSTONE_BYTES
    if forget_records.is_record_path(path):
        return forget_records.MAX_RECORD_BYTES
    if is_log_path(path):
        return MAX_ENTRY_BYTES
    return MAX_FILE_BYTES


def object_findings(objects: Sequence[IncomingObject]) -> list[str]:
    """Every object over its cap, and the whole over ``MAX_INCOMING_BYTES`` or
    ``MAX_INCOMING_OBJECTS``: sizes as git records them, no content read."""
    out: list[str] = []
    total = 0
    for obj in objects:
        total += obj.size
        cap = (
            file_cap(obj.path)
            if obj.kind == "blob"
            else MAX_TREE_BYTES
            if obj.kind == "tree"
            else MAX_META_BYTES
        )
        if obj.size > cap:
            what = obj.path or f"a {obj.kind}"
            out.append(
                f"{what} ({obj.kind} {obj.sha[:12]}) is {obj.size} bytes in an incoming commit, "
                f"over the cap of {cap} bytes"
            )
    if len(objects) > MAX_INCOMING_OBJECTS:
        out.append(
            f"the remote's commits bring {len(objects)} objects, over the cap of {MAX_INCOMING_OBJECTS}"
        )
    if total > MAX_INCOMING_BYTES:
        out.append(
            f"the remote's commits bring {total} bytes, over the cap of {MAX_INCOMING_BYTES} in one sync"
        )
    return out[:MAX_FINDINGS]


def received_findings(objects: int, size: int) -> list[str]:
    """What the remote sent at all (before it is listed), over ``MAX_INCOMING_OBJECTS`` or
    ``MAX_INCOMING_BYTES``."""
    out = []
    if objects > MAX_INCOMING_OBJECTS:
        out.append(f"the remote sent {objects} objects, over the cap of {MAX_INCOMING_OBJECTS} in one sync")
    if size > MAX_INCOMING_BYTES:
        out.append(f"the remote sent {size} bytes, over the cap of {MAX_INCOMING_BYTES} in one sync")
    return out


@dataclass(frozen=True)
class SizeScreen:
    """A sync's ``quarantine.Screen``: what the remote sends, sized before it is read or reaches the
    memory repository; over the caps, ``refuse`` makes the exception raised from the findings."""

    refuse: Callable[[list[str]], Exception]

    def received(self, objects: int, size: int) -> None:
        if found := received_findings(objects, size):
            raise self.refuse(found)

    def incoming(self, objects: list[IncomingObject]) -> None:
        if found := object_findings(objects):
            raise self.refuse(found)


def size_findings(files: Mapping[str, bytes]) -> list[str]:
    out = []
    for path, data in files.items():
        if len(data) > MAX_FILE_BYTES:
            out.append(
                f"{path} is {len(data)} bytes, over the cap of {MAX_FILE_BYTES} for any file of memory"
            )
        elif (path in ROOT_FILES or path == TRUST_FILE) and len(data) > MAX_ROOT_FILE_BYTES:
            out.append(f"{path} is {len(data)} bytes, over the cap of {MAX_ROOT_FILE_BYTES}")
        elif tombstones.is_tombstone_path(path) and len(data) > MAX_TOMBSTONE_BYTES:
            out.append(f"{path} is {len(data)} bytes: a tombstone holds one line")
        elif forget_records.is_record_path(path) and forget_records.parse(data) is None:
            out.append(f"{path} is not a forget record memd writes")
    return out


def scope_findings(
    theirs: Mapping[str, bytes], ours: Mapping[str, bytes], caps: Caps, finder: SecretFinder | None
) -> list[str]:
    """``validate_scope`` of each scope the remote has differently from this machine."""
    mine, remote = by_scope(ours), by_scope(theirs)
    out: list[str] = []
    for scope, files in sorted(remote.items()):
        if mine.get(scope) == files:
            continue
        with tempfile.TemporaryDirectory(prefix="memd-incoming.") as tmp:
            folder = Path(tmp) / "scope"
            for rel, data in files.items():
                target = folder / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            out += [f"{scope}/{finding}" for finding in validate_scope(folder, caps, finder)]
    return out


def secret_findings(versions: Sequence[tuple[str, bytes]], finder: SecretFinder | None) -> list[str]:
    """The secret gate over every incoming file version: ``(path, data)``."""
    if finder is None:
        return []
    out: list[str] = []
    for path, data in versions:
        text = data.decode("utf-8", "replace")
        for found in finder.find(text):
            out.append(
                f"{path}: the secret gate found a {describe_secret(found, text)} in an incoming commit"
            )
    return out


def findings(
    entries: Mapping[str, Entry],
    theirs: Mapping[str, bytes],
    ours: Mapping[str, bytes],
    versions: Sequence[tuple[str, bytes]],
    *,
    caps: Caps,
    finder: SecretFinder | None,
) -> list[str]:
    """Every reason to refuse what the remote brings (empty: it may be merged)."""
    out = path_findings(entries)
    if not out:
        out = size_findings(theirs) + secret_findings(versions, finder)
    if not out:
        out = scope_findings(theirs, ours, caps, finder)
    return out[:MAX_FINDINGS]
