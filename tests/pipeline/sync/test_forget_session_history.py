"""`memd forget --session` = gone, history included (issue 32): a session forget rewrites the
history as a memory forget does. No commit memd's refs reach holds what the session taught (its
inputs, the topics citing it); a first sync never pushes it; with a remote the rewrite travels as a
signed new history that the other machine adopts. Real git, machines over ``git daemon`` on
127.0.0.1, the forget as the command runs it (``forget_now`` on a ``Runtime``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from daemon.runtime import Runtime
from daemon.usecases.changes import Forgotten, forget_now
from pipeline.clock import FakeClock
from pipeline.projects import scope_for
from pipeline.sync.rewrites import REWRITE_TRAILER
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.sync.forgetting import FORGOTTEN, agent, host_gc, learn, reaching, served, synced
from tests.pipeline.sync.support import Machine, git, two_machines

pytestmark = [pytest.mark.timeout(300)]

KEPT = "Run the test suite with make check before each push"


@pytest.fixture
async def machines(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> AsyncIterator[tuple[Machine, Machine]]:
    async with two_machines(tmp_path, fake_api, clock) as pair_:
        fake_api.responder = agent
        yield pair_


async def forget_session(m: Machine, session: str) -> Forgotten:
    rt = Runtime(m.store, lambda: m.settings, clock=m.env.clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY})
    try:
        done = await forget_now(rt, session_id=session)
    finally:
        await rt.aclose()
    assert done.ok, done
    return done


async def test_a_session_forget_rewrites_history_and_the_rewrite_travels(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = machines
    scope = scope_for(str(a.project))
    await a.env.add_extract("beta", project=str(a.project), raw=f"- {KEPT}", summary=f"{KEPT}.")
    await learn(a, "alpha", FORGOTTEN)
    await synced(a)
    await synced(b)
    assert FORGOTTEN in b.tree()[f"{scope}/s-alpha.md"]
    old_tip = git(served(tmp_path), "rev-parse", "main").strip()

    done = await forget_session(a, "alpha")
    assert done.synced is not None
    assert done.synced.outcome == SyncOutcome.SYNCED, done.synced.lines()
    assert done.synced.replaced == old_tip, done.synced.lines()  # leased on the old tip
    assert reaching(a.settings.paths.memory_dir, FORGOTTEN) == []
    message = git(served(tmp_path), "log", "-1", "--format=%B", f"--grep={REWRITE_TRAILER}-Of", "main")
    assert f"{REWRITE_TRAILER}-Of: {old_tip}" in message

    report = await b.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.lines()
    assert report.adopted, report.lines()
    for m in (a, b):
        tree = m.tree()
        assert f"{scope}/s-alpha.md" not in tree, m.name
        assert KEPT in tree[f"{scope}/s-beta.md"], m.name  # nothing else lost
        assert reaching(m.settings.paths.memory_dir, FORGOTTEN) == [], m.name
    host_gc(served(tmp_path))
    assert reaching(served(tmp_path), FORGOTTEN) == []


async def test_a_first_sync_never_pushes_a_forgotten_session(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, _b = machines
    await a.env.add_extract("beta", project=str(a.project), raw=f"- {KEPT}", summary=f"{KEPT}.")
    await learn(a, "alpha", FORGOTTEN)
    git(a.settings.paths.memory_dir, "config", "--local", "--unset-all", "remote.origin.url", check=False)
    settings = a.settings
    a.env.settings = settings.model_copy(  # not synced yet: the forget is this machine's alone
        update={"sync": settings.sync.model_copy(update={"remote": ""})}
    )
    await forget_session(a, "alpha")
    assert reaching(a.settings.paths.memory_dir, FORGOTTEN) == []
    a.env.settings = settings
    await synced(a)
    host_gc(served(tmp_path))
    assert reaching(served(tmp_path), FORGOTTEN) == []
    assert KEPT in git(served(tmp_path), "log", "-p", "main")
