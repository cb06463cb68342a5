"""Cline: memd's rule files, which its CLI loads at session start into the system prompt.

Cline (3.0.65) loads rules from the folder it runs in only (``AGENTS.md``, ``.clinerules/``,
``.cline/rules/``; it never walks up to the git root) and, for every project, ``~/.cline/rules/``
(``$CLINE_DIR/rules``). It joins every rule whole under ``## <file stem>``, and two rules of one
name collapse into one, so memd's two files have names of their own:

- ``cline_global`` (on): the global scope in ``~/.cline/rules/memd-global-memory.md``, a file
  memd makes and owns in Cline's own folder (it edits nothing of the user's).
- ``cline`` (off): a project's scope in ``<folder>/.clinerules/memd-memory.md`` for the project's
  root and every folder of it where Cline ran (the ``cwd`` its session manifests record): the
  only way a project's memory reaches Cline run in ``src/``. Off by default because it writes
  into the repository's working tree, as ``agents_md`` does. A project memory in a user-wide rule
  would reach every project, so memd never writes one.

Each file is memd's sentinel block (the user may add text around it), written atomically inside
its own folder (``~/.cline`` or the project), never through a symlink. The project's files are one
publication: the same block in every folder (a folder whose copy cannot be written, its sentinels
broken or a link in its way, is left alone and named in a note; the others are still written).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.agents.cline import GLOBAL_FILE, NAME, RULES_FILE
from pipeline.agents.cline.runs import folders_in, recorded_cwds
from pipeline.publish.blockfile import GLOBAL_TITLE, plan_block_file, plan_block_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, missing_home
from pipeline.publish.targets.base import PublishTarget
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET = "cline"
TARGET_GLOBAL = "cline_global"
AGENT = "Cline"
RULES_FOLDER = ".clinerules"


def sessions_root(homes: Homes) -> Path:
    return homes.root(NAME)


def cline_dir(homes: Homes) -> Path:
    """``~/.cline`` (``$CLINE_DIR``): two levels above its sessions root (``<dir>/data/sessions``),
    else the user's ``~/.cline`` when the root was moved elsewhere."""
    root = sessions_root(homes)
    if root.name == "sessions" and root.parent.name == "data":
        return root.parent.parent
    return homes.user / ".cline"


def rule_file(folder: Path) -> Path:
    return folder / RULES_FOLDER / RULES_FILE


class Cline(PublishTarget):
    """``[publish] cline`` (each project's rule files) and ``cline_global`` (the user-wide one)."""

    project_name = TARGET
    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=publish.on(TARGET), global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        out: set[Path] = set()
        if TARGET_GLOBAL in names:
            out.add(cline_dir(homes) / "rules")  # its rules folder only, never the whole ~/.cline
        if TARGET in names:
            out.update(Path(p) for p in projects if Path(p).is_absolute() and Path(p).is_dir())
        return sorted(out)

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        home = cline_dir(ctx.homes)
        if (absent := missing_home(TARGET_GLOBAL, scope.scope, home, AGENT)) is not None:
            return absent
        return plan_block_file(
            TARGET_GLOBAL,
            scope,
            home / "rules" / GLOBAL_FILE,
            title=GLOBAL_TITLE,
            previous_sha=previous_sha,
            within=home,
            tools=ctx.mcp.note(NAME),
        )

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        home = cline_dir(ctx.homes)
        if (absent := missing_home(TARGET, scope.scope, home, AGENT)) is not None:
            return absent
        project = ctx.projects.get(scope.scope)
        if not project or not Path(project).is_dir():
            plan = Plan(target=TARGET, scope=scope.scope, location=Path(project or "."))
            plan.skip_reason = (
                "no project path is recorded for this scope"
                if not project
                else f"the project folder {project} no longer exists"
            )
            return plan
        root = Path(project)
        plans = [
            plan_block_file(
                TARGET,
                scope,
                rule_file(folder),
                title=f"Memory of {project}",
                previous_sha=previous_sha,
                within=root,
                tools=ctx.mcp.note(NAME),
            )
            for folder in folders_in(root, recorded_cwds(sessions_root(ctx.homes)))
        ]
        return _merged(plans, TARGET, scope.scope, rule_file(root))

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        if row.target == TARGET_GLOBAL:
            return plan_block_withdraw(
                row.target, row.scope, location, previous_sha=row.content_sha256, within=cline_dir(ctx.homes)
            )
        root = location.parent.parent
        plans = [
            plan_block_withdraw(
                row.target, row.scope, rule_file(folder), previous_sha=row.content_sha256, within=root
            )
            for folder in folders_in(root, recorded_cwds(sessions_root(ctx.homes)))
        ]
        merged = _merged(plans, row.target, row.scope, location)
        merged.withdraw = True
        return merged


def _merged(plans: list[Plan], target: str, scope: str, location: Path) -> Plan:
    """One publication of the same block in several folders: the root's plan, with the others'
    changes; a folder whose copy is refused or failed is left alone and said in a note (the others
    are still written, so one folder's trouble never keeps memory from the rest)."""
    first = plans[0]
    merged = Plan(
        target=target,
        scope=scope,
        location=location,
        digest=first.digest,
        disk_digest=first.disk_digest,
        skip_reason=first.skip_reason,
        refused=first.refused,
        error=first.error,
        outside_change=first.outside_change,
        published=dict(first.published),
        notes=list(first.notes),
        within=location.parent.parent,
        changes=list(first.changes),
    )
    for plan in plans[1:]:
        trouble = plan.refused or plan.error
        if trouble:
            merged.notes.append(f"left alone: {trouble}")
            continue
        merged.changes.extend(plan.changes)
        merged.notes.extend(f"{plan.location}: {note}" for note in plan.notes)
        merged.outside_change = merged.outside_change or plan.outside_change
        merged.published.update(plan.published)
    return merged
