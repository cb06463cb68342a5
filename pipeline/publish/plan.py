"""What a target means to write: a plan of file changes, decided on a snapshot and applied later.

Targets only read (the memory repository and the agent's files) and return ``Plan``s; ``run``
applies them. A change carries the bytes the file held when it was planned, so a file someone
edits in between is not overwritten (the plan fails and the next publish tries again).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from pipeline.publish.atomic import atomic_write_bytes, remove_file
from pipeline.settings import PublishSettings, Settings, SourceSettings, SourcesSettings
from pipeline.vocabulary import SourceName


@dataclass(frozen=True)
class Homes:
    """Where this installation's agents and user keep their files, as the settings and the
    environment say. Each target derives its own agent's folder from it (Claude Code's is the
    parent of its transcripts root), for publishing and for the service unit alike: a moved root
    or ``CODEX_HOME`` moves both."""

    user: Path
    """The user's home folder."""
    sources: SourcesSettings

    @classmethod
    def from_settings(cls, settings: Settings, env: Mapping[str, str] | None = None) -> Homes:
        env = os.environ if env is None else env
        return cls(user=Path(env.get("HOME") or Path.home()), sources=settings.sources)

    def root(self, source: SourceName) -> Path:
        """The transcripts root configured for ``source`` (whether or not it is scanned)."""
        entry: SourceSettings = getattr(self.sources, source.value)
        return entry.root


@dataclass(frozen=True)
class PublishContext:
    memory_dir: Path
    homes: Homes
    publish: PublishSettings
    today: date
    projects: Mapping[str, str]
    """Scope -> project path."""
    activity: Mapping[str, datetime]
    """Scope -> last activity of any session of its project."""


@dataclass(frozen=True)
class FileChange:
    path: Path
    data: bytes | None
    """The new content; None removes the file."""
    expected: bytes | None
    """What the file held when the change was planned (None: absent)."""


@dataclass
class Plan:
    target: str
    scope: str
    location: Path
    changes: list[FileChange] = field(default_factory=list)
    digest: str | None = None
    """sha256 of memd's content as it will be once applied (the publications row keeps it)."""
    disk_digest: str | None = None
    """sha256 of memd's content as found on disk, to notice someone else's changes."""
    skip_reason: str | None = None
    refused: str | None = None
    withdraw: bool = False
    outside_change: bool = False
    """memd's content there is not what memd last wrote: someone else changed it."""
    error: str | None = None
    published: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Absolute path of each file an agent may read -> (scope, topic file), for usage tracking."""
    notes: list[str] = field(default_factory=list)

    def change(self, path: Path, data: bytes | None, current: bytes | None) -> None:
        if data != current:
            self.changes.append(FileChange(path=path, data=data, expected=current))


def missing_home(target: str, scope: str, home: Path, agent: str) -> Plan | None:
    """A skipped plan when the agent's home folder does not exist (the agent is not installed)."""
    if home.is_dir():
        return None
    plan = Plan(target=target, scope=scope, location=home)
    plan.skip_reason = f"{home} does not exist: {agent} is not set up for this user"
    return plan


def digest_of(entries: Mapping[str, bytes | str | None]) -> str:
    """A stable digest of named contents (order-free)."""
    h = hashlib.sha256()
    for name in sorted(entries):
        value = entries[name]
        data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
        h.update(hashlib.sha256(data).digest() if data is not None else b"-")
    return h.hexdigest()


def read_bytes(path: Path) -> bytes | None:
    try:
        if path.is_dir():
            return None
        return path.read_bytes()
    except FileNotFoundError:
        return None


class ChangedMeanwhile(Exception):
    """A file changed between planning and writing."""


def apply(plan: Plan) -> tuple[list[str], list[str], int]:
    """Apply a plan's changes: written files first, removals last. Returns (written, removed, bytes)."""
    for change in plan.changes:
        if read_bytes(change.path) != change.expected:
            raise ChangedMeanwhile(
                f"{change.path} changed while memd was publishing; will try again next time"
            )
    written: list[str] = []
    removed: list[str] = []
    size = 0
    ordered = sorted(plan.changes, key=lambda c: (c.data is None, c.path.name in {"MEMORY.md"}, str(c.path)))
    for change in ordered:
        if change.data is None:
            if remove_file(change.path):
                removed.append(str(change.path))
        else:
            atomic_write_bytes(change.path, change.data)
            written.append(str(change.path))
            size += len(change.data)
    return written, removed, size
