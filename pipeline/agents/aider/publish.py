"""Aider: the global scope in ``~/.aider/memd/memd-memory.md``, a file memd owns, named in the ``read:``
list of ``~/.aider.conf.yml``.

Aider (0.86) loads no instruction or memory file by itself: only the files its config's ``read:``
list names (``--read``), sent whole to the model as read-only files. It takes the first
``.aider.conf.yml`` of the working folder, the git root and HOME, and does not merge their lists,
so memd's entry is in HOME's file, written as an absolute path (a relative one is read against the
working folder). A project whose ``.aider.conf.yml`` has a ``read:`` list of its own hides it:
the plan says which of the projects memd knows do.

On by default, although it edits the user's ``~/.aider.conf.yml``: it is the one place Aider
loads anything from at start, and memd adds one line (two when the file has no ``read:``), marked
``# added by memd``, keeps every other byte, and takes them back on withdrawal. Skipped while
``~/.aider/`` does not exist (Aider was never run by this user).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pipeline.agents.aider import MEMORY_FILE
from pipeline.agents.aider.conf import ReadListError, add_entry, read_entries, remove_entry
from pipeline.publish.atomic import check_target, decode, encode
from pipeline.publish.blockfile import GLOBAL_TITLE, plan_block_file, plan_block_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, missing_home, read_bytes
from pipeline.publish.sentinel import outside
from pipeline.publish.targets.base import PublishTarget, user_file_folder
from pipeline.safefile import UnsafeFile
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET_GLOBAL = "aider_global"
SERVICE_NOTE = (
    "its folder cannot be written here (the service's sandbox never opens the home folder): "
    "run `memd publish` once, or add the file to its read: list yourself"
)
AGENT = "Aider"
CONFIG_FILE = ".aider.conf.yml"


def aider_home(homes: Homes) -> Path:
    return homes.user / ".aider"


def config_file(homes: Homes) -> Path:
    return homes.user / CONFIG_FILE


def memory_folder(homes: Homes) -> Path:
    """``~/.aider/memd``: memd's own folder in Aider's, the one the service's sandbox opens."""
    return aider_home(homes) / "memd"


def memory_file(homes: Homes) -> Path:
    return memory_folder(homes) / MEMORY_FILE


def _config_change(plan: Plan, config: Path, edit: str, path: str) -> bool:
    """Add (``edit == "add"``) or take back memd's ``read:`` entry in ``config``; False (the plan
    refused or failed with the reason) when it cannot be."""
    try:
        check_target(config, plan.within, follow_link=True)
        current_raw = read_bytes(config)
    except (OSError, UnsafeFile) as exc:
        plan.error = f"{config}: {exc}"
        return False
    current = decode(current_raw) if current_raw is not None else ""
    try:
        text = add_entry(current, path) if edit == "add" else remove_entry(current, path)
    except ReadListError as exc:
        plan.refused = f"{config}: {exc}"
        return False
    if current_raw is None and edit != "add":
        return True
    plan.change(config, encode(text), current_raw)
    return True


def shadowing(projects: Sequence[str]) -> list[str]:
    """The projects whose own ``.aider.conf.yml`` has a ``read:`` list (it hides HOME's)."""
    found = []
    for project in projects:
        try:
            raw = read_bytes(Path(project) / CONFIG_FILE, 1 << 20)
        except (OSError, UnsafeFile):
            continue
        if raw is not None and read_entries(decode(raw)) is not None:
            found.append(project)
    return found


class Aider(PublishTarget):
    """``[publish] aider_global``: the global scope in a file Aider's ``read:`` list names."""

    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """``~/.aider/memd`` (memd's file), and the folder of the file a ``~/.aider.conf.yml`` symlink
        leads to; never the home folder itself: there, the entry is added by a `memd publish` run
        outside the service (``SERVICE_NOTE``), once."""
        folders = [memory_folder(homes)]
        linked = user_file_folder(config_file(homes))
        if linked != homes.user:
            folders.append(linked)
        return folders

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        home = aider_home(ctx.homes)
        if (absent := missing_home(TARGET_GLOBAL, scope.scope, home, AGENT)) is not None:
            return absent
        path = memory_file(ctx.homes)
        plan = plan_block_file(
            TARGET_GLOBAL,
            scope,
            path,
            title=GLOBAL_TITLE,
            previous_sha=previous_sha,
            within=ctx.homes.user,
            follow_link=True,
        )
        if plan.error or plan.refused or plan.skip_reason:
            return plan
        config = config_file(ctx.homes)
        if not _config_change(plan, config, "add", str(path)):
            plan.changes.clear()
            return plan
        if any(c.path == config for c in plan.changes) and not os.access(user_file_folder(config), os.W_OK):
            plan.changes = [c for c in plan.changes if c.path != config]
            plan.skip_reason = f"{config} does not name memd's file yet and {SERVICE_NOTE}"
        hidden = shadowing(sorted(set(ctx.projects.values())))
        if hidden:
            plan.notes.append(
                f"Aider does not load it in {', '.join(hidden)}: a .aider.conf.yml there has its own read: list"
                f" (add {path} to it)"
            )
        return plan

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        plan = plan_block_withdraw(
            row.target,
            row.scope,
            location,
            previous_sha=row.content_sha256,
            within=ctx.homes.user,
            follow_link=True,
        )
        if plan.error or plan.refused:
            return plan
        for i, change in enumerate(plan.changes):  # a file that holds nothing but memd's block goes
            if (
                change.path == location
                and change.data is not None
                and not outside(decode(change.data)).strip()
            ):
                plan.changes[i] = type(change)(path=change.path, data=None, expected=change.expected)
        _config_change(plan, config_file(ctx.homes), "remove", str(location))
        return plan
