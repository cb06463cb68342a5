"""Team mode: forget = gone, history included (issue 32). A forget on one machine of a team (one
PostgreSQL store, one git remote) rewrites the history as on any synced machine: the rewrite
travels to the team's remote as a signed new history (leased on the old tip) and the other
machine adopts it at its next sync; no commit memd's refs reach holds the forgotten text,
anywhere. Real git, real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.projects import scope_for
from pipeline.store import Store
from pipeline.vocabulary import SyncOutcome
from tests.conftest import postgres_only
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sync import forgetting
from tests.pipeline.sync.forgetting import FORGOTTEN, forget, learn, reaching
from tests.pipeline.sync.support import Machine, close, git
from tests.pipeline.team.support import team_on_one_remote

pytestmark = [pytest.mark.timeout(300), postgres_only]

KEPT = "Run the test suite with make check before each push"


async def _synced(m: Machine) -> None:
    report = await m.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.lines()


async def test_a_forget_in_team_mode_rewrites_the_teams_history_and_the_other_machine_adopts_it(
    store: Store, tmp_path: Path, fake_api: FakeAnthropicAPI, second_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    remote, (a, b) = await team_on_one_remote(
        tmp_path, clock, store, ("a", fake_api, ""), ("b", second_api, "")
    )
    fake_api.responder = second_api.responder = forgetting.agent
    try:
        scope = scope_for(str(a.project))
        await a.env.add_extract("beta", project=str(a.project), raw=f"- {KEPT}", summary=f"{KEPT}.")
        await learn(a, "alpha", FORGOTTEN)
        await _synced(a)
        await _synced(b)
        assert FORGOTTEN in b.tree()[f"{scope}/s-alpha.md"]
        assert FORGOTTEN in git(Path(remote), "log", "-p", "main")

        done = await forget(a, f"{scope}/s-alpha.md")
        assert done.history is not None
        assert done.history.skipped is None, done.history.skipped
        assert reaching(a.settings.paths.memory_dir, FORGOTTEN) == []
        assert FORGOTTEN not in git(Path(remote), "log", "-p", "--all")

        report = await b.sync()
        assert report.outcome == SyncOutcome.SYNCED, report.lines()
        assert report.adopted, report.lines()
        await _synced(a)
        for m in (a, b):
            tree = m.tree()
            assert f"{scope}/s-alpha.md" not in tree, m.name
            assert KEPT in tree[f"{scope}/s-beta.md"], m.name
            assert reaching(m.settings.paths.memory_dir, FORGOTTEN) == [], m.name
        git(Path(remote), "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        git(Path(remote), "gc", "-q", "--prune=now")
        assert reaching(Path(remote), FORGOTTEN) == []
    finally:
        await close(a, b)
