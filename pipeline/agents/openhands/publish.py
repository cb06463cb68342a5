"""OpenHands: the global scope in a user-level skill memd owns, ``~/.openhands/skills/memd.md``
(``openhands_global``, on by default).

OpenHands (CLI 1.16) loads, at the start of every conversation, each skill file under
``~/.openhands/skills/`` (and the legacy ``~/.openhands/microagents/``): one without ``triggers:``
in front matter is always on, and its whole text goes into the system prompt's ``<REPO_CONTEXT>``
(no cut: memd keeps its block to ``BLOCK_BUDGET``). The file is memd's own (OpenHands writes no
skill there, the user has no text in it), so it is on by default, as Qwen Code's memory folder is:
it touches neither the user's repository nor a file the user wrote. It is a file of its own rather
than a block in a shared one; a symbolic link there is refused, like any file memd owns.

A user-level skill is loaded in every project, so only the global scope goes there; a project's
scope reaches OpenHands through the project's ``AGENTS.md`` (the ``agents_md`` target), which it
loads from the working directory and else the git root.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.agents.openhands import NAME
from pipeline.publish.blockfile import GLOBAL_TITLE, plan_block_file, plan_block_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, missing_home
from pipeline.publish.targets.base import PublishTarget
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET_GLOBAL = "openhands_global"
AGENT = "OpenHands"
SKILLS = "skills"
SKILL_FILE = "memd.md"


def persistence_dir(homes: Homes) -> Path:
    """OpenHands' folder (``~/.openhands``): the parent of its conversations root."""
    return homes.root(NAME).parent


def skill_file(homes: Homes) -> Path:
    return persistence_dir(homes) / SKILLS / SKILL_FILE


class OpenHands(PublishTarget):
    """``[publish] openhands_global``: the global scope in memd's user-level OpenHands skill."""

    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """The skills folder only: the rest of ``~/.openhands`` (its settings, its MCP servers) stays
        out of the service's reach. (Under the service's sandbox memd cannot create the folder: a
        publish made outside it, or OpenHands, does.)"""
        return [skill_file(homes).parent]

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        home = persistence_dir(ctx.homes)
        if (absent := missing_home(TARGET_GLOBAL, scope.scope, home, AGENT)) is not None:
            return absent
        return plan_block_file(
            TARGET_GLOBAL,
            scope,
            skill_file(ctx.homes),
            title=GLOBAL_TITLE,
            previous_sha=previous_sha,
            within=home,
            tools=ctx.mcp.note(NAME),
        )

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return plan_block_withdraw(
            row.target,
            row.scope,
            location,
            previous_sha=row.content_sha256,
            within=persistence_dir(ctx.homes),
        )
