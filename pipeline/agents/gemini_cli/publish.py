"""Gemini CLI: its private project memory ``~/.gemini/tmp/<short name>/memory/MEMORY.md``, and the
global scope in ``~/.gemini/GEMINI.md``.

Gemini CLI (0.29+) names a project's folder by a short name that ``~/.gemini/projects.json``
(``{"projects": {<absolute path>: <short name>}}``) maps the directory it was started in to. A
project started from a subfolder or a worktree has its own entry, so memd publishes to every
entry whose directory belongs to the scope's project. memd never invents a short name: a project
Gemini CLI has not seen is skipped with that reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.agents.gemini_cli import NAME
from pipeline.layout import GLOBAL_SCOPE
from pipeline.projects import ProjectResolver
from pipeline.publish.blockfile import (
    plan_user_file,
    withdraw_user_file,
)
from pipeline.publish.folder import LoadCut, plan_folder, plan_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, digest_of
from pipeline.publish.targets.base import PublishTarget, failed_plan, guard, user_file_folder
from pipeline.publish.targets.limits import lines_and_bytes
from pipeline.safefile import UnsafeFile, read_capped
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET = "gemini"
TARGET_GLOBAL = "gemini_global"
GLOBAL_FILE = "GEMINI.md"
AGENT = "Gemini CLI"
CUT = LoadCut(*lines_and_bytes(TARGET))
"""Gemini CLI documents no cap; memd keeps to the same budget as for Claude Code (``limits``)."""
PROJECTS_JSON_MAX_BYTES = 8_000_000
"""The most memd reads of ``projects.json`` (about a hundred bytes a project)."""


def read_projects_json(gemini_home: Path) -> dict[str, str]:
    """Path -> short name from ``projects.json``; empty when missing or not JSON;
    ``safefile.UnsafeFile`` when it is not a regular file or is huge."""
    try:
        data = json.loads(read_capped(gemini_home / "projects.json", PROJECTS_JSON_MAX_BYTES))
    except (FileNotFoundError, ValueError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {
        str(path): str(name)
        for path, name in projects.items()
        if isinstance(path, str)
        and isinstance(name, str)
        and name
        and "/" not in name
        and name not in {".", ".."}
    }


def short_names_for(project: str, registry: dict[str, str], resolver: ProjectResolver) -> list[str]:
    """Every short name whose directory is the project, inside it, or one of its worktrees."""
    names: list[str] = []
    root = os.path.normpath(project)
    for path, name in sorted(registry.items()):
        norm = os.path.normpath(path)
        belongs = norm == root or norm.startswith(root.rstrip("/") + "/")
        if not belongs and Path(norm).is_dir():
            belongs = resolver.resolve(norm) == project
        if belongs and name not in names:
            names.append(name)
    return names


def gemini_home(homes: Homes) -> Path:
    """Gemini CLI's home folder (``~/.gemini``): the parent of its transcripts root."""
    return homes.root(NAME).parent


def plan_project_folders(
    ctx: PublishContext,
    scope: ScopeMemory,
    previous_sha: str | None,
    registry: dict[str, str],
    resolver: ProjectResolver,
) -> Plan:
    """One plan covering every Gemini CLI folder of the project (a subfolder or worktree has its own)."""
    project = ctx.projects.get(scope.scope)
    home = gemini_home(ctx.homes)
    tmp = home / "tmp"
    if not project:
        plan = Plan(target=TARGET, scope=scope.scope, location=tmp)
        plan.skip_reason = "no project path is recorded for this scope"
        return plan
    names = short_names_for(project, registry, resolver)
    if not names:
        plan = Plan(target=TARGET, scope=scope.scope, location=tmp)
        plan.skip_reason = f"Gemini CLI has not been used in {project} (not in {home / 'projects.json'})"
        return plan
    parts = [
        plan_folder(
            TARGET,
            scope,
            tmp / name / "memory",
            title=f"Memory of {project}",
            cut=CUT,
            previous_sha=None,
            within=home,
            tools=ctx.mcp.note(NAME, project=project),
        )
        for name in names
    ]
    merged = Plan(target=TARGET, scope=scope.scope, location=parts[0].location)
    for part in parts:
        if part.error:
            merged.error = part.error
            return merged
        if part.refused:
            merged.refused = part.refused
            return merged
        merged.changes.extend(part.changes)
        merged.published.update(part.published)
        if part.skip_reason:
            merged.skip_reason = part.skip_reason
    merged.digest = digest_of({str(p.location): p.digest for p in parts})
    merged.disk_digest = digest_of({str(p.location): p.disk_digest for p in parts})
    if len(parts) > 1:
        merged.notes.append("also in " + ", ".join(str(p.location) for p in parts[1:]))
    if previous_sha is not None and merged.disk_digest != previous_sha:
        merged.outside_change = True
        merged.notes.append("memd's files or block there were changed by someone else since the last publish")
    return merged


class Gemini(PublishTarget):
    """``[publish] gemini``: each project's private memory folders; ``gemini_global``: the global
    scope in ``GEMINI.md``. Both under Gemini CLI's home, the parent of its transcripts root."""

    project_name = TARGET
    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=publish.on(TARGET), global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """``tmp``, the folder of the projects' folders (memd writes their ``memory``); the home itself
        only for the global ``GEMINI.md``."""
        home = gemini_home(homes)
        wanted = {TARGET: home / "tmp", TARGET_GLOBAL: user_file_folder(home / GLOBAL_FILE)}
        return [folder for name, folder in wanted.items() if name in names]

    def plan_projects(
        self, ctx: PublishContext, scopes: Sequence[ScopeMemory], previous: Mapping[str, str | None]
    ) -> list[Plan]:
        """``projects.json`` is read once for every project."""
        projects = [s for s in scopes if s.scope != GLOBAL_SCOPE]
        if not projects:
            return []
        try:
            registry = read_projects_json(gemini_home(ctx.homes))
        except UnsafeFile as exc:
            return [failed_plan(TARGET, s.scope, exc) for s in projects]
        resolver = ProjectResolver()
        return [
            guard(TARGET, s.scope, plan_project_folders, ctx, s, previous.get(s.scope), registry, resolver)
            for s in projects
        ]

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        registry = read_projects_json(gemini_home(ctx.homes))
        return plan_project_folders(ctx, scope, previous_sha, registry, ProjectResolver())

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        return plan_user_file(
            TARGET_GLOBAL,
            scope,
            gemini_home(ctx.homes),
            GLOBAL_FILE,
            agent=AGENT,
            previous_sha=previous_sha,
            tools=ctx.mcp.note(NAME),
        )

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        if row.target == TARGET:
            # Several folders' digest: no single block can be vouched for, so no repair here.
            return plan_withdraw(
                row.target, row.scope, location, previous_sha=None, within=gemini_home(ctx.homes)
            )
        return withdraw_user_file(row.target, row.scope, location, previous_sha=row.content_sha256)
