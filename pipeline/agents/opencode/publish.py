"""OpenCode: the global scope in a sentinel block of ``$XDG_CONFIG_HOME/opencode/AGENTS.md``
(``opencode_global``, off by default). OpenCode has no memory of its own; it puts that file, and
each project's ``AGENTS.md`` (the ``agents_md`` target), in every session's system prompt.

OpenCode loads the *first* of ``~/.config/opencode/AGENTS.md`` and ``~/.claude/CLAUDE.md``: creating
the first would silently drop the second from OpenCode's sessions. So memd creates it only when
there is no ``~/.claude/CLAUDE.md``; otherwise it skips with that reason until the user creates the
file (even empty), and from then on keeps its block in it. It may be a symlink to a regular file
the user owns, like the other agents' global files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.agents.opencode import NAME
from pipeline.publish.blockfile import (
    plan_user_file,
    withdraw_user_file,
)
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, missing_home
from pipeline.publish.targets.base import PublishTarget, user_file_folder
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET_GLOBAL = "opencode_global"
GLOBAL_FILE = "AGENTS.md"
AGENT = "OpenCode"


def config_dir(homes: Homes) -> Path:
    """OpenCode's configuration folder, ``$XDG_CONFIG_HOME/opencode``."""
    return homes.config_home / "opencode"


class OpenCode(PublishTarget):
    """``[publish] opencode_global``: the global scope in OpenCode's global ``AGENTS.md``."""

    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        return [user_file_folder(config_dir(homes) / GLOBAL_FILE)]

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        home = config_dir(ctx.homes)
        if (absent := missing_home(TARGET_GLOBAL, scope.scope, home, AGENT)) is not None:
            return absent
        path = home / GLOBAL_FILE
        claude_md = ctx.homes.user / ".claude" / "CLAUDE.md"
        if not path.exists() and not path.is_symlink() and claude_md.exists():
            plan = Plan(target=TARGET_GLOBAL, scope=scope.scope, location=path)
            plan.skip_reason = (
                f"{path} does not exist and OpenCode reads {claude_md} only while it does not: create it "
                "(even empty) for memd to publish there"
            )
            return plan
        tools = ctx.mcp.note(NAME)
        return plan_user_file(
            TARGET_GLOBAL, scope, home, path.name, agent=AGENT, previous_sha=previous_sha, tools=tools
        )

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return withdraw_user_file(row.target, row.scope, location, previous_sha=row.content_sha256)
