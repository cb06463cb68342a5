"""``agents_md`` (off by default): a sentinel block in the project's own ``AGENTS.md``.

That file is the user's repository, so memd writes there only when asked, only between its
sentinels, and never creates the file in a folder that no longer exists. It must be a regular file
inside the project: a symlink (``AGENTS.md -> ../../.bashrc``) is refused, never written through.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline import roster
from pipeline.publish.blockfile import plan_block_file, plan_block_withdraw
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext
from pipeline.publish.targets.base import PublishTarget
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET = "agents_md"


def readers() -> tuple[str, ...]:
    """The agents that load a project's ``AGENTS.md`` (``Agent.reads_agents_md``: its block names
    memd's MCP tools when one of them has memd's server)."""
    return tuple(agent.name for agent in roster.agents_md_readers())


class AgentsMd(PublishTarget):
    """``[publish] agents_md``: each project's own ``AGENTS.md``; it serves no global scope."""

    project_name = TARGET

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=publish.on(TARGET))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """Each project folder memd knows that exists (memd replaces ``AGENTS.md`` by a rename there):
        never the whole home folder. A project memd first sees later is opened by writing the
        service unit again."""
        return sorted({Path(p) for p in projects if Path(p).is_absolute() and Path(p).is_dir()})

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        project = ctx.projects.get(scope.scope)
        if not project or not Path(project).is_dir():
            plan = Plan(target=TARGET, scope=scope.scope, location=Path(project or "."))
            plan.skip_reason = (
                "no project path is recorded for this scope"
                if not project
                else f"the project folder {project} no longer exists"
            )
            return plan
        return plan_block_file(
            TARGET,
            scope,
            Path(project) / "AGENTS.md",
            title=f"Memory of {project}",
            previous_sha=previous_sha,
            within=Path(project),
            tools=ctx.mcp.note(*readers(), project=project),
        )

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return plan_block_withdraw(row.target, row.scope, location, previous_sha=row.content_sha256)
