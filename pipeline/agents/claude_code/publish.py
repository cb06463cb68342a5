"""Claude Code: the project's auto-memory folder, and the global scope in ``~/.claude/CLAUDE.md``.

Claude Code keeps a project's auto memory in ``~/.claude/projects/<encoded repo root>/memory/``
(every character that is not an ASCII letter or digit becomes ``-``; a name over 200 characters is
cut to 200 and given a hash suffix) and loads the first 200 lines, at most 25 KB, of ``MEMORY.md``
there into every session started in the repository, in any of its worktrees or subfolders.
Auto memory can be turned off (``"autoMemoryEnabled": false`` in the user's or the project's
settings): then the folder is never loaded, and memd says so instead of publishing where no one reads.

Two projects whose paths differ only in such characters (``/x/my-app`` and ``/x/my.app``) share
one folder, and each would load the other's memory: memd refuses both, naming the other, and takes
back what it wrote there (the SessionStart hook, per directory, serves them instead). memd writes
only inside Claude Code's home, never through a symlink, except that a global ``CLAUDE.md`` may
link to a regular file the user owns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.agents.claude_code import NAME
from pipeline.agents.claude_code.folder import (
    GLOBAL_FILE,
    auto_memory_off,
    encode_project_dir,
    memory_folder,
)
from pipeline.publish.blockfile import (
    plan_user_file,
    withdraw_user_file,
)
from pipeline.publish.folder import LoadCut, plan_folder, plan_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, unusable_project
from pipeline.publish.targets import encoded
from pipeline.publish.targets.base import PublishTarget, user_file_folder
from pipeline.publish.targets.limits import lines_and_bytes
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET = "claude_code"
TARGET_GLOBAL = "claude_code_global"
AGENT = "Claude Code"
CUT = LoadCut(*lines_and_bytes(TARGET))
HOOK_HINT = (
    "`memd hooks install claude-code` gives each its memory at session start (`memd recall`, per directory)"
)


def claude_home(homes: Homes) -> Path:
    """Claude Code's home folder (``~/.claude``): the parent of its transcripts root."""
    return homes.root(NAME).parent


def shared_folders(ctx: PublishContext) -> dict[str, list[str]]:
    """Claude Code's folder name -> the projects memd knows (and that exist) mapping to it, for
    the folders more than one maps to."""
    return encoded.sharing(ctx, encode_project_dir)


def plan_shared(
    ctx: PublishContext,
    scope: ScopeMemory,
    project: str,
    others: Sequence[str],
    previous_sha: str | None,
    take_back: bool,
) -> Plan:
    """A project whose folder another project shares: refused with the reason; ``take_back``: the
    plan also takes memd's copy out of the folder (one plan per folder does)."""
    home = claude_home(ctx.homes)
    folder = memory_folder(home, project)
    reason = (
        f"{project} shares Claude Code's folder {folder.parent} with {', '.join(others)} (Claude Code "
        "names a project's folder by its path with every character that is not a letter or digit made "
        "'-'), so each would load the other's memory: memd publishes there for neither and takes back "
        f"what it wrote; {HOOK_HINT}"
    )
    return encoded.refuse_shared(
        TARGET, scope.scope, folder, home, previous_sha=previous_sha, take_back=take_back, reason=reason
    )


class ClaudeCode(PublishTarget):
    """``[publish] claude_code``: each project's auto-memory folder; ``claude_code_global``: the
    global scope in ``CLAUDE.md``. Both under Claude Code's home, the parent of its transcripts root."""

    project_name = TARGET
    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=publish.on(TARGET), global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """The folder of the projects' folders, whose ``<project>/memory`` memd writes (not the rest
        of Claude Code's home: its settings and credentials stay read-only); the home itself only for
        the global ``CLAUDE.md``."""
        home = claude_home(homes)
        wanted = {TARGET: home / "projects", TARGET_GLOBAL: user_file_folder(home / GLOBAL_FILE)}
        return [folder for name, folder in wanted.items() if name in names]

    def plan_projects(
        self, ctx: PublishContext, scopes: Sequence[ScopeMemory], previous: Mapping[str, str | None]
    ) -> list[Plan]:
        """One plan per project scope; projects that share a folder are refused (``plan_shared``)."""
        shared = shared_folders(ctx) if claude_home(ctx.homes).is_dir() else {}
        return encoded.plan_projects(
            TARGET,
            ctx,
            scopes,
            previous,
            encode=encode_project_dir,
            shared=shared,
            plan_one=self.plan_project,
            plan_shared=plan_shared,
        )

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        home = claude_home(ctx.homes)
        skipped = unusable_project(TARGET, scope.scope, ctx, home, AGENT, lambda p: memory_folder(home, p))
        if skipped is not None:
            return skipped
        project = ctx.projects[scope.scope]
        folder = memory_folder(home, project)
        if (off := auto_memory_off(home, project)) is not None:
            plan = Plan(target=TARGET, scope=scope.scope, location=folder)
            plan.skip_reason = (
                f"Claude Code's auto memory is off for this project (autoMemoryEnabled is false in {off}): "
                "`memd hooks install claude-code` gives its sessions the memory instead"
            )
            return plan
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

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        return plan_user_file(
            TARGET_GLOBAL,
            scope,
            claude_home(ctx.homes),
            GLOBAL_FILE,
            agent=AGENT,
            previous_sha=previous_sha,
            tools=ctx.mcp.note(NAME),
        )

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        if row.target == TARGET:
            return plan_withdraw(
                row.target,
                row.scope,
                location,
                previous_sha=row.content_sha256,
                within=claude_home(ctx.homes),
            )
        return withdraw_user_file(row.target, row.scope, location, previous_sha=row.content_sha256)
