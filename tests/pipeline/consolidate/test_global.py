"""The global scope holds what is about the user: only the ``user`` memories of every extract feed it."""

from __future__ import annotations

from datetime import timedelta

from pipeline.consolidate.forget import forget
from pipeline.consolidate.plan import plan_all, plan_scope
from pipeline.consolidate.run import context
from pipeline.consolidate.scope_run import consolidate_scope
from pipeline.layout import GLOBAL_SCOPE
from tests.conftest import sqlite_only
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import Env, candidate, request_bodies, topic, write_memory

TABS = candidate("user", "Prefers tabs", "The user indents with tabs, everywhere.")
MAKE = candidate("project", "Tests with make", "acme's tests run with `make zorptest`.")

ABOUT_THE_USER = {"prefs.md": topic("Indentation", "The user indents with tabs.", type_="user")}
"""What a global run writes: topics about the user only (``pipeline.checks.scope_rules``)."""


async def test_global_is_fed_only_by_the_user_memories_of_every_extract(env: Env) -> None:
    with_user = await env.add_extract(
        "sess-acme", summary="Fixed acme's quux parser.", raw="- acme uses quuxlib", memories=[TABS, MAKE]
    )
    await env.add_extract("sess-beta", project="/work/beta", summary="Beta's deploy.", memories=[MAKE])
    # A session recorded before the rule, with no project: never an input of global.
    await env.add_extract("sess-nowhere", project=None, summary="Somewhere.", memories=[TABS])

    scopes = [p.scope for p in await plan_all(env.store, env.settings, now=env.clock.now())]
    assert scopes[0] == GLOBAL_SCOPE
    plan = await plan_scope(env.store, env.settings, GLOBAL_SCOPE, now=env.clock.now())
    assert plan.action == "consolidate"
    assert [r.id for r in plan.inputs] == [with_user]
    assert plan.project is None

    env.api.responder = ScriptedResponder(write_memory(ABOUT_THE_USER))
    ctx = context(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    run = await consolidate_scope(ctx, GLOBAL_SCOPE)
    assert run.outcome == "committed", run
    folder = env.repo.path / GLOBAL_SCOPE
    inputs = (folder / "raw_memories.md").read_text() + "".join(
        p.read_text() for p in (folder / "rollout_summaries").iterdir()
    )
    assert "indents with tabs" in inputs
    sent = str(request_bodies(env.api))
    for leaked in ("zorptest", "quux", "/work/acme", "/work/beta", "Beta's deploy", "Somewhere"):
        assert leaked not in inputs
        assert leaked not in sent
    system = request_bodies(env.api)[0]["system"]
    assert "about the user" in str(system) or "about the user" in sent

    # A new extract that brings a user memory makes global dirty; one without does not.
    env.clock.advance(timedelta(days=1))
    await env.add_extract("sess-beta-2", project="/work/beta", memories=[MAKE])
    plan = await plan_scope(env.store, env.settings, GLOBAL_SCOPE, now=env.clock.now())
    assert plan.action == "none"
    await env.add_extract("sess-beta-3", project="/work/beta", memories=[TABS])
    plan = await plan_scope(env.store, env.settings, GLOBAL_SCOPE, now=env.clock.now(), force=True)
    assert plan.action == "consolidate"
    assert [r.session_id for r in plan.added] == ["sess-beta-3"]


@sqlite_only
async def test_forgetting_a_session_takes_its_user_memories_out_of_global(env: Env) -> None:
    await env.add_extract("sess-acme", memories=[TABS, MAKE])
    env.api.responder = ScriptedResponder(write_memory(ABOUT_THE_USER))
    ctx = context(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert (await consolidate_scope(ctx, GLOBAL_SCOPE)).outcome == "committed"
    assert (env.repo.path / GLOBAL_SCOPE / "prefs.md").is_file()

    calls = len(env.api.message_requests())
    report = await forget(
        env.store, env.settings, env.repo, env.clock, None, env.redactor, session_id="sess-acme"
    )
    assert GLOBAL_SCOPE in report.forgotten
    runs = {r.scope: r for r in report.runs}
    assert runs[GLOBAL_SCOPE].outcome == "cleared", runs
    assert not (env.repo.path / GLOBAL_SCOPE).exists()
    assert len(env.api.message_requests()) == calls
