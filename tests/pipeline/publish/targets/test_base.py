"""What every target inherits: its names, the names a key turns on, guarded project plans and the
default withdrawal (nothing is touched where memd has nothing known to be)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path

from pipeline.layout import GLOBAL_SCOPE
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext
from pipeline.publish.targets.base import PublishTarget
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication
from tests.pipeline.publish.support import Env


class ProjectsOnly(PublishTarget):
    project_name = "projects_only"

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=True, global_=True)

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        return []

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        if scope.scope.endswith("bad"):
            raise ValueError("no good\nsecond line")
        return Plan(target="projects_only", scope=scope.scope, location=Path("/x"))

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return Plan(
            target=row.target, scope=row.scope, location=location, withdraw=True, notes=["withdrawn here"]
        )


def ctx_of(env: Env) -> PublishContext:
    settings = env.settings()
    return PublishContext(
        memory_dir=env.memory_dir,
        homes=Homes.from_settings(settings, {"HOME": str(env.home)}),
        publish=settings.publish,
        today=date(2026, 11, 1),
        projects={},
        activity={},
    )


def scope(key: str) -> ScopeMemory:
    return ScopeMemory(scope=key, path=Path("/m") / key, summary="", index="", topics=())


def row(sha: str | None, path: str) -> Publication:
    return Publication("projects_only", "projects/a", path, sha, None, "published", None)


def test_a_target_without_a_global_scope_has_one_name_and_turns_on_only_it() -> None:
    target = ProjectsOnly()
    assert target.names == ("projects_only",)
    assert target.enabled(PublishSettings()) == {"projects_only"}


def test_project_plans_skip_the_global_scope_and_a_raising_one_fails_alone(env: Env) -> None:
    plans = ProjectsOnly().plan_projects(
        ctx_of(env), [scope(GLOBAL_SCOPE), scope("projects/ok"), scope("projects/bad")], {}
    )
    assert [(p.scope, p.error) for p in plans] == [
        ("projects/ok", None),
        ("projects/bad", "ValueError: no good"),
    ]


def test_the_default_withdrawal_touches_only_a_copy_memd_knows_is_there(env: Env) -> None:
    target = ProjectsOnly()
    known = target.plan_withdrawal(ctx_of(env), row("abc", "/agent/a"), {})
    assert (known.location, known.notes) == (Path("/agent/a"), ["withdrawn here"])
    for unknown in (row(None, "/agent/a"), row("abc", ".")):
        plan = target.plan_withdrawal(ctx_of(env), unknown, {})
        assert plan.withdraw
        assert (plan.changes, plan.notes) == ([], [])


def test_a_read_only_folder_says_how_the_service_opens_it() -> None:
    # Under the service's sandbox a folder the unit does not open is a read-only file system.
    import errno

    from pipeline.publish.targets.base import failed_plan

    plan = failed_plan(
        "agents_md", "projects/app", OSError(errno.EROFS, "Read-only file system", "/p/AGENTS.md")
    )
    assert plan.error is not None
    assert plan.error.startswith("OSError: [Errno 30] Read-only file system: '/p/AGENTS.md'")
    assert "`memd service install` again" in plan.error
    other = failed_plan("agents_md", "projects/app", OSError(errno.EACCES, "Permission denied", "/p"))
    assert "memd service install" not in (other.error or "")
