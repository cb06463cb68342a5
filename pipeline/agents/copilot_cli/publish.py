"""GitHub Copilot CLI: the global scope in a sentinel block of ``$COPILOT_HOME/copilot-instructions.md``.

Copilot CLI (1.0) puts ``~/.copilot/copilot-instructions.md`` (``$COPILOT_HOME`` moves it) into the
system prompt of every session, as a ``<custom_instruction>`` block. It keeps no local memory of
its own ("Copilot Memory" is a remote service). A project's scope reaches it through the
project's own ``AGENTS.md`` (the ``agents_md`` target), which it loads from the git root and the
working directory. ``$COPILOT_HOME`` is the parent of its transcripts root. Off unless asked:
the file is the user's, and memd writes only between its sentinels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.agents.copilot_cli import NAME
from pipeline.publish.blockfile import (
    plan_user_file,
    withdraw_user_file,
)
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext
from pipeline.publish.targets.base import PublishTarget, user_file_folder
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET_GLOBAL = "copilot_global"
AGENT = "GitHub Copilot CLI"
INSTRUCTIONS_FILE = "copilot-instructions.md"


def copilot_home(homes: Homes) -> Path:
    """``$COPILOT_HOME`` (``~/.copilot``): the parent of Copilot CLI's transcripts root."""
    return homes.root(NAME).parent


class CopilotCli(PublishTarget):
    """``[publish] copilot_global``: the global scope in Copilot CLI's user instructions file."""

    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        return [user_file_folder(copilot_home(homes) / INSTRUCTIONS_FILE)]

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        return plan_user_file(
            TARGET_GLOBAL,
            scope,
            copilot_home(ctx.homes),
            INSTRUCTIONS_FILE,
            agent=AGENT,
            previous_sha=previous_sha,
            tools=ctx.mcp.note(NAME),
        )

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return withdraw_user_file(row.target, row.scope, location, previous_sha=row.content_sha256)
