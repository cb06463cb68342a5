"""Qwen Code: the project's own managed auto-memory, ``<Qwen home>/projects/<encoded git root>/memory/``.

Qwen Code (0.24, ``memory.enableManagedAutoMemory``, on by default) keys a project's memory by its
git root (the nearest folder up from the working directory that holds ``.git``), named like its
chats folder: every character that is not an ASCII letter or digit becomes ``-``. Its home is
``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, else ``~/.qwen``: the parent of its transcripts root.
At session start it puts ``MEMORY.md`` verbatim into the system prompt, cut at 200 lines and
25,000 characters, and offers every ``*.md`` below the folder with a ``type`` of user, feedback,
project or reference (memd's topic files have one) to a side request that picks the topics to put
into the first user message. memd writes ``memd-*.md`` topic files and a sentinel block in
``MEMORY.md`` inside that cut, as for Claude Code. When Qwen saves a memory of its own it rebuilds
``MEMORY.md`` from the topic files (memd's included): memd's block is gone until the next publish,
which puts it back and says the file was changed outside memd.

Two projects whose paths differ only in such characters share one folder and would load each
other's memory: memd publishes there for neither and takes back what it wrote. A linked worktree
has its own folder (its own ``.git``), which memd does not write; nor does it follow Qwen's
``QWEN_CODE_MEMORY_LOCAL``, ``QWEN_CODE_MEMORY_BASE_DIR`` or ``QWEN_CODE_MEMORY_PROJECT_SCOPE``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.agents.qwen_code import NAME
from pipeline.publish.folder import LoadCut, plan_folder, plan_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, unusable_project
from pipeline.publish.targets import encoded
from pipeline.publish.targets.base import PublishTarget
from pipeline.publish.targets.limits import lines_and_bytes
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET = "qwen_code"
AGENT = "Qwen Code"
CUT = LoadCut(*lines_and_bytes(TARGET))
"""Qwen Code's cut of ``MEMORY.md`` (``MAX_MANAGED_AUTO_MEMORY_INDEX_LINES``/``_BYTES``)."""
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")


def encode_project_dir(project: str) -> str:
    """Qwen Code's folder name for a path (its ``sanitizeCwd``)."""
    return _NOT_ALNUM.sub("-", project)


def qwen_home(homes: Homes) -> Path:
    """Qwen Code's home (``~/.qwen``): the parent of its transcripts root."""
    return homes.root(NAME).parent


def memory_folder(home: Path, project: str) -> Path:
    return home / "projects" / encode_project_dir(project) / "memory"


class QwenCode(PublishTarget):
    """``[publish] qwen_code``: each project's memory folder under Qwen Code's home."""

    project_name = TARGET

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=publish.on(TARGET))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """The folder of the projects' folders, whose ``<project>/memory`` memd writes."""
        return [qwen_home(homes) / "projects"]

    def plan_projects(
        self, ctx: PublishContext, scopes: Sequence[ScopeMemory], previous: Mapping[str, str | None]
    ) -> list[Plan]:
        """One plan per project scope; projects that share a folder are refused."""
        return encoded.plan_projects(
            TARGET,
            ctx,
            scopes,
            previous,
            encode=encode_project_dir,
            shared=encoded.sharing(ctx, encode_project_dir),
            plan_one=self.plan_project,
            plan_shared=_plan_shared,
        )

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        home = qwen_home(ctx.homes)
        skipped = unusable_project(TARGET, scope.scope, ctx, home, AGENT, lambda p: memory_folder(home, p))
        if skipped is not None:
            return skipped
        project = ctx.projects[scope.scope]
        folder = memory_folder(home, project)
        return plan_folder(
            TARGET,
            scope,
            folder,
            title=f"Memory of {project}",
            cut=CUT,
            previous_sha=previous_sha,
            within=home,
            tools=ctx.mcp.note(NAME, project=project),
        )

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return plan_withdraw(
            row.target, row.scope, location, previous_sha=row.content_sha256, within=qwen_home(ctx.homes)
        )


def _plan_shared(
    ctx: PublishContext,
    scope: ScopeMemory,
    project: str,
    others: Sequence[str],
    previous_sha: str | None,
    take_back: bool,
) -> Plan:
    """A project whose Qwen Code folder another project shares: refused, and (once per folder)
    memd's copy taken out of it."""
    home = qwen_home(ctx.homes)
    folder = memory_folder(home, project)
    reason = (
        f"{project} shares Qwen Code's memory folder {folder} with {', '.join(others)} (Qwen Code names "
        "it by the path with every character that is not a letter or digit made '-'), so each would "
        "load the other's memory: memd publishes there for neither and takes back what it wrote"
    )
    return encoded.refuse_shared(
        TARGET, scope.scope, folder, home, previous_sha=previous_sha, take_back=take_back, reason=reason
    )
