"""Phase 2's controls: the lease, the cooldown, the gate, the turn and token limits, dry runs."""

from __future__ import annotations

import asyncio
import socket
import threading
from datetime import timedelta
from typing import Any

from pipeline.phase2.run import run_phase2
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from pipeline.store import leases
from tests.fakes.anthropic_api import FakeResponse, ScriptedResponder, rate_limited
from tests.pipeline.phase2.support import Env, mem, turn, write_memory

SCOPE = scope_for("/work/acme")
DEAD_PID = 4_194_999  # above Linux's largest pid_max: no such process


async def test_two_concurrent_runs_of_one_scope_run_once(env: Env) -> None:
    await env.add_extract("sess-1")
    loop = asyncio.get_running_loop()
    arrived = asyncio.Event()
    release = threading.Event()
    script = write_memory()

    def held(body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        loop.call_soon_threadsafe(arrived.set)
        release.wait(10)
        return script[0]

    env.api.responder = ScriptedResponder([held, *script[1:]])
    first = asyncio.create_task(run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor))
    await asyncio.wait_for(arrived.wait(), 10)
    [holder] = await leases.holders(env.store)
    assert holder.name == f"consolidate:{SCOPE}"
    second = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    release.set()
    report = await asyncio.wait_for(first, 30)
    assert [s.outcome for s in second.scopes] == ["skipped"]
    assert "another run holds the scope" in (second.scopes[0].reason or "")
    assert [s.outcome for s in report.scopes] == ["committed"]
    assert len(env.api.message_requests()) == 4
    assert len(await env.repo.log()) == 2
    assert await leases.holders(env.store) == []


async def test_a_lease_held_elsewhere_is_respected_and_a_dead_holder_is_taken_over(env: Env) -> None:
    await env.add_extract("sess-1")
    now = env.clock.now()
    name = f"consolidate:{SCOPE}"
    await leases.acquire(
        env.store, name, owner="other", host="elsewhere", pid=1, now=now, ttl=timedelta(minutes=10)
    )
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["skipped"]
    assert env.api.message_requests() == []

    await leases.release(env.store, name, owner="other")
    here = socket.gethostname()
    await leases.acquire(
        env.store, name, owner="dead", host=here, pid=DEAD_PID, now=now, ttl=timedelta(minutes=10)
    )
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["committed"]


async def test_cooldown_holds_a_scope_between_successful_runs(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    await env.add_extract("sess-2")
    env.clock.advance(timedelta(minutes=359))
    held = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in held.scopes] == ["skipped"]
    assert "cooling down" in (held.scopes[0].reason or "")
    env.clock.advance(timedelta(minutes=1))
    env.api.responder = ScriptedResponder([turn(mem("view", path="/memories")), write_memory()[-1]])
    ran = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in ran.scopes] == ["committed"]


async def test_a_dry_run_lists_scopes_with_inputs_and_estimates_and_touches_nothing(env: Env) -> None:
    await env.add_extract("sess-1", summary="x" * 7_000)
    await env.add_extract("sess-2", project=None)
    report = await run_phase2(env.store, env.settings, env.clock, None, env.redactor, dry_run=True)
    assert [(s.scope, s.outcome, s.inputs) for s in report.scopes] == [
        ("global", "would_run", 1),
        (SCOPE, "would_run", 1),
    ]
    assert all(s.estimated_tokens and s.estimated_tokens > 3_000 for s in report.scopes)
    assert report.scopes[1].estimated_tokens > report.scopes[0].estimated_tokens + 1_500  # type: ignore[operator]
    assert env.api.message_requests() == []
    assert not env.repo.path.exists()
    assert await db.list_runs(env.store) == []


async def test_a_rate_limit_fails_the_run_until_the_reset_and_changes_nothing(env: Env) -> None:
    await env.add_extract("sess-1")
    await env.repo.ensure()
    head = await env.repo.head()
    env.api.responder = ScriptedResponder([rate_limited(600)])
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "failed"
    assert "429" in (scope.reason or "")
    assert await env.repo.head() == head
    assert not (env.repo.path / SCOPE).exists()
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert state.retry_at is not None
    assert timedelta(seconds=590) <= state.retry_at - env.clock.now() <= timedelta(seconds=700)
    again = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in again.scopes] == ["skipped"]
    assert len(env.api.message_requests()) == 1


async def test_the_turn_limit_and_the_token_budget_end_a_run_without_a_commit(env: Env) -> None:
    await env.add_extract("sess-1")
    await env.repo.ensure()
    head = await env.repo.head()
    looping = [turn(mem("view", path="/memories")) for _ in range(10)]
    limited = env.with_settings(memories={"consolidation_max_turns": 4})
    limited.api.responder = ScriptedResponder(looping)
    [scope] = (
        await run_phase2(limited.store, limited.settings, limited.clock, limited.llm, limited.redactor)
    ).scopes
    assert scope.outcome == "failed"
    assert "turn limit" in (scope.reason or "")
    assert len(env.api.message_requests()) == 3  # one turn is kept for the repair

    env.clock.advance(timedelta(hours=2))
    budget = env.with_settings(memories={"consolidation_token_budget": 200})
    budget.api.responder = ScriptedResponder(looping)
    [scope] = (
        await run_phase2(budget.store, budget.settings, budget.clock, budget.llm, budget.redactor)
    ).scopes
    assert scope.outcome == "failed"
    assert "token budget" in (scope.reason or "")
    assert await env.repo.head() == head
    [latest, _first] = await db.list_runs(env.store, scope=SCOPE)
    assert latest.usage["input_tokens"] == 200
    assert latest.usage["turns"] == 2
    await limited.llm.aclose()
    await budget.llm.aclose()


async def test_uncommitted_edits_in_the_scope_hold_the_run_and_stay_untouched(env: Env) -> None:
    await env.add_extract("sess-1")
    await env.repo.ensure()
    folder = env.repo.path / SCOPE
    folder.mkdir(parents=True)
    (folder / "mine.md").write_text("my own notes\n")
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "failed"
    assert "uncommitted changes" in (scope.reason or "")
    assert (folder / "mine.md").read_text() == "my own notes\n"
    assert env.api.message_requests() == []


async def test_the_daily_budget_gate_stops_runs_before_any_call(env: Env) -> None:
    from pipeline.llm.pricing import Usage

    gated = env.with_settings(llm={"daily_token_budget": 1_000})
    await gated.add_extract("sess-1")
    await gated.llm.record_usage(Usage(input_tokens=1_000), model="m", phase="phase1", job_key="x")
    report = await run_phase2(gated.store, gated.settings, gated.clock, gated.llm, gated.redactor)
    assert [s.outcome for s in report.scopes] == ["skipped"]
    assert report.gated
    assert "daily token budget" in report.gated
    assert env.api.message_requests() == []
    await gated.llm.aclose()


async def test_without_a_model_client_a_run_fails_with_a_reason(env: Env) -> None:
    await env.add_extract("sess-1")
    report = await run_phase2(env.store, env.settings, env.clock, None, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "failed"
    assert "no model client" in (scope.reason or "")
