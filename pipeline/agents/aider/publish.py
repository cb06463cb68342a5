"""Aider: the global scope in ``~/.aider/memd/memd-memory.md``, a file memd owns, named in the ``read:``
list of ``~/.aider.conf.yml``; a project's in ``<root>/.aider.memd-memory.md``, named in the ``read:``
list of the root's ``.aider.conf.yml``.

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

``aider_project`` (off by default: it edits, or makes, a file of the user's repository, as every
agent's in-repository target is off): the project's scope in ``<root>/.aider.memd-memory.md`` (a
name under ``.aider*``, which Aider itself asks to add to the repository's ``.gitignore``), named in
the ``read:`` list of ``<root>/.aider.conf.yml`` as an absolute path, with memd's global file beside
it while ``aider_global`` is on: Aider run in the root or a folder of it (without its own
``.aider.conf.yml``) loads the root's list, and only that one, so HOME's entry would be hidden
there. A conf memd made holds nothing else and is removed on withdrawal; a user's loses exactly
memd's lines. Neither file is written through a symlink (the repository is not the user's home,
where a dotfiles link is usual).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pipeline.agents.aider import MEMORY_FILE, PROJECT_FILE
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
TARGET_PROJECT = "aider_project"
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


def _config_change(
    plan: Plan, config: Path, edit: str, *paths: str, follow_link: bool = True, drop_empty: bool = False
) -> bool:
    """Add (``edit == "add"``) or take back memd's ``read:`` entries for ``paths`` in ``config``
    (with ``drop_empty``, a file left empty goes); False (the plan refused or failed with the
    reason) when it cannot be."""
    try:
        check_target(config, plan.within, follow_link=follow_link)
        current_raw = read_bytes(config)
    except (OSError, UnsafeFile) as exc:
        plan.error = f"{config}: {exc}"
        return False
    current = decode(current_raw) if current_raw is not None else ""
    text = current
    try:
        for path in paths:
            text = add_entry(text, path) if edit == "add" else remove_entry(text, path)
    except ReadListError as exc:
        plan.refused = f"{config}: {exc}"
        return False
    if current_raw is None and edit != "add":
        return True
    plan.change(config, None if drop_empty and not text.strip() else encode(text), current_raw)
    return True


def shadowing(projects: Sequence[str], path: Path) -> list[str]:
    """The projects whose own ``.aider.conf.yml`` has a ``read:`` list (it hides HOME's) that does
    not name ``path`` (memd's global file)."""
    found = []
    for project in projects:
        try:
            raw = read_bytes(Path(project) / CONFIG_FILE, 1 << 20)
        except (OSError, UnsafeFile):
            continue
        entries = read_entries(decode(raw)) if raw is not None else None
        if entries is not None and str(path) not in entries:
            found.append(project)
    return found


class Aider(PublishTarget):
    """``[publish] aider_global``: the global scope in a file Aider's ``read:`` list names;
    ``aider_project``: each project's, named in its root's ``.aider.conf.yml``."""

    global_name = TARGET_GLOBAL
    project_name = TARGET_PROJECT

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=publish.on(TARGET_PROJECT), global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """``~/.aider/memd`` (memd's file), and the folder of the file a ``~/.aider.conf.yml`` symlink
        leads to; never the home folder itself: there, the entry is added by a `memd publish` run
        outside the service (``SERVICE_NOTE``), once."""
        folders = [memory_folder(homes)]
        linked = user_file_folder(config_file(homes))
        if linked != homes.user:
            folders.append(linked)
        if TARGET_PROJECT in names:
            folders += [Path(p) for p in projects if Path(p).is_absolute() and Path(p).is_dir()]
        return folders

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        if (absent := missing_home(TARGET_PROJECT, scope.scope, aider_home(ctx.homes), AGENT)) is not None:
            return absent
        project = ctx.projects.get(scope.scope)
        if not project or not Path(project).is_dir():
            plan = Plan(target=TARGET_PROJECT, scope=scope.scope, location=Path(project or "."))
            plan.skip_reason = (
                "no project path is recorded for this scope"
                if not project
                else f"the project folder {project} no longer exists"
            )
            return plan
        root = Path(project)
        path = root / PROJECT_FILE
        plan = plan_block_file(
            TARGET_PROJECT, scope, path, title=f"Memory of {project}", previous_sha=previous_sha, within=root
        )
        if plan.error or plan.refused or plan.skip_reason:
            return plan
        entries = [str(path)]
        if ctx.publish.on(TARGET_GLOBAL):  # this list hides HOME's, which names the global file
            entries.append(str(memory_file(ctx.homes)))
        if not _config_change(plan, root / CONFIG_FILE, "add", *entries, follow_link=False):
            plan.changes.clear()
        return plan

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
        hidden = shadowing(sorted(set(ctx.projects.values())), path)
        if hidden:
            plan.notes.append(
                f"Aider does not load it in {', '.join(hidden)}: a .aider.conf.yml there has its own read: list"
                f" (add {path} to it)"
            )
        return plan

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        project = row.target == TARGET_PROJECT
        plan = plan_block_withdraw(
            row.target,
            row.scope,
            location,
            previous_sha=row.content_sha256,
            within=location.parent if project else ctx.homes.user,
            follow_link=not project,
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
        if project:
            config, gone = location.parent / CONFIG_FILE, (str(location), str(memory_file(ctx.homes)))
            _config_change(plan, config, "remove", *gone, follow_link=False, drop_empty=True)
        else:
            _config_change(plan, config_file(ctx.homes), "remove", str(location))
        return plan
