"""Pi: the global scope in a sentinel block of the instruction file Pi loads from its agent folder.

Pi 1.6 puts, into every session's system prompt, one context file from ``~/.pi/agent/``
(``$PI_CODING_AGENT_DIR`` moves it) and one from each folder from / down to its working directory:
in each folder the first of ``AGENTS.override.md``, ``AGENTS.md``, ``AGENTS.MD``, ``CLAUDE.md``,
``CLAUDE.MD`` that exists. So memd writes its block into the file Pi loads there (the user's
``AGENTS.override.md`` or ``CLAUDE.md`` when that is the one), and creates ``AGENTS.md`` only when
the folder holds none of them: a block in a file Pi does not load would be published for nothing,
and an ``AGENTS.md`` beside the user's ``CLAUDE.md`` would hide it. When the file Pi loads there
changes (the user adds an ``AGENTS.override.md``), memd's block moves: the same plan empties it in
the file Pi no longer loads, so no copy of the memory (a forgotten note among it) stays behind in a
file that would come back into use when the user removes the new one. A project's scope reaches Pi
through the project's own ``AGENTS.md`` (the ``agents_md`` target), which it loads from the
repository root when it runs below it. Pi has no memory of its own. Off unless asked: the file is
the user's, and memd writes only between its sentinels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pipeline.agents.pi import CONTEXT_FILES, LABEL, NAME
from pipeline.publish.blockfile import plan_block_withdraw, plan_user_file, withdraw_user_file
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext
from pipeline.publish.targets.base import PublishTarget, user_file_folder
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET_GLOBAL = "pi_global"
DEFAULT_FILE = "AGENTS.md"


def agent_folder(homes: Homes) -> Path:
    """Pi's agent folder (``$PI_CODING_AGENT_DIR``, ``~/.pi/agent``): the parent of its ``sessions``
    root; when the ``sessionDir`` setting moved the sessions elsewhere, ``~/.pi/agent``."""
    root = homes.root(NAME)
    return root.parent if root.name == "sessions" else homes.user / ".pi" / "agent"


def loaded_file(folder: Path) -> str:
    """The name of the context file Pi loads from ``folder``: the first of ``CONTEXT_FILES`` there
    (a symlink counts: Pi follows it), else ``AGENTS.md`` (the one memd creates)."""
    try:
        present = set(os.listdir(folder))
    except OSError:
        return DEFAULT_FILE
    return next((name for name in CONTEXT_FILES if name in present), DEFAULT_FILE)


class Pi(PublishTarget):
    """``[publish] pi_global``: the global scope in the context file Pi loads from its agent folder."""

    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        folder = agent_folder(homes)
        return sorted({user_file_folder(folder / name) for name in (loaded_file(folder), *CONTEXT_FILES)})

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        folder = agent_folder(ctx.homes)
        loaded = loaded_file(folder)
        plan = plan_user_file(
            TARGET_GLOBAL,
            scope,
            folder,
            loaded,
            agent=LABEL,
            previous_sha=previous_sha,
            tools=ctx.mcp.note(NAME),
        )
        if plan.error or plan.refused or plan.skip_reason:
            return plan
        for name in CONTEXT_FILES:
            if name != loaded:
                _move_block_out(plan, folder / name, scope.scope)
        return plan

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return withdraw_user_file(row.target, row.scope, location, previous_sha=row.content_sha256)


def _move_block_out(plan: Plan, path: Path, scope: str) -> None:
    """Add to ``plan`` emptying memd's block in ``path``, a context file Pi no longer loads."""
    if not (path.exists() or path.is_symlink()):
        return
    stale = plan_block_withdraw(plan.target, scope, path, previous_sha=None, follow_link=True)
    if stale.changes and not (stale.error or stale.refused):
        plan.changes.extend(stale.changes)
        plan.notes.append(f"memd's block moved from {path} to {plan.location}: the file Pi loads there now")
    elif stale.error or stale.refused:
        plan.notes.append(
            f"memd's old block in {path} (Pi no longer loads it) was left: {stale.error or stale.refused}"
        )
