"""Team mode in phase 2: machines sharing a store consolidate a scope one at a time, and each
machine's memory repository takes over what another machine's run landed (``pipeline.team.adopt``)."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path

from daemon.runtime import memory_repo
from pipeline.consolidate.lease import LEASE_TTL
from pipeline.consolidate.run import run_phase2
from pipeline.memory.repository import MemoryRepo
from pipeline.projects import scope_for
from pipeline.settings import Settings
from pipeline.store import leases, snapshots
from tests.conftest import as_machine, postgres_only
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import SECRET_LINE, Env, topic, write_memory

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
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["skipped"]
    assert "another run holds the scope" in (report.scopes[0].reason or "")
    assert env.api.message_requests() == []  # the model is not paid twice for the scope
    [holder] = await leases.holders(env.store)
    assert (holder.owner, holder.machine) == ("remote-run", "the-other-machine")

    env.clock.advance(LEASE_TTL - timedelta(seconds=1))  # still renewed in time: still held
    again = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in again.scopes] == ["skipped"]

    env.clock.advance(timedelta(seconds=2))  # it stopped renewing: the lease is free
    ran = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
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
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["committed"]


def _elsewhere(env: Env, name: str) -> Settings:
    """The settings of another machine: its own memory repository and state directory."""
    base = env.settings
    paths = base.paths.model_copy(
        update={"memory_dir": env.tmp_path / f"{name}-memory", "state_dir": env.tmp_path / f"{name}-state"}
    )
    return base.model_copy(update={"paths": paths})


def _scope_files(root: Path, scope: str) -> dict[str, str]:
    folder = root / scope
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


@postgres_only
async def test_a_scope_another_machine_consolidated_lands_here_without_a_model_call(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    ran = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in ran.scopes] == ["committed"]
    calls = len(env.api.message_requests())
    mine = _scope_files(env.settings.paths.memory_dir, SCOPE)
    assert "testing.md" in mine

    other = _elsewhere(env, "m2")
    async with as_machine(env.store, "m2") as store2:
        report = await run_phase2(store2, other, memory_repo(other), env.clock, env.llm, env.redactor)
        assert report.scopes == []  # up to date for every machine: nothing to run
        assert report.adopted == [SCOPE]
        assert len(env.api.message_requests()) == calls  # the model was not paid again
        assert _scope_files(other.paths.memory_dir, SCOPE) == mine
        log = await MemoryRepo(other.paths.memory_dir).git("log", "-1", "--format=%B")
        assert f"Memd-Adopted: {ran.scopes[0].run_id}" in log
        again = await run_phase2(store2, other, memory_repo(other), env.clock, env.llm, env.redactor)
        assert again.adopted == []  # taken over once

        # m2 consolidates next (new input, after the cooldown) on top of what it took over ...
        await env.add_extract("sess-2")
        env.clock.advance(timedelta(days=1))
        env.api.responder = ScriptedResponder(
            write_memory(
                {
                    "testing.md": topic("Testing", "Run `make test`."),
                    "deploy.md": topic("Deploy", "Use `make ship`."),
                }
            )
        )
        second = await run_phase2(store2, other, memory_repo(other), env.clock, env.llm, env.redactor)
        assert [s.outcome for s in second.scopes] == ["committed"]
        theirs = _scope_files(other.paths.memory_dir, SCOPE)
        # ... and the first machine takes that over in turn.
        back = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
        assert back.adopted == [SCOPE]
        assert _scope_files(env.settings.paths.memory_dir, SCOPE) == theirs
        assert {"testing.md", "deploy.md"} <= set(theirs)


@postgres_only
async def test_a_folder_from_another_machine_that_fails_validation_is_refused_with_the_reason(
    env: Env,
) -> None:
    await env.repo.ensure()
    before = (
        _scope_files(env.settings.paths.memory_dir, SCOPE)
        if (env.settings.paths.memory_dir / SCOPE).exists()
        else {}
    )
    async with as_machine(env.store, "m2") as store2:
        files = {
            "MEMORY.md": "# Memory index\n\n- [leak.md](leak.md) — a leak\n",
            "memory_summary.md": "# Summary\n",
            "leak.md": topic("Leak", SECRET_LINE),
        }
        await snapshots.save(store2, SCOPE, run_id="r-bad", host="m2-host", files=files, now=env.clock.now())
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert report.adopted == []
    [(scope, seen)] = (await snapshots.adopted(env.store)).items()
    assert (scope, seen.run_id) == (SCOPE, "r-bad")
    assert seen.refused is not None
    assert "refused the memory of run r-bad from m2-host" in seen.refused
    after = (
        _scope_files(env.settings.paths.memory_dir, SCOPE)
        if (env.settings.paths.memory_dir / SCOPE).exists()
        else {}
    )
    assert after == before  # nothing of it landed
    assert await snapshots.to_adopt(env.store) == []  # not tried again until the scope lands anew


@postgres_only
async def test_a_run_accepted_from_the_inbox_is_taken_over_by_the_other_machines(env: Env) -> None:
    """A landing is recorded for the team the same way whether a run landed it or a person accepted
    it (``record_landed``): the other machine takes the accepted folder over, naming this host."""
    from pipeline.consolidate import inbox

    env = env.with_settings(review={"mode": "inbox"})
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    [parked] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert parked.outcome == "pending_review"
    assert await snapshots.get(env.store, SCOPE) is None  # nothing landed yet
    await inbox.accept(env.store, env.settings, env.repo, env.clock, parked.run_id or "")
    snap = await snapshots.get(env.store, SCOPE)
    assert snap is not None
    assert (snap.run_id, snap.host) == (parked.run_id, socket.gethostname())

    other = _elsewhere(env, "m2")
    async with as_machine(env.store, "m2") as store2:
        report = await run_phase2(store2, other, memory_repo(other), env.clock, env.llm, env.redactor)
        assert report.adopted == [SCOPE]
        assert _scope_files(other.paths.memory_dir, SCOPE) == _scope_files(
            env.settings.paths.memory_dir, SCOPE
        )
