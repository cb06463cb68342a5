"""A topic published marked stale is offered to phase 2 at the scope's next run, to fix or drop."""

from __future__ import annotations

from datetime import timedelta

from pipeline.consolidate.run import run_phase2
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from pipeline.store.cites import save
from tests.conftest import sqlite_only
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import Env, done, mem, request_bodies, turn, write_memory

pytestmark = sqlite_only  # behaviour above the store (tests/conftest.py)

SCOPE = scope_for("/work/acme")


async def test_a_stale_topic_gets_its_scope_a_run_whose_prompt_lists_it_once(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    [first] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert first.outcome == "committed"
    calls = len(env.api.message_requests())

    env.clock.advance(timedelta(days=1))
    nothing = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert nothing.scopes == []  # no input changed, nothing stale: no run

    # A publish found the code testing.md cites changed.
    reason = "src/app.py changed (lines 3-5)"
    stale = {f"{SCOPE}/testing.md": {"reason": reason, "since": env.clock.now().isoformat()}}
    await save(env.store, {}, stale, now=env.clock.now())
    await db.mark_stale(env.store, SCOPE, now=env.clock.now())
    script_index = "# Memory index\n"
    env.api.responder = ScriptedResponder(
        [
            turn(
                mem("delete", path="/memories/testing.md"),
                mem("create", path="/memories/MEMORY.md", file_text=script_index),
            ),
            done("Dropped the stale topic."),
        ]
    )
    [second] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert second.outcome == "committed", second
    prompt = str(request_bodies(env.api)[calls]["messages"][0]["content"])
    assert "Stale: the code these topics cite" in prompt
    assert f"/memories/testing.md: {reason}" in prompt
    assert not (env.repo.path / SCOPE / "testing.md").exists()
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert not state.stale  # offered once: the next cycle runs only on new inputs or a newly stale topic

    env.clock.advance(timedelta(days=1))
    again = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert again.scopes == []


async def test_the_cites_a_model_writes_are_kept_and_a_bad_one_is_sent_back(env: Env) -> None:
    from tests.pipeline.consolidate.support import last_user_text, topic

    await env.add_extract("sess-1")
    bad = topic("Port", "The app listens on 8080.", extra='cites: ["/etc/app.conf:1"]\n')
    good = topic("Port", "The app listens on 8080.", extra='cites: ["src/app.py:2-3"]\n')
    env.api.responder = ScriptedResponder(
        [
            *write_memory({"port.md": bad}),
            turn(mem("create", path="/memories/port.md", file_text=good)),
            done(),
        ]
    )
    [scope] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert scope.outcome == "committed", scope
    assert "must be a path relative to the project root" in last_user_text(request_bodies(env.api)[4])
    text = (env.repo.path / SCOPE / "port.md").read_text()
    assert 'cites: ["src/app.py:2-3"]' in text
    assert "created: " in text  # memd's provenance stamped, the model's cites kept
