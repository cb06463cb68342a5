"""``PublishTarget``: what a place memd publishes to says about itself.

A target is one agent's way of reading memory. It records its publications under one name per
kind of scope it serves (``project_name`` for each project scope, ``global_name`` for the global
scope; either may be None), knows which ``[publish]`` keys turn those names on, names the folders
it writes in (derived from ``Homes``, so a moved transcript root or ``CODEX_HOME`` moves them for
publishing and for the service unit alike), and plans a project scope, the global scope and a
withdrawal. ``registry`` holds the list and does everything by iterating it; nothing outside a
target's module knows its names, its keys or its folders.

A planner that raises becomes a failed plan with the reason (``guard``; the registry guards every
call it makes), so one target's bug never stops the others.
"""

from __future__ import annotations

import errno
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pipeline.layout import GLOBAL_SCOPE
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext
from pipeline.safefile import UnsafeFile
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication


class PublishTarget(ABC):
    """One place memd publishes to (see the module's docstring)."""

    project_name: ClassVar[str | None] = None
    """The name its project scopes are recorded under (None: it serves no project scope)."""
    global_name: ClassVar[str | None] = None
    """The name its global scope is recorded under (None: it serves no global scope)."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n in (self.project_name, self.global_name) if n is not None)

    @abstractmethod
    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        """Which of its names the ``[publish]`` settings turn on."""

    @abstractmethod
    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> Sequence[Path]:
        """Every folder it may write in while ``names`` (its names that are on) are: the service
        unit's sandbox opens exactly these. ``projects`` are the project folders memd knows. A
        folder of per-project folders stands for each project's (systemd takes no wildcard, and a
        project first seen after the unit was written must get its memory too); a user-level file
        needs its own folder (``user_file_folder``), since memd replaces it by a rename there."""

    def plan_projects(
        self, ctx: PublishContext, scopes: Sequence[ScopeMemory], previous: Mapping[str, str | None]
    ) -> list[Plan]:
        """The plans of the project scopes. ``scopes`` holds every scope with memory, the global one
        included; ``previous`` is scope -> the digest memd last wrote there, when it is known to be
        on disk. By default one ``plan_project`` per project scope, each guarded."""
        name = self._name(self.project_name, "project")
        return [
            guard(name, s.scope, self.plan_project, ctx, s, previous.get(s.scope))
            for s in scopes
            if s.scope != GLOBAL_SCOPE
        ]

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        """The plan of one project scope."""
        raise NotImplementedError(f"{type(self).__name__} plans no single project scope")

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        """The plan of the global scope."""
        raise NotImplementedError(f"{type(self).__name__} plans no global scope")

    def plan_withdrawal(self, ctx: PublishContext, row: Publication, rows: Mapping[str, Publication]) -> Plan:
        """Take memd's copy back from what ``row`` records (its scope is gone, or its name is off).
        ``rows`` holds every row of the same name, by scope. By default: when nothing is known to be
        there, a plan that only records the withdrawal; else ``withdraw``."""
        location = known_copy(row)
        if location is None:
            return nothing_to_withdraw(row)
        return self.withdraw(ctx, row, location)

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        """Take memd's copy back from ``location``, where it last published ``row.scope`` under
        ``row.target`` (``row.content_sha256``: what it wrote there)."""
        raise NotImplementedError(f"{type(self).__name__} cannot withdraw {row.target}")

    def _on(self, *, project: bool = False, global_: bool = False) -> frozenset[str]:
        """The names switched on, given whether its project and its global scopes are."""
        wanted = ((self.project_name, project), (self.global_name, global_))
        return frozenset(name for name, on in wanted if on and name is not None)

    def _name(self, name: str | None, kind: str) -> str:
        if name is None:
            raise NotImplementedError(f"{type(self).__name__} has no {kind} scope")
        return name


def user_file_folder(path: Path) -> Path:
    """The folder where memd replaces the user-level file ``path``: the folder of the file a
    symlink there leads to (a dotfiles repository), else ``path``'s own folder."""
    if path.is_symlink():
        try:
            return path.resolve(strict=True).parent
        except OSError:
            return path.parent
    return path.parent


def known_copy(row: Publication) -> Path | None:
    """Where memd's copy recorded by ``row`` is, or None when memd has nothing known to be there
    (it skipped, failed or was refused)."""
    if row.content_sha256 is None or not Path(row.path).is_absolute():
        return None
    return Path(row.path)


def nothing_to_withdraw(row: Publication) -> Plan:
    """A withdrawal that changes no file: it only records that memd's copy is gone."""
    return Plan(target=row.target, scope=row.scope, location=Path(row.path), withdraw=True)


def guard(target: str, scope: str, make: Callable[..., Plan], *args: Any) -> Plan:
    """``make(*args)``, or a failed plan saying why: one target's bug never stops the others."""
    try:
        return make(*args)
    except Exception as exc:
        return failed_plan(target, scope, exc)


def failed_plan(target: str, scope: str, exc: BaseException) -> Plan:
    if isinstance(exc, UnsafeFile):  # a FIFO, a device, a huge file: its name and what it is say enough
        plan = Plan(target=target, scope=scope, location=Path(exc.path))
        plan.error = f"{exc}; memd does not read it"
        return plan
    plan = Plan(target=target, scope=scope, location=Path("."))
    plan.error = short_error(exc)
    return plan


SANDBOX_HINT = (
    "outside what the service's sandbox opens: `memd service install` again opens the folders memd writes now"
)
"""Why a folder is read-only to the service: the unit was written before memd knew the folder
(a project first seen since, with ``agents_md``; an agent installed since)."""


def short_error(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    said = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, OSError) and exc.errno == errno.EROFS:
        return f"{said} ({SANDBOX_HINT})"
    return said
