"""A run killed after its commit landed but before the store recorded it is recognised, not paid again."""

from __future__ import annotations

from sqlalchemy import delete, update

from pipeline.consolidate.run import run_phase2
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from pipeline.store.schema import consolidation_runs, scopes
from pipeline.vocabulary import RunOutcome
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import Env, write_memory

SCOPE = scope_for("/work/acme")


async def _forget_the_record(env: Env, run_id: str) -> None:
    """The store as a kill between landing and recording leaves it: the run still running, no success."""
    async with env.store.write() as conn:
        await conn.execute(
            update(consolidation_runs)
            .where(consolidation_runs.c.run_id == run_id)
            .values(outcome=RunOutcome.RUNNING, finished_at=None, commit=None, usage={}, reason=None)
        )
        await conn.execute(delete(scopes).where(scopes.c.key == SCOPE))


async def test_a_run_that_landed_but_was_not_recorded_is_recorded_from_its_commit(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    [first] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert first.outcome == "committed"
    assert first.run_id is not None
    body = await env.repo.git("log", "-1", "--format=%(trailers:key=Memd-Run,valueonly)")
    assert body.strip() == first.run_id
    head = await env.repo.head()
    await _forget_the_record(env, first.run_id)

    calls = len(env.api.message_requests())
    env.api.responder = ScriptedResponder(write_memory())
    again = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert len(env.api.message_requests()) == calls  # not paid for again
    assert await env.repo.head() == head
    assert all(s.outcome != "committed" for s in again.scopes)
    run = await db.get_run(env.store, first.run_id)
    assert run is not None
    assert run.outcome == "committed"
    assert run.commit == head
    assert run.reason is not None
    assert "abandoned" not in run.reason
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert state.last_commit == head
    assert len(state.watermark) == 1
