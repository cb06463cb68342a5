"""The registry does everything by iterating its targets: a toy target, defined here only, is
planned, applied, withdrawn and given its folder in the service unit with no other change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from daemon import service_files as sf
from pipeline.clock import FakeClock
from pipeline.layout import GLOBAL_SCOPE
from pipeline.publish.atomic import encode
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Homes, Plan, PublishContext, digest_of, read_bytes
from pipeline.publish.run import PublishReport, publish_all
from pipeline.publish.targets import registry
from pipeline.publish.targets.base import PublishTarget
from pipeline.settings import PublishSettings
from pipeline.store import Store
from pipeline.store.publications import Publication, load_publications
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, topic_text, write_scope


class Toy(PublishTarget):
    """One file per scope in its own folder: ``<root>/<scope with / as ->.md`` holds the digest."""

    project_name = "toy"
    global_name = "toy_global"

    def __init__(self, root: Path, *, on: bool = True, broken: bool = False) -> None:
        self.root = root
        self.on = on
        self.broken = broken

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=self.on, global_=self.on)

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        return [self.root]

    def _plan(self, name: str, scope: ScopeMemory) -> Plan:
        path = self.root / (scope.scope.replace("/", "-") + ".md")
        plan = Plan(target=name, scope=scope.scope, location=path)
        plan.change(path, encode(f"toy: {scope.summary}"), read_bytes(path))
        plan.digest = digest_of({path.name: scope.summary})
        return plan

    def plan_project(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        if self.broken:
            raise RuntimeError("toy bug")
        return self._plan("toy", scope)

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        return self._plan("toy_global", scope)

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        plan = Plan(target=row.target, scope=row.scope, location=location, withdraw=True)
        plan.change(location, None, read_bytes(location))
        plan.digest = digest_of({})
        return plan


def register(monkeypatch: pytest.MonkeyPatch, toy: Toy) -> None:
    """``toy`` as one more entry of the registry (in place of a toy registered before)."""
    others = [t for t in registry.targets() if not isinstance(t, Toy)]
    monkeypatch.setattr(registry, "targets", lambda: (*others, toy))


def toy_results(report: PublishReport) -> set[tuple[str, str, str]]:
    return {(r.target, r.scope, r.outcome) for r in report.results if r.target.startswith("toy")}


@sqlite_only
async def test_a_toy_target_is_planned_applied_and_withdrawn(
    env: Env, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = env.tmp / "toy"
    scope = await add_scope(store, str(env.project("app")), clock.now())
    write_scope(env.memory_dir, scope, summary="Project digest.", topics={"a.md": topic_text("A")})
    write_scope(env.memory_dir, GLOBAL_SCOPE, summary="Global digest.")
    settings = env.settings(gemini=False)
    project_file = root / (scope.replace("/", "-") + ".md")

    register(monkeypatch, Toy(root))
    report = await publish_all(store, settings, clock, dry_run=True)
    assert toy_results(report) == {
        ("toy", scope, "would_publish"),
        ("toy_global", GLOBAL_SCOPE, "would_publish"),
    }
    assert not root.exists()
    report = await publish_all(store, settings, clock)
    assert toy_results(report) == {("toy", scope, "published"), ("toy_global", GLOBAL_SCOPE, "published")}
    assert project_file.read_text() == "toy: Project digest."
    assert (root / "global.md").read_text() == "toy: Global digest."
    assert ("claude_code", scope, "published") in {(r.target, r.scope, r.outcome) for r in report.results}
    rows = {(r.target, r.scope): r for r in await load_publications(store)}
    assert rows[("toy", scope)].path == str(project_file)
    assert rows[("toy_global", GLOBAL_SCOPE)].content_sha256 is not None

    report = await publish_all(store, settings, clock)
    assert toy_results(report) == {("toy", scope, "unchanged"), ("toy_global", GLOBAL_SCOPE, "unchanged")}

    register(monkeypatch, Toy(root, on=False))
    report = await publish_all(store, settings, clock)
    assert toy_results(report) == {("toy", scope, "withdrawn"), ("toy_global", GLOBAL_SCOPE, "withdrawn")}
    assert list(root.iterdir()) == []
    report = await publish_all(store, settings, clock)
    assert toy_results(report) == set()


@sqlite_only
async def test_a_toy_target_that_raises_fails_alone(
    env: Env, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = await add_scope(store, str(env.project("app")), clock.now())
    write_scope(env.memory_dir, scope, summary="Project digest.")
    register(monkeypatch, Toy(env.tmp / "toy", broken=True))
    report = await publish_all(store, env.settings(gemini=False), clock)
    outcomes = {(r.target, r.outcome) for r in report.results}
    assert outcomes == {("claude_code", "published"), ("toy", "failed")}
    assert next(r.reason for r in report.results if r.target == "toy") == "RuntimeError: toy bug"


class Exploding(Toy):
    def plan_projects(
        self, ctx: PublishContext, scopes: Sequence[ScopeMemory], previous: Mapping[str, str | None]
    ) -> list[Plan]:
        raise OSError("no such disk")


@sqlite_only
async def test_a_toy_target_whose_whole_planning_raises_fails_alone(
    env: Env, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = await add_scope(store, str(env.project("app")), clock.now())
    write_scope(env.memory_dir, scope, summary="Project digest.")
    register(monkeypatch, Exploding(env.tmp / "toy"))
    report = await publish_all(store, env.settings(gemini=False), clock)
    assert {(r.target, r.scope, r.outcome, r.reason) for r in report.results} == {
        ("claude_code", scope, "published", None),
        ("toy", GLOBAL_SCOPE, "failed", "OSError: no such disk"),
    }


def test_a_toy_targets_folder_is_in_the_service_units_sandbox_while_it_is_on(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = env.tmp / "toy"
    settings = env.settings()
    home = {"HOME": str(env.home)}

    def writable() -> str:
        text = sf.render_unit(settings, command=["/bin/memd"], config=None, env=home)
        return next(line for line in text.splitlines() if line.startswith("ReadWritePaths="))

    register(monkeypatch, Toy(root))
    assert f"-{root}" in writable().split(" ")
    register(monkeypatch, Toy(root, on=False))
    assert f"-{root}" not in writable().split(" ")


def test_each_publish_key_turns_on_one_name_of_its_own() -> None:
    names = [name for target in registry.targets() for name in target.names]
    assert len(names) == len(set(names))
    keys = [k for k, v in PublishSettings().model_dump().items() if isinstance(v, bool)]
    off = PublishSettings(**dict.fromkeys(keys, False))
    assert not any(target.enabled(off) for target in registry.targets())
    turned_on = {}
    for key in keys:
        publish = PublishSettings(**{**dict.fromkeys(keys, False), key: True})
        (turned_on[key],) = {name for target in registry.targets() for name in target.enabled(publish)}
    assert sorted(turned_on.values()) == sorted(names)
