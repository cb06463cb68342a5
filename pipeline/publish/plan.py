"""What a target means to write: a plan of file changes, decided on a snapshot and applied later.

Targets only read (the memory repository and the agent's files) and return ``Plan``s; ``run``
applies them. A change carries the bytes the file held when it was planned, so a file someone
edits in between is not overwritten (the plan fails and the next publish tries again). A plan names
the folder its files must stay in (``within``) and whether its one user-level file may be followed
as a symlink (``follow_link``); ``atomic`` refuses anything else. Every file memd reads here was
possibly not written by it, so it is read with ``safefile`` and a cap: a FIFO, a device or a huge
file fails the plan with its reason instead of hanging the publish.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from pipeline.defaults import config_home, home
from pipeline.layout import INDEX
from pipeline.publish.atomic import UnsafeTarget, atomic_write_bytes, check_target, remove_file
from pipeline.publish.mcp_install import McpInstalls
from pipeline.safefile import read_capped
from pipeline.settings import PublishSettings, Settings, SourceSettings, SourcesSettings

INSTRUCTIONS_MAX_BYTES = 2_000_000
"""The most memd reads of a file it patches or writes in an agent's folder (an instructions file,
an index, a topic file): agents load far less than this, so a larger file is not one to edit."""


@dataclass(frozen=True)
class Homes:
    """Where this installation's agents and user keep their files, as the settings and the
    environment say. Each target derives its own agent's folder from it (Claude Code's is the
    parent of its transcripts root), for publishing and for the service unit alike: a moved root
    or ``CODEX_HOME`` moves both."""

    user: Path
    """The user's home folder."""
    sources: SourcesSettings
    config: Path | None = None
    """The user's configuration folder (``$XDG_CONFIG_HOME``, by default ``~/.config``)."""

    @classmethod
    def from_settings(cls, settings: Settings, env: Mapping[str, str] | None = None) -> Homes:
        env = os.environ if env is None else env
        return cls(user=home(env), sources=settings.sources, config=config_home(env))

    @property
    def config_home(self) -> Path:
        return self.config if self.config is not None else self.user / ".config"

    def root(self, source: str) -> Path:
        """The transcripts root configured for ``source`` (whether or not it is scanned)."""
        entry: SourceSettings = self.sources[source]
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
    uses: Mapping[str, int] = field(default_factory=dict)
    """``<scope>/<file>`` -> how many sessions read that topic lately (``pipeline.hits``)."""
    stale: Mapping[str, str] = field(default_factory=dict)
    """``<scope>/<file>`` -> why that topic is published marked stale (``pipeline.publish.stale``)."""
    mcp: McpInstalls = field(default_factory=McpInstalls)
    """Which agents have memd's MCP server (a block they load names its tools)."""


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
    """Why memd leaves this place alone; with changes, they only take memd's copy back."""
    withdraw: bool = False
    outside_change: bool = False
    """memd's content there is not what memd last wrote: someone else changed it."""
    error: str | None = None
    published: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Absolute path of each file an agent may read -> (scope, topic file), for usage tracking."""
    notes: list[str] = field(default_factory=list)
    within: Path | None = None
    """The folder every file of the plan must stay in, reached without a symlink (None: each
    file's own folder)."""
    follow_link: bool = False
    """A user-level file that may be a symlink to a regular file the same user owns."""

    def change(self, path: Path, data: bytes | None, current: bytes | None) -> None:
        if data != current:
            self.changes.append(FileChange(path=path, data=data, expected=current))

    def confine(self, within: Path, *paths: Path, follow_link: bool = False) -> bool:
        """Keep this plan's files inside ``within``; False (the plan failed with the reason) when
        one of ``paths`` may not be written (``atomic.check_target``)."""
        self.within, self.follow_link = within, follow_link
        try:
            for path in paths:
                check_target(path, within, follow_link=follow_link)
        except UnsafeTarget as exc:
            self.error = str(exc)
            return False
        return True


def missing_home(target: str, scope: str, home: Path, agent: str) -> Plan | None:
    """A skipped plan when the agent's home folder does not exist (the agent is not installed)."""
    if home.is_dir():
        return None
    plan = Plan(target=target, scope=scope, location=home)
    plan.skip_reason = f"{home} does not exist: {agent} is not set up for this user"
    return plan


def unusable_project(
    target: str, scope: str, ctx: PublishContext, home: Path, agent: str, folder_of: Callable[[str], Path]
) -> Plan | None:
    """A skipped plan when a project's folder under an agent's ``home`` cannot be planned: the agent
    is not set up, no project path is recorded for the scope, or the project folder is gone."""
    if (absent := missing_home(target, scope, home, agent)) is not None:
        return absent
    project = ctx.projects.get(scope)
    if not project:
        plan = Plan(target=target, scope=scope, location=home / "projects")
        plan.skip_reason = "no project path is recorded for this scope"
        return plan
    if not Path(project).is_dir():
        plan = Plan(target=target, scope=scope, location=folder_of(project))
        plan.skip_reason = f"the project folder {project} no longer exists"
        return plan
    return None


def digest_of(entries: Mapping[str, bytes | str | None]) -> str:
    """A stable digest of named contents (order-free)."""
    h = hashlib.sha256()
    for name in sorted(entries):
        value = entries[name]
        data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
        h.update(hashlib.sha256(data).digest() if data is not None else b"-")
    return h.hexdigest()


def read_bytes(path: Path, max_bytes: int = INSTRUCTIONS_MAX_BYTES) -> bytes | None:
    """A file's bytes, None when absent; ``safefile.UnsafeFile`` when it is not a regular file or
    is larger than ``max_bytes`` (never a read that blocks or runs without end)."""
    try:
        return read_capped(path, max_bytes)
    except FileNotFoundError:
        return None


class ChangedMeanwhile(Exception):
    """A file changed between planning and writing."""


def apply(plan: Plan) -> tuple[list[str], list[str], int]:
    """Apply a plan's changes: written files first, removals last. Returns (written, removed, bytes)."""
    for change in plan.changes:
        check_target(change.path, plan.within, follow_link=plan.follow_link)
        if read_bytes(change.path) != change.expected:
            raise ChangedMeanwhile(
                f"{change.path} changed while memd was publishing; will try again next time"
            )
    written: list[str] = []
    removed: list[str] = []
    size = 0
    ordered = sorted(plan.changes, key=lambda c: (c.data is None, c.path.name == INDEX, str(c.path)))
    for change in ordered:
        if change.data is None:
            if remove_file(change.path, within=plan.within):
                removed.append(str(change.path))
        else:
            atomic_write_bytes(change.path, change.data, within=plan.within, follow_link=plan.follow_link)
            written.append(str(change.path))
            size += len(change.data)
    return written, removed, size
