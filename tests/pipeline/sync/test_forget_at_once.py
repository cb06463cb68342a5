"""Two machines forgetting at once (issue 32): A and B each forget while both are synced to the same
remote; A's rewrite reaches the remote first. B's next sync verifies and adopts A's signed rewrite,
as any machine does, then applies its own forget records on top: when its forgotten text is still
in the adopted history it rewrites that again (a new signed rewrite, leased on A's), which A adopts
in turn. Afterwards no forgotten text of either forget is reachable on A, B or the remote, and the
unsynced work of each machine is kept. Real git, machines over ``git daemon`` on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.projects import scope_for
from pipeline.sync.rewrites import REWRITE_TRAILER
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sync.forgetting import FORGOTTEN, agent, forget, host_gc, learn, reaching, served, synced
from tests.pipeline.sync.support import Machine, git, two_machines

pytestmark = [pytest.mark.timeout(300)]

OTHER = "Rotate the staging database password on the first Monday of the month"
WORK_A = "Write the changelog entry in the pull request"
WORK_B = "Run the test suite with make check before each push"


@pytest.fixture
async def paired(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> AsyncIterator[tuple[Machine, Machine]]:
    async with two_machines(tmp_path, fake_api, clock) as machines:
        fake_api.responder = agent
        yield machines


async def _both_hold(a: Machine, b: Machine) -> str:
    scope = scope_for(str(a.project))
    await a.env.add_extract("gamma", project=str(a.project), raw=f"- {OTHER}", summary=f"{OTHER}.")
    await learn(a, "alpha", FORGOTTEN)
    await synced(a)
    await synced(b)
    assert {f"{scope}/s-alpha.md", f"{scope}/s-gamma.md"} <= set(b.tree())
    return scope


async def _forget_at_once(a: Machine, b: Machine, a_forgets: str, b_forgets: str) -> None:
    """B forgets offline (its rewrite waits), A forgets and pushes its rewrite first; each machine
    has unsynced work besides."""
    await forget(b, b_forgets, online=False)
    await learn(b, "beta", WORK_B)
    await forget(a, a_forgets)
    await learn(a, "delta", WORK_A)


def _gone_everywhere(tmp_path: Path, machines: tuple[Machine, ...], *texts: str) -> None:
    host_gc(served(tmp_path))
    for path in [*(m.settings.paths.memory_dir for m in machines), served(tmp_path)]:
        for text in texts:
            assert reaching(path, text) == [], (path, text)


async def test_two_forgets_of_different_memories_at_once_both_hold_everywhere(
    paired: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = paired
    scope = await _both_hold(a, b)
    await _forget_at_once(a, b, f"{scope}/s-alpha.md", f"{scope}/s-gamma.md")
    a_rewrite = git(served(tmp_path), "rev-parse", "main").strip()

    report = await b.sync()  # the remote holds A's rewrite, B holds its own
    assert report.outcome == SyncOutcome.SYNCED, report.lines()
    assert report.adopted, report.lines()
    assert report.replaced == a_rewrite, report.lines()  # B's new rewrite is leased on A's
    assert report.pushed, report.lines()
    message = git(served(tmp_path), "log", "-1", "--format=%B", f"--grep={REWRITE_TRAILER}-Of", "main")
    assert f"{REWRITE_TRAILER}-Of: {a_rewrite}" in message

    report = await a.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.lines()
    assert report.adopted, report.lines()
    await synced(b)
    for m in (a, b):
        tree = m.tree()
        assert f"{scope}/s-alpha.md" not in tree, m.name
        assert f"{scope}/s-gamma.md" not in tree, m.name
        assert {f"{scope}/s-beta.md", f"{scope}/s-delta.md"} <= set(tree), m.name  # nothing else lost
        assert WORK_A in tree[f"{scope}/s-delta.md"]
        assert WORK_B in tree[f"{scope}/s-beta.md"]
        assert a.repo_head() == b.repo_head()
    _gone_everywhere(tmp_path, (a, b), FORGOTTEN, OTHER)


async def test_the_same_memory_forgotten_on_both_at_once_holds_everywhere(
    paired: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = paired
    scope = await _both_hold(a, b)
    await _forget_at_once(a, b, f"{scope}/s-alpha.md", f"{scope}/s-alpha.md")

    report = await b.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.lines()
    assert report.adopted, report.lines()
    assert report.pushed, report.lines()
    await synced(a)
    await synced(b)
    for m in (a, b):
        tree = m.tree()
        assert f"{scope}/s-alpha.md" not in tree, m.name
        assert {f"{scope}/s-beta.md", f"{scope}/s-delta.md", f"{scope}/s-gamma.md"} <= set(tree), m.name
    assert a.repo_head() == b.repo_head()
    _gone_everywhere(tmp_path, (a, b), FORGOTTEN)
