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

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.publish.blockfile import (
    plan_user_file,
    withdraw_user_file,
)
from pipeline.publish.folder import LoadCut, plan_folder, plan_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, unusable_project
from pipeline.publish.targets import encoded
from pipeline.publish.targets.base import PublishTarget, user_file_folder
from pipeline.safefile import read_capped
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication
from pipeline.vocabulary import SourceName

TARGET = "claude_code"
TARGET_GLOBAL = "claude_code_global"
AGENT = "Claude Code"
CUT = LoadCut(max_lines=200, max_bytes=25_000)
MAX_ENCODED_CHARS = 200
SETTINGS_MAX_BYTES = 1_000_000
"""The most memd reads of a Claude Code settings file (they hold a few kilobytes)."""
HOOK_HINT = (
    "`memd hooks install claude-code` gives each its memory at session start (`memd recall`, per directory)"
)
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")


def _js_string_hash(text: str) -> int:
    """Java/JavaScript ``(h << 5) - h + code`` over UTF-16 code units, as a signed 32-bit integer."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
        if value == 0:
            return out


def encode_project_dir(project: str) -> str:
    """Claude Code's folder name for a project path."""
    encoded = _NOT_ALNUM.sub("-", project)
    if len(encoded) <= MAX_ENCODED_CHARS:
        return encoded
    return f"{encoded[:MAX_ENCODED_CHARS]}-{_base36(abs(_js_string_hash(project)))}"


def claude_home(homes: Homes) -> Path:
    """Claude Code's home folder (``~/.claude``): the parent of its transcripts root."""
    return homes.root(SourceName.CLAUDE_CODE).parent


def memory_folder(claude_home: Path, project: str) -> Path:
    return claude_home / "projects" / encode_project_dir(project) / "memory"


def auto_memory_off(claude_home: Path, project: str) -> Path | None:
    """The settings file that turns Claude Code's auto memory off for ``project``, or None. The most
    specific file that sets ``autoMemoryEnabled`` decides: the project's ``settings.local.json``,
    then its ``settings.json``, then the user's. A file that is not valid JSON is passed over; one
    that is not a regular file or is huge raises ``safefile.UnsafeFile`` (memd cannot tell)."""
    for path in (
        Path(project) / ".claude" / "settings.local.json",
        Path(project) / ".claude" / "settings.json",
        claude_home / "settings.json",
    ):
        try:
            data = json.loads(read_capped(path, SETTINGS_MAX_BYTES))
        except (FileNotFoundError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("autoMemoryEnabled"), bool):
            return None if data["autoMemoryEnabled"] else path
    return None


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
        return self._on(project=publish.claude_code, global_=publish.claude_code_global)

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """The folder of the projects' folders, whose ``<project>/memory`` memd writes (not the rest
        of Claude Code's home: its settings and credentials stay read-only); the home itself only for
        the global ``CLAUDE.md``."""
        home = claude_home(homes)
        wanted = {TARGET: home / "projects", TARGET_GLOBAL: user_file_folder(home / "CLAUDE.md")}
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
        )

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        return plan_user_file(
            TARGET_GLOBAL, scope, claude_home(ctx.homes), "CLAUDE.md", agent=AGENT, previous_sha=previous_sha
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
