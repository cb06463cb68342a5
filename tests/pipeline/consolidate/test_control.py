"""Phase 2's controls: the lease, the cooldown, the gate, the turn and token limits, dry runs."""

from __future__ import annotations

import asyncio
import socket
import threading
from datetime import timedelta
from typing import Any

import pytest

from pipeline.consolidate.run import run_phase2
from pipeline.llm.ratelimit import gate_state
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from pipeline.store import leases, llm_calls
from tests.conftest import sqlite_only
from tests.fakes.anthropic_api import FakeResponse, ScriptedResponder, rate_limited
from tests.pipeline.consolidate.support import Env, candidate, mem, turn, write_memory

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
    first = asyncio.create_task(
        run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    )
    await asyncio.wait_for(arrived.wait(), 10)
    [holder] = await leases.holders(env.store)
    assert holder.name == f"consolidate:{SCOPE}"
    second = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    release.set()
    report = await asyncio.wait_for(first, 30)
    assert [s.outcome for s in second.scopes] == ["skipped"]
    assert "another run holds the scope" in (second.scopes[0].reason or "")
    assert [s.outcome for s in report.scopes] == ["committed"]
    assert len(env.api.message_requests()) == 4
    assert len(await env.repo.log()) == 2
    assert await leases.holders(env.store) == []


async def test_the_heartbeat_renews_the_lease_and_a_run_that_lost_it_commits_nothing(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.consolidate import lease as lease_mod
    from pipeline.errors import LeaseLost

    await env.add_extract("sess-1")
    await env.repo.ensure()
    head = await env.repo.head()
    name = f"consolidate:{SCOPE}"
    monkeypatch.setattr(lease_mod, "HEARTBEAT_S", 0.01)
    renewed, lost = asyncio.Event(), asyncio.Event()
    real_renew = lease_mod.ScopeLease.renew

    async def renew(self: lease_mod.ScopeLease) -> None:
        try:
            await real_renew(self)
        except LeaseLost:
            lost.set()
            raise
        renewed.set()

    monkeypatch.setattr(lease_mod.ScopeLease, "renew", renew)
    loop = asyncio.get_running_loop()
    arrived = asyncio.Event()
    release = threading.Event()
    script = write_memory()

    def held(body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        loop.call_soon_threadsafe(arrived.set)
        release.wait(30)
        return script[0]

    env.api.responder = ScriptedResponder([held, *script[1:]])
    run = asyncio.create_task(run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor))
    try:
        await asyncio.wait_for(arrived.wait(), 10)
        started = env.clock.now()
        env.clock.advance(timedelta(minutes=5))

        async def beat_at_now() -> leases.Holder:
            while True:
                renewed.clear()
                await renewed.wait()
                [holder] = await leases.holders(env.store)
                if holder.heartbeat_at == env.clock.now():
                    return holder

        holder = await asyncio.wait_for(beat_at_now(), 10)
        assert holder.acquired_at == started
        assert holder.expires_at == env.clock.now() + lease_mod.LEASE_TTL

        # Another daemon takes the scope over while the model is still answering.
        await leases.release(env.store, name, owner=holder.owner)
        await leases.acquire(
            env.store,
            name,
            owner="thief",
            host="elsewhere",
            pid=1,
            now=env.clock.now(),
            ttl=timedelta(minutes=10),
        )
        await asyncio.wait_for(lost.wait(), 10)
    finally:
        release.set()
    report = await asyncio.wait_for(run, 30)
    [scope] = report.scopes
    assert scope.outcome == "failed"
    assert "no longer held" in (scope.reason or "")
    assert await env.repo.head() == head
    assert [h.owner for h in await leases.holders(env.store)] == ["thief"]
    assert not list((env.tmp_path / "state" / "phase2-scratch").iterdir())


async def test_a_lease_held_elsewhere_is_respected_and_a_dead_holder_is_taken_over(env: Env) -> None:
    await env.add_extract("sess-1")
    now = env.clock.now()
    name = f"consolidate:{SCOPE}"
    await leases.acquire(
        env.store, name, owner="other", host="elsewhere", pid=1, now=now, ttl=timedelta(minutes=10)
    )
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["skipped"]
    assert env.api.message_requests() == []

    await leases.release(env.store, name, owner="other")
    here = socket.gethostname()
    await leases.acquire(
        env.store, name, owner="dead", host=here, pid=DEAD_PID, now=now, ttl=timedelta(minutes=10)
    )
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["committed"]
    # issue 36: the step's tokens and cost stand in its summary (`run --once`, the daemon's log line)
    from daemon.cli.run import summarize
    from pipeline.llm.pricing import cost_usd

    assert report.tokens == report.scopes[0].usage.total_tokens > 0
    assert report.cost_usd == cost_usd(env.settings.llm.consolidation_model, report.usage) > 0
    assert f"tokens={report.tokens}" in summarize(report)
    assert "cost_usd=" in summarize(report)


@sqlite_only
async def test_cooldown_holds_a_scope_between_successful_runs(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    await env.add_extract("sess-2")
    env.clock.advance(timedelta(minutes=359))
    held = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in held.scopes] == ["skipped"]
    assert "cooling down" in (held.scopes[0].reason or "")
    env.clock.advance(timedelta(minutes=1))
    env.api.responder = ScriptedResponder([turn(mem("view", path="/memories")), write_memory()[-1]])
    ran = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in ran.scopes] == ["committed"]


@sqlite_only
async def test_a_dry_run_lists_scopes_with_inputs_and_estimates_and_touches_nothing(env: Env) -> None:
    await env.add_extract("sess-1", summary="x" * 7_000)
    # global's one input: sess-2's memory about the user (its own project is never consolidated here).
    await env.add_extract("sess-2", project=None, memories=[candidate("user", "Tabs", "Uses tabs.")])
    await env.add_extract("sess-3", project="/work/beta", memories=[candidate("user", "Tabs", "Uses tabs.")])
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, None, env.redactor, dry_run=True)
    assert [(s.scope, s.outcome, s.inputs) for s in report.scopes] == [
        ("global", "would_run", 1),
        (SCOPE, "would_run", 1),
        (scope_for("/work/beta"), "would_run", 1),
    ]
    assert all(s.estimated_tokens and s.estimated_tokens > 3_000 for s in report.scopes)
    assert report.scopes[0].estimated_tokens < report.scopes[1].estimated_tokens  # type: ignore[operator]
    assert report.scopes[1].estimated_tokens > report.scopes[0].estimated_tokens + 1_500  # type: ignore[operator]
    assert env.api.message_requests() == []
    assert not env.repo.path.exists()
    assert await db.list_runs(env.store) == []


@sqlite_only
async def test_a_rate_limit_fails_the_run_until_the_reset_and_changes_nothing(env: Env) -> None:
    await env.add_extract("sess-1")
    await env.repo.ensure()
    head = await env.repo.head()
    env.api.responder = ScriptedResponder([rate_limited(600)])
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "failed"
    assert "429" in (scope.reason or "")
    assert await env.repo.head() == head
    assert not (env.repo.path / SCOPE).exists()
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert state.retry_at is not None
    # retry-after 600 s, jittered upward by at most 20 %
    assert timedelta(seconds=600) <= state.retry_at - env.clock.now() <= timedelta(seconds=720)
    # The 429 closes the gate for every phase until then, and the failed call is in the ledger.
    gate = await gate_state(env.store, env.settings, env.clock.now())
    assert gate.gated
    assert gate.reset_at == state.retry_at
    assert "429" in (gate.reason or "")
    [call] = await llm_calls.calls_for(env.store, SCOPE)
    assert (call.phase, call.outcome) == ("phase2", "LLMUnavailable")
    again = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in again.scopes] == ["skipped"]
    assert len(env.api.message_requests()) == 1


@sqlite_only
async def test_the_turn_limit_and_the_token_budget_end_a_run_without_a_commit(env: Env) -> None:
    await env.add_extract("sess-1")
    await env.repo.ensure()
    head = await env.repo.head()
    looping = [turn(mem("view", path="/memories")) for _ in range(10)]
    limited = env.with_settings(memories={"consolidation_max_turns": 4})
    limited.api.responder = ScriptedResponder(looping)
    [scope] = (
        await run_phase2(
            limited.store, limited.settings, limited.repo, limited.clock, limited.llm, limited.redactor
        )
    ).scopes
    assert scope.outcome == "failed"
    assert "turn limit" in (scope.reason or "")
    assert len(env.api.message_requests()) == 3  # one turn is kept for the repair

    env.clock.advance(timedelta(hours=2))
    budget = env.with_settings(memories={"consolidation_token_budget": 200})
    budget.api.responder = ScriptedResponder(looping)
    [scope] = (
        await run_phase2(
            budget.store, budget.settings, budget.repo, budget.clock, budget.llm, budget.redactor
        )
    ).scopes
    assert scope.outcome == "failed"
    assert "token budget" in (scope.reason or "")
    assert await env.repo.head() == head
    [latest, _first] = await db.list_runs(env.store, scope=SCOPE)
    assert latest.usage["input_tokens"] == 200
    assert latest.usage["turns"] == 2
    await limited.llm.aclose()
    await budget.llm.aclose()


@sqlite_only
async def test_uncommitted_edits_in_the_scope_hold_the_run_and_stay_untouched(env: Env) -> None:
    await env.add_extract("sess-1")
    await env.repo.ensure()
    folder = env.repo.path / SCOPE
    folder.mkdir(parents=True)
    (folder / "mine.md").write_text("my own notes\n")
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "failed"
    assert "uncommitted changes" in (scope.reason or "")
    assert (folder / "mine.md").read_text() == "my own notes\n"
    assert env.api.message_requests() == []


@sqlite_only
async def test_the_daily_budget_gate_stops_runs_before_any_call(env: Env) -> None:
    from pipeline.llm.pricing import Usage

    gated = env.with_settings(llm={"daily_token_budget": 1_000})
    await gated.add_extract("sess-1")
    await gated.llm.record_usage(Usage(input_tokens=1_000), model="m", phase="phase1", job_key="x")
    report = await run_phase2(gated.store, gated.settings, gated.repo, gated.clock, gated.llm, gated.redactor)
    assert [s.outcome for s in report.scopes] == ["skipped"]
    assert report.gated
    assert "daily token budget" in report.gated
    assert env.api.message_requests() == []
    await gated.llm.aclose()


@sqlite_only
async def test_without_a_model_client_a_run_fails_with_a_reason(env: Env) -> None:
    await env.add_extract("sess-1")
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, None, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "failed"
    assert "no model client" in (scope.reason or "")
