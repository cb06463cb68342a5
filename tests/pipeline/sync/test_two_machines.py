"""Two machines, one memory: real git (a bare remote, served by ``git daemon`` on 127.0.0.1), two
homes with their own state stores, memory repositories and clones of one project at different
paths, the real ``anthropic`` client against the loopback fake. Every test ends with both machines
holding and publishing the same memory, with nothing lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.projects import scope_for
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sync.support import Machine, agent, bare_remote, close, git_daemon, machine

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture
async def pair(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> AsyncIterator[tuple[Machine, Machine]]:
    fake_api.responder = agent
    remote = bare_remote(tmp_path)
    with git_daemon(remote.parent) as url:
        a = await machine("a", tmp_path, fake_api, url, clock)
        b = await machine("b", tmp_path, fake_api, url, clock)
        try:
            yield a, b
        finally:
            await close(a, b)


def _sessions_in(tree: dict[str, str], scope: str) -> set[str]:
    return {
        path.split("/")[-1].removesuffix(".md").removeprefix("s-")
        for path in tree
        if path.startswith(f"{scope}/s-")
    }


async def _converge(a: Machine, b: Machine) -> None:
    for m in (a, b, a):
        report = await m.sync()
        assert report.outcome == SyncOutcome.SYNCED, report.reason
    await a.publish()
    await b.publish()
    assert a.tree() == b.tree()
    assert a.published() == b.published()
    assert a.published(), "nothing was published"


async def test_one_project_cloned_at_two_paths_is_one_scope_and_both_sides_memory_is_kept(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    assert a.project != b.project
    scope = scope_for(str(a.project))
    assert scope == scope_for(str(b.project))
    await a.extract("alpha")
    await a.consolidate()
    assert (await a.sync()).pushed
    await b.extract("beta")
    await b.consolidate()
    report = await b.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.reason
    assert scope in report.reconsolidate  # both wrote the scope: B consolidated again on A's topics
    assert report.pushed
    await _converge(a, b)
    tree = a.tree()
    assert _sessions_in(tree, scope) == {"alpha", "beta"}
    inputs = [p for p in tree if p.startswith(f"{scope}/rollout_summaries/")]
    assert len(inputs) == 2  # the union of both machines' phase-1 inputs
    raw = tree[f"{scope}/raw_memories.md"]
    assert "alpha raw note" in raw and "beta raw note" in raw
    assert not any("<<<<<<<" in text or ">>>>>>>" in text for text in tree.values())


async def test_both_machines_consolidating_one_scope_at_the_same_moment_lose_nothing(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    await a.extract("alpha")
    await a.consolidate()
    await a.sync()
    await b.sync()
    a.env.clock.advance(timedelta(hours=7))  # past the consolidation cooldown
    await a.extract("gamma")
    await b.extract("delta")

    await asyncio.gather(a.consolidate(), b.consolidate())
    reports = await asyncio.gather(a.sync(), b.sync())
    assert all(r.outcome == SyncOutcome.SYNCED for r in reports), [r.reason for r in reports]
    assert all(r.pushed for r in reports)
    late = [r for r in reports if r.attempts > 1]
    assert late, "one push should have been rejected: both pushed from the same remote commit"
    assert late[0].reconsolidate == [scope_for(str(a.project))]  # merged, consolidated again, pushed
    await _converge(a, b)
    scope = scope_for(str(a.project))
    assert _sessions_in(a.tree(), scope) == {"alpha", "gamma", "delta"}
