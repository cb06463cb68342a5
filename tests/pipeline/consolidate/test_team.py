"""Team mode in phase 2: machines sharing a store consolidate a scope one at a time, and each
machine's memory repository takes over what another machine's run landed (``pipeline.consolidate.team``)."""

from __future__ import annotations

import socket
from datetime import timedelta

from pipeline.consolidate.lease import LEASE_TTL
from pipeline.consolidate.run import run_phase2
from pipeline.projects import scope_for
from pipeline.store import leases
from tests.conftest import as_machine
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import Env, write_memory

SCOPE = scope_for("/work/acme")
ABSENT_PID = 4_194_999  # above Linux's largest pid_max: no such process here


async def test_a_scope_held_by_another_machine_waits_for_its_lease_to_expire_whatever_its_pid(
    env: Env,
) -> None:
    await env.add_extract("sess-1")
    name = f"consolidate:{SCOPE}"
    async with as_machine(env.store, "the-other-machine") as other:
        # Same hostname, a pid that does not exist here: on its own machine it is a live run.
        held = await leases.acquire(
            other,
            name,
            owner="remote-run",
            host=socket.gethostname(),
            pid=ABSENT_PID,
            now=env.clock.now(),
            ttl=LEASE_TTL,
        )
        assert isinstance(held, leases.Acquired)
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["skipped"]
    assert "another run holds the scope" in (report.scopes[0].reason or "")
    assert env.api.message_requests() == []  # the model is not paid twice for the scope
    [holder] = await leases.holders(env.store)
    assert (holder.owner, holder.machine) == ("remote-run", "the-other-machine")

    env.clock.advance(LEASE_TTL - timedelta(seconds=1))  # still renewed in time: still held
    again = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in again.scopes] == ["skipped"]

    env.clock.advance(timedelta(seconds=2))  # it stopped renewing: the lease is free
    ran = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in ran.scopes] == ["committed"]
    assert await leases.holders(env.store) == []


async def test_a_dead_holder_on_this_machine_is_still_taken_over_at_once(env: Env) -> None:
    await env.add_extract("sess-1")
    await leases.acquire(
        env.store,
        f"consolidate:{SCOPE}",
        owner="dead-run",
        host="another-hostname",  # the hostname changed since: the machine id says it is ours
        pid=ABSENT_PID,
        now=env.clock.now(),
        ttl=LEASE_TTL,
    )
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["committed"]
