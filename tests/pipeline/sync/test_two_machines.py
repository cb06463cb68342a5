"""Two machines, one memory: real git (a bare remote, served by ``git daemon`` on 127.0.0.1), two
homes with their own state stores, memory repositories and clones of one project at different
paths, the real ``anthropic`` client against the loopback fake. Every test ends with both machines
holding and publishing the same memory, with nothing lost."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline.projects import scope_for
from pipeline.vocabulary import SyncOutcome
from tests.pipeline.sync.support import (
    Machine,
    git,
    sessions_in,
    signing_as,
)

pytestmark = [pytest.mark.timeout(240)]


async def _converge(a: Machine, b: Machine) -> None:
    for m in (a, b, a):
        report = await m.sync()
        assert report.outcome == SyncOutcome.SYNCED, report.reason
    await a.publish()
    await b.publish()
    assert a.tree() == b.tree()
    assert a.published() == b.published()
    assert a.published(), "nothing was published"


async def test_one_project_cloned_at_two_paths_is_one_scope_and_both_sides_memory_is_kept(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    assert a.project != b.project
    scope = scope_for(str(a.project))
    assert scope == scope_for(str(b.project))
    await a.extract("alpha")
    await a.consolidate()
    assert (await a.sync()).pushed
    await b.extract("beta")
    await b.consolidate()
    report = await b.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.reason
    assert scope in report.reconsolidate  # both wrote the scope: B consolidated again on A's topics
    assert report.pushed
    await _converge(a, b)
    tree = a.tree()
    assert sessions_in(tree, scope) == {"alpha", "beta"}
    inputs = [p for p in tree if p.startswith(f"{scope}/rollout_summaries/")]
    assert len(inputs) == 2  # the union of both machines' phase-1 inputs
    raw = tree[f"{scope}/raw_memories.md"]
    assert "alpha raw note" in raw
    assert "beta raw note" in raw
    assert not any("<<<<<<<" in text or ">>>>>>>" in text for text in tree.values())
    served = a.settings.paths.memory_dir.parent.parent / "served" / "memory.git"
    assert git(served, "for-each-ref", "--format=%(refname)").split() == [
        "refs/heads/main"
    ]  # only the branch
    assert not [
        p for p in tree if not p.startswith(("projects/", "global/", "tombstones/", "trust/", "README.md"))
    ]


async def test_both_machines_consolidating_one_scope_at_the_same_moment_lose_nothing(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    await a.extract("alpha")
    await a.consolidate()
    await a.sync()
    await b.sync()
    a.env.clock.advance(timedelta(hours=7))  # past the consolidation cooldown
    await a.extract("gamma")
    await b.extract("delta")

    await asyncio.gather(a.consolidate(), b.consolidate())
    reports = await asyncio.gather(a.sync(), b.sync())
    assert all(r.outcome == SyncOutcome.SYNCED for r in reports), [r.reason for r in reports]
    assert all(r.pushed for r in reports)
    late = [r for r in reports if r.attempts > 1]
    assert late, "one push should have been rejected: both pushed from the same remote commit"
    assert late[0].reconsolidate == [scope_for(str(a.project))]  # merged, consolidated again, pushed
    await _converge(a, b)
    scope = scope_for(str(a.project))
    assert sessions_in(a.tree(), scope) == {"alpha", "gamma", "delta"}


async def _shared_scope(a: Machine, b: Machine) -> str:
    """A and B each consolidated a session of the project, and synced: both hold both."""
    await a.extract("alpha")
    await a.consolidate()
    await a.sync()
    await b.extract("beta")
    await b.consolidate()
    await b.sync()
    await a.sync()
    a.env.clock.advance(timedelta(hours=7))
    return scope_for(str(a.project))


async def test_a_forget_on_one_machine_while_the_other_consolidates_travels(
    pair: tuple[Machine, Machine],
) -> None:
    from pipeline.consolidate.forget import forget

    a, b = pair
    scope = await _shared_scope(a, b)
    assert sessions_in(b.tree(), scope) == {"alpha", "beta"}
    await b.extract("epsilon")

    async def forget_on_a() -> None:
        report = await forget(
            a.store, a.settings, a.repo, a.env.clock, a.env.llm, a.env.redactor, session_id="alpha"
        )
        assert report.forgotten
        assert (await a.sync()).outcome == SyncOutcome.SYNCED

    async def consolidate_on_b() -> None:
        await b.consolidate()
        assert (await b.sync()).outcome == SyncOutcome.SYNCED

    await asyncio.gather(forget_on_a(), consolidate_on_b())
    await _converge(a, b)
    tree = b.tree()
    assert sessions_in(tree, scope) >= {"beta", "epsilon"}
    assert "alpha" not in sessions_in(tree, scope)
    assert not [p for p, text in tree.items() if "alpha" in text], "the forgotten session came back"
    from pipeline.memory.tombstones import path_of

    assert path_of("alpha") in tree
    assert not any("alpha" in text for text in b.published().values())


async def test_a_machine_that_still_has_a_forgotten_input_forgets_it_too(
    pair: tuple[Machine, Machine],
) -> None:
    """The same session in both stores (a shared home, say): a forget on A reaches B's store and memory."""
    from pipeline.consolidate.forget import forget
    from pipeline.store.consolidation import forgotten_sessions

    a, b = pair
    scope = await _shared_scope(a, b)
    await b.extract("alpha")  # B has the input too
    await b.consolidate()
    await b.sync()
    await a.sync()
    await forget(a.store, a.settings, a.repo, a.env.clock, a.env.llm, a.env.redactor, session_id="alpha")
    await a.sync()
    report = await b.sync()
    assert report.forgotten_here == 1
    assert "alpha" in await forgotten_sessions(b.store, scope)
    b.env.clock.advance(timedelta(hours=7))
    await b.consolidate()  # B's own run does not write it back
    await _converge(a, b)
    assert not [p for p, text in b.tree().items() if "alpha" in text]


async def test_a_remote_commit_carrying_a_secret_stops_sync_and_nothing_is_published(
    pair: tuple[Machine, Machine], tmp_path: Path
) -> None:
    from tests.pipeline.consolidate.support import SECRET_LINE

    a, b = pair
    scope = await _shared_scope(a, b)
    await a.publish()
    await b.publish()
    before_a, before_b = a.repo_head(), b.repo_head()
    published = b.published()
    intruder = tmp_path / "intruder"
    git(tmp_path, "clone", "-q", str(tmp_path / "served" / "memory.git"), str(intruder))
    topic_path = intruder / scope / "s-beta.md"
    topic_path.write_text(topic_path.read_text() + f"\n{SECRET_LINE}\n")
    # signed by a machine memd trusts: the checks of what comes in hold for it too
    git(intruder, *signing_as(a.signing_key), "commit", "-qam", "a topic with a secret")
    git(intruder, "push", "-q", "origin", "HEAD:main")
    for m in (a, b):
        report = await m.sync()
        assert report.outcome == SyncOutcome.STOPPED
        assert "secret gate" in (report.reason or "")
        assert report.failure is not None
    assert (a.repo_head(), b.repo_head()) == (before_a, before_b)  # nothing merged
    await a.publish()
    await b.publish()
    assert b.published() == published
    assert a.published() == b.published()
    assert not any("hunter2" in text for m in (a, b) for text in m.tree().values())


async def test_a_force_pushed_remote_stops_sync_with_the_reason_and_memd_never_forces(
    pair: tuple[Machine, Machine], tmp_path: Path
) -> None:
    from pipeline.gitrepo.remote import synced_ref

    a, b = pair
    scope = await _shared_scope(a, b)
    served = tmp_path / "served" / "memory.git"
    first = git(served, "rev-list", "--max-parents=0", "main").split()[0]
    git(served, "update-ref", "refs/heads/main", first)  # someone rewrote the branch
    for m in (a, b):
        report = await m.sync()
        assert report.outcome == SyncOutcome.STOPPED
        assert "rewritten" in (report.reason or "")
    assert git(served, "rev-parse", "main").strip() == first  # memd pushed nothing over it
    assert sessions_in(a.tree(), scope) == {"alpha", "beta"}  # local memory goes on
    for m in (a, b):  # the rewrite was meant: the user says so, and sync merges again
        git(m.settings.paths.memory_dir, "update-ref", "-d", synced_ref("main"))
    await _converge(a, b)
    assert sessions_in(a.tree(), scope) == {"alpha", "beta"}


async def test_memd_forget_pushes_the_tombstone_at_once(
    pair: tuple[Machine, Machine], tmp_path: Path
) -> None:
    from daemon.actions import forget_now
    from daemon.runtime import Runtime
    from pipeline.memory.tombstones import path_of
    from tests.fakes.fixtures import FAKE_API_KEY

    a, b = pair
    await _shared_scope(a, b)
    settings = a.settings
    rt = Runtime(a.store, lambda: settings, clock=a.env.clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY})
    try:
        done = await forget_now(rt, session_id="alpha")
    finally:
        await rt.aclose()
    assert done.synced is not None
    assert done.synced.pushed
    assert any("pushed" in line for line in done.lines())
    served = tmp_path / "served" / "memory.git"
    assert path_of("alpha") in git(served, "ls-tree", "-r", "--name-only", "main").split()
    await _converge(a, b)
    assert not [p for p, text in b.tree().items() if "alpha" in text]
