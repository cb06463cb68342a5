"""``memd mcp install/uninstall AGENT``: memd's MCP server in an agent's own configuration file.

The file is the agent's and the user's: memd edits one entry as text (``pipeline.publish.mcp_clients``)
and every other byte stays; a file it cannot parse is refused, never overwritten. It is read with a
cap and never blocks (a FIFO or a device is refused), checked again right before the write (an
agent that rewrote it meanwhile, as Claude Code does with ``~/.claude.json``, is not overwritten),
and written atomically: a user's file may be a symlink only to a regular file the user owns; a
project's file is written only inside the project, never through a symlink.

Uninstall gives the file back as it was before the install, byte for byte, from what the install
recorded in memd's state directory (``records``: ``mcp_installs.json``, one record per file, no
entry in it). When the file is still exactly what the install wrote (its SHA-256), the install's own
change is undone: the bytes it replaced go back where they were. The text alone cannot say whether
an empty ``"mcpServers": {}`` was the user's or the install's, nor whether a last line had its
newline, so comparing with what the install wrote is the only exact way. When the file changed
since (an agent rewrote it, as Claude Code does ``~/.claude.json``), memd's entry is taken out of
the text as it is now, with the containers the record says the install made (none without a
record: an empty container is harmless, a user's gone is not). A file the install created goes
again, with the folders it created, when the uninstall leaves nothing in it but what the install
put there; of the folders the record names, only the file's own folder and those around it,
below the project or the home, ever go.

The record file is memd's own, read like any other (capped, never through a symlink, never a
FIFO) and checked before the agent's file is touched: one memd will not read or rewrite refuses the
install with nothing changed. A record memd cannot make sense of costs only itself.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.defaults import home
from pipeline.errors import PublishError
from pipeline.publish.atomic import UnsafeTarget, atomic_write_text, check_target, decode, remove_file
from pipeline.publish.mcp_clients import (
    ConfigError,
    McpClient,
    client,
    config_file,
    created_containers,
    entry_in,
    install_text,
    installed_in,
    leftover,
    uninstall_text,
)
from pipeline.publish.render import TOOLS_NOTE
from pipeline.safefile import UnsafeFile, read_capped

CONFIG_MAX_BYTES = 64_000_000
"""The most memd reads of an agent's configuration file (``~/.claude.json`` keeps every project's
history and grows to megabytes; the others hold a few kilobytes)."""


RECORDS_FILE = "mcp_installs.json"
"""In memd's state directory: what each install changed, by the file's path (``InstallRecord``)."""


@dataclass(frozen=True)
class InstallRecord:
    """What one ``memd mcp install`` did to one file, for its uninstall."""

    wrote: str | None
    """The SHA-256 of the text the install wrote; None once a later install rewrote memd's entry."""
    at: int
    """Where the install's change starts (the text before and after it agree up to here)..."""
    length: int
    """...how long the text the install put there is..."""
    replaced: str
    """...and the text that was there before it."""
    containers: int
    """How many of the containers around memd's entry the install made."""
    created_file: bool
    created_dirs: tuple[str, ...] = ()
    """The folders the install made for the file, the innermost first."""

    @classmethod
    def of(
        cls, before: str, after: str, containers: int, created: list[Path], created_file: bool
    ) -> InstallRecord:
        at = len(os.path.commonprefix([before, after]))
        tail = len(os.path.commonprefix([before[at:][::-1], after[at:][::-1]]))
        return cls(
            wrote=_sha(after),
            at=at,
            length=len(after) - at - tail,
            replaced=before[at : len(before) - tail],
            containers=containers,
            created_file=created_file,
            created_dirs=tuple(str(d) for d in created),
        )

    def undo(self, text: str) -> str | None:
        """``text`` as it was before the install, when it is still exactly what the install wrote."""
        if self.wrote is None or _sha(text) != self.wrote:
            return None
        return text[: self.at] + self.replaced + text[self.at + self.length :]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


RECORDS_MAX_BYTES = 16_000_000
"""The most memd reads of its own record file (a few hundred bytes a file it installed into)."""

_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "wrote": (str, type(None)),
    "at": (int,),
    "length": (int,),
    "replaced": (str,),
    "containers": (int,),
    "created_file": (bool,),
}


def read_records(records: Path | None) -> dict[str, InstallRecord]:
    """The install records (none when the file is absent or not JSON; an entry that is not one of
    memd's records is skipped, the others stay). ``PublishError`` when the file is not one memd
    reads: a symlink, a FIFO or a device, or too large."""
    if records is None:
        return {}
    try:
        data = read_capped(records, RECORDS_MAX_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise PublishError(f"{exc}; nothing was changed") from None
    try:  # surrogateescape: a record written raw by an older memd still matches its path
        raw = json.loads(data.decode("utf-8", "surrogateescape"))
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    found = {}
    for path, entry in raw.items():
        record = _record(entry)
        if record is not None:
            found[path] = record
    return found


def _record(entry: object) -> InstallRecord | None:
    if not isinstance(entry, dict) or not set(entry) <= {*_RECORD_FIELDS, "created_dirs"}:
        return None
    for name, types in _RECORD_FIELDS.items():
        value = entry.get(name, _MISSING)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return None
    dirs = entry.get("created_dirs", [])
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):  # never a string's letters
        return None
    return InstallRecord(**{**entry, "created_dirs": tuple(dirs)})


_MISSING = object()


def _check_records(records: Path | None) -> dict[str, InstallRecord]:
    """The records, once memd knows it may rewrite the file: before it touches the agent's file."""
    found = read_records(records)
    if records is not None:
        try:
            check_target(records)
        except UnsafeTarget as exc:
            raise PublishError(f"{exc}; nothing was changed") from None
    return found


def _write_records(records: Path, found: dict[str, InstallRecord]) -> None:
    """ASCII JSON: a path that is not UTF-8 (held as ``surrogateescape`` by Python) is written as
    ``\\udcXX`` escapes, which ``json.loads`` gives back as the same string, so its key still
    matches ``str(path)`` and the file stays text every other reader can decode."""
    data = {path: {**vars(r), "created_dirs": list(r.created_dirs)} for path, r in sorted(found.items())}
    try:
        records.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(records, json.dumps(data, indent=1, ensure_ascii=True) + "\n")
    except OSError as exc:
        raise PublishError(f"{exc}; the agent's file was changed but memd could not record it") from None


def _own_folders(dirs: Sequence[str], path: Path, base: Path) -> list[Path]:
    """Of ``dirs``, the ones an install of ``path`` can have made: ``path``'s folder and the folders
    around it, strictly below ``base`` (the project, or the home), the innermost first."""
    ancestors = [path.parent, *path.parent.parents]
    own = []
    for folder in map(Path, dirs):
        if folder.is_absolute() and folder in ancestors and folder != base and folder.is_relative_to(base):
            own.append(folder)
    return sorted(own, key=lambda folder: -len(folder.parts))


@dataclass(frozen=True)
class McpChange:
    agent: McpClient
    path: Path
    action: str
    """added, updated, unchanged, removed, absent."""
    before: str
    after: str
    deleted: bool = False
    """The file goes (uninstall): the install created it and nothing but its entry is in it."""

    def diff(self) -> str:
        """The change as a unified diff ("" when there is none)."""
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=str(self.path),
            tofile=str(self.path),
        )
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )


def read_config(path: Path, *, follow_link: bool) -> str:
    """The file's text, "" when it is absent; ``PublishError`` when memd must not read it."""
    try:
        return decode(read_capped(path, CONFIG_MAX_BYTES, follow_symlinks=follow_link))
    except FileNotFoundError:
        return ""
    except UnsafeFile as exc:
        raise PublishError(f"{exc}; memd will not read or change it") from None


def _config_file(agent: McpClient, env: Mapping[str, str], project: Path | None) -> Path:
    """``config_file``, or ``PublishError`` with the reason (an agent without a project file)."""
    try:
        return config_file(agent, env, project)
    except ConfigError as exc:
        raise PublishError(str(exc)) from None


def is_installed(agent: McpClient, env: Mapping[str, str], project: Path | None = None) -> bool:
    """Whether memd's server is in the agent's user file (``project`` None) or in ``project``'s
    file (a file memd cannot read or parse counts as without it)."""
    try:
        path = _config_file(agent, env, project)
        text = read_config(path, follow_link=project is None)
    except (PublishError, OSError, ConfigError):
        return False
    return installed_in(agent, text)


def install(
    agent: McpClient,
    env: Mapping[str, str],
    command: Sequence[str],
    *,
    project: Path | None = None,
    dry_run: bool = False,
    records: Path | None = None,
) -> McpChange:
    """memd's entry (``command``) in the agent's user file, or in ``project``'s; what it changed is
    recorded in ``records`` for the uninstall (see the module's docstring)."""
    path = _config_file(agent, env, project)
    before = read_config(path, follow_link=project is None)
    try:
        had = entry_in(agent, before)
        containers = created_containers(agent, before)
        after = install_text(agent, before, command)
    except ConfigError as exc:
        raise PublishError(f"{path}: {exc}; memd will not change it") from None
    action = "unchanged" if after == before else ("updated" if had is not None else "added")
    created_file = not os.path.lexists(path)
    base = project if project is not None else home(env)
    created = _own_folders([str(d) for d in _missing_folders(path.parent)], path, base)
    found = _check_records(records) if not dry_run else {}
    change = _finish(McpChange(agent, path, action, before, after), project, dry_run)
    if records is not None and not dry_run and action != "unchanged":
        old = found.get(str(path))
        if action == "added" or old is None:
            found[str(path)] = InstallRecord.of(before, after, containers, created, created_file)
        else:  # memd's entry rewritten: the first install's facts stay, its exact undo no longer holds
            found[str(path)] = InstallRecord(
                None, 0, 0, "", old.containers, old.created_file, old.created_dirs
            )
        _write_records(records, found)
    return change


def uninstall(
    agent: McpClient,
    env: Mapping[str, str],
    *,
    project: Path | None = None,
    dry_run: bool = False,
    records: Path | None = None,
) -> McpChange:
    """The agent's file without memd's entry: as it was before the install (see the module's
    docstring), or gone when the install created it."""
    path = _config_file(agent, env, project)
    before = read_config(path, follow_link=project is None)
    found = _check_records(records) if not dry_run else read_records(records)
    record = found.get(str(path))
    try:
        undone = record.undo(before) if record is not None else None
        if undone is None or entry_in(agent, undone) is not None:
            undone = uninstall_text(agent, before, drop_containers=record.containers if record else 0)
    except ConfigError as exc:
        raise PublishError(f"{path}: {exc}; memd will not change it") from None
    action = "removed" if undone != before else "absent"
    deleted = (
        action == "removed" and record is not None and record.created_file and undone in ("", leftover(agent))
    )
    change = McpChange(agent, path, action, before, "" if deleted else undone, deleted)
    change = _finish(change, project, dry_run)
    if deleted and not dry_run:
        base = project if project is not None else home(env)
        for folder in _own_folders(record.created_dirs if record is not None else (), path, base):
            with contextlib.suppress(OSError):  # a folder that holds anything else stays
                Path(folder).rmdir()
    if records is not None and record is not None and not dry_run:
        del found[str(path)]
        _write_records(records, found)
    return change


def _missing_folders(folder: Path) -> list[Path]:
    """The folders a write into ``folder`` creates, the innermost first."""
    missing: list[Path] = []
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


def _finish(change: McpChange, project: Path | None, dry_run: bool) -> McpChange:
    if dry_run or (change.after == change.before and not change.deleted):
        return change
    path = change.path
    if read_config(path, follow_link=project is None) != change.before:
        raise PublishError(f"{path} changed while memd was editing it; nothing was written, try again")
    try:
        if change.deleted:
            remove_file(path, within=project)
        else:
            atomic_write_text(path, change.after, within=project, follow_link=project is None)
    except UnsafeTarget as exc:
        raise PublishError(f"{exc}; left alone") from None
    return change


@dataclass
class McpInstalls:
    """Which agents have memd's MCP server installed, as one publish asks (each file read once):
    the block an agent loads names the tools only where ``memd mcp install`` put them (in the
    user's file, or in the project's for that project's block). Without an environment (a context
    made elsewhere than ``publish_all``) no agent has it."""

    env: Mapping[str, str] | None = None
    _seen: dict[tuple[str, str | None], bool] = field(default_factory=dict, repr=False)

    def installed(self, source: str, project: str | None = None) -> bool:
        """In the user's file, or in ``project``'s."""
        return self._file(source, None) or (project is not None and self._file(source, project))

    def _file(self, source: str, project: str | None) -> bool:
        if self.env is None:
            return False
        key = (source, project)
        if key not in self._seen:
            folder = Path(project) if project else None
            self._seen[key] = is_installed(client(source), self.env, folder)
        return self._seen[key]

    def note(self, *sources: str, project: str | None = None) -> str | None:
        """``render.TOOLS_NOTE`` when any of ``sources`` (the agents that load a block) has memd's server."""
        return TOOLS_NOTE if any(self.installed(s, project) for s in sources) else None
