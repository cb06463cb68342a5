"""Forgetting travels right (issue 23, point 6): a machine that merges another machine's forget rebuilds
the scopes it touched from the inputs it still has, in that same sync, and any machine can forget a
session whose text it holds, its own or another machine's. Two real machines: their own homes, state
stores and memory repositories, one bare remote served by ``git daemon``, the real ``anthropic``
client against the loopback fake."""

from __future__ import annotations

from datetime import timedelta

import pytest

from daemon.actions import Forgotten, forget_now
from daemon.runtime import Runtime
from pipeline.layout import GLOBAL_SCOPE, PLACEHOLDER_SUMMARY, SUMMARY
from pipeline.memory.tombstones import path_of
from pipeline.projects import scope_for
from pipeline.store.consolidation import forgotten_sessions
from pipeline.sync.now import sync_memory
from pipeline.vocabulary import SyncOutcome
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import candidate
from tests.pipeline.sync.support import Machine, git, sessions_in

pytestmark = [pytest.mark.timeout(240)]

PLACEHOLDER = PLACEHOLDER_SUMMARY.decode()


async def _extract(m: Machine, session: str) -> None:
    """An extract of ``session`` in the project, with a note about the user (so global has it too)."""
    await m.env.add_extract(
        session,
        project=str(m.project),
        raw=f"- {session} raw note",
        memories=[candidate("user", f"{session} habit", f"The user likes {session}.")],
    )


async def _both_hold_both(a: Machine, b: Machine) -> str:
    """A extracted alpha, B beta; both consolidated and synced: both hold both, in the project and global."""
    await _extract(a, "alpha")
    await a.consolidate()
    assert (await a.sync()).outcome == SyncOutcome.SYNCED
    await _extract(b, "beta")
    await b.consolidate()
    assert (await b.sync()).outcome == SyncOutcome.SYNCED
    assert (await a.sync()).outcome == SyncOutcome.SYNCED
    scope = scope_for(str(a.project))
    for m in (a, b):
        tree = m.tree()
        assert sessions_in(tree, scope) == {"alpha", "beta"}
        assert sessions_in(tree, GLOBAL_SCOPE) == {"alpha", "beta"}
    a.env.clock.advance(timedelta(hours=7))  # past the consolidation cooldown
    return scope


async def _forget_on(m: Machine, session: str, *, key: bool = True) -> Forgotten:
    """`memd forget --session` on machine ``m``: forget, rewrite, push the tombstone, publish;
    without ``key`` there is no API key (no model rebuilds the scopes there)."""
    settings = m.settings
    env = {"ANTHROPIC_API_KEY": FAKE_API_KEY} if key else {}
    rt = Runtime(m.store, lambda: settings, clock=m.env.clock, env=env)
    try:
        return await forget_now(rt, session_id=session)
    finally:
        await rt.aclose()


def _assert_real_digest(tree: dict[str, str], scope: str, session: str) -> None:
    summary = tree[f"{scope}/{SUMMARY}"]
    assert summary != PLACEHOLDER, f"{scope} was left with the placeholder digest"
    assert session in summary


async def test_a_machine_that_merges_a_forget_rebuilds_its_scopes_from_its_own_inputs_in_that_sync(
    pair: tuple[Machine, Machine],
) -> None:
    """A forgets alpha without an API key: it cannot rewrite the scopes B's beta still feeds, so it
    leaves the placeholder digest; B, merging that (a fast-forward), rebuilds both from beta at once."""
    a, b = pair
    scope = await _both_hold_both(a, b)
    await b.publish()
    done = await _forget_on(a, "alpha", key=False)
    assert done.synced is not None
    assert done.synced.pushed
    assert a.tree()[f"{scope}/{SUMMARY}"] == PLACEHOLDER

    report = await b.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.reason
    assert sorted(report.reconsolidate) == sorted([scope, GLOBAL_SCOPE])
    assert report.pushed  # B's rebuild travels back
    await _b_holds_beta_only(a, b, scope)


async def test_the_forgetting_machine_rebuilds_from_the_other_machines_inputs_it_holds(
    pair: tuple[Machine, Machine],
) -> None:
    """A forgets alpha with a model: A has no extract of beta, but beta's inputs are in its memory
    repository; A rebuilds both scopes from them (no placeholder anywhere), and B takes that."""
    a, b = pair
    scope = await _both_hold_both(a, b)
    await b.publish()
    done = await _forget_on(a, "alpha")
    assert done.ok, done.lines()
    tree = a.tree()
    for where in (scope, GLOBAL_SCOPE):
        assert sessions_in(tree, where) == {"beta"}
        _assert_real_digest(tree, where, "beta")
    assert (await b.sync()).outcome == SyncOutcome.SYNCED
    await _b_holds_beta_only(a, b, scope)


async def _b_holds_beta_only(a: Machine, b: Machine, scope: str) -> None:
    await b.publish()
    tree = b.tree()
    for where in (scope, GLOBAL_SCOPE):
        assert sessions_in(tree, where) == {"beta"}
        _assert_real_digest(tree, where, "beta")
    assert not [p for p, text in tree.items() if "alpha" in text]
    published = b.published()
    assert "memd-s-beta.md" in published, sorted(published)
    assert not any("alpha" in text for text in published.values())
    assert not any("rebuilding" in text for text in published.values())
    # A takes B's rebuild: both hold the same memory, and the published copies agree
    assert (await a.sync()).outcome == SyncOutcome.SYNCED
    await a.publish()
    assert a.tree() == b.tree()
    assert a.published() == b.published()


@pytest.mark.parametrize("key", [True, False], ids=["with-a-model", "without-an-api-key"])
async def test_any_machine_forgets_a_session_another_machine_extracted_and_the_forget_travels(
    pair: tuple[Machine, Machine], key: bool
) -> None:
    """beta is B's session: A has no extract of it, but its text is in A's memory repository and
    published there. A forgets it: gone from A's branch and published files, tombstoned; once B
    syncs, gone from B's too, and B's extracts of it are forgotten."""
    a, b = pair
    scope = await _both_hold_both(a, b)
    await a.publish()
    assert any("beta" in text for text in a.published().values())

    done = await _forget_on(a, "beta", key=key)
    assert done.ok, done.lines()
    assert not any("nothing to forget" in line for line in done.lines())
    assert done.synced is not None
    assert done.synced.pushed
    tree = a.tree()
    assert path_of("beta") in tree
    assert not [p for p, text in tree.items() if "beta" in text], "A still holds beta's text"
    assert not any("beta" in text for text in a.published().values())
    if key:  # A rebuilt from its own alpha; without a key it left the placeholder for B to rebuild
        assert sessions_in(tree, scope) == {"alpha"}
        _assert_real_digest(tree, scope, "alpha")
    else:
        assert tree[f"{scope}/{SUMMARY}"] == PLACEHOLDER

    report = await b.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.reason
    assert report.forgotten_here == 1
    assert "beta" in await forgotten_sessions(b.store, scope)
    await b.publish()
    tree = b.tree()
    assert not [p for p, text in tree.items() if "beta" in text], "B still holds beta's text"
    assert sessions_in(tree, scope) == {"alpha"}
    for where in (scope, GLOBAL_SCOPE):
        _assert_real_digest(tree, where, "alpha")  # B rebuilt what A could not (without a key)
    published = b.published()
    assert "memd-s-alpha.md" in published
    assert not any("beta" in text for text in published.values())
    b.env.clock.advance(timedelta(hours=7))
    calls = len(b.env.api.message_requests())
    await b.consolidate()  # B's own next run neither brings beta back nor undoes the rebuild
    assert len(b.env.api.message_requests()) == calls  # nothing changed for it: no model call
    assert (await b.sync()).outcome == SyncOutcome.SYNCED
    assert (await a.sync()).outcome == SyncOutcome.SYNCED
    assert a.tree() == b.tree()
    assert not [p for p, text in b.tree().items() if "beta" in text]
    _assert_real_digest(b.tree(), scope, "alpha")
    served = b.settings.paths.memory_dir.parent.parent / "served" / "memory.git"
    assert path_of("beta") in git(served, "ls-tree", "-r", "--name-only", "main").split()


async def test_forgetting_a_session_no_store_and_no_memory_holds_says_so(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    await _both_hold_both(a, b)
    head = a.repo_head()
    done = await _forget_on(a, "never-seen")
    assert not done.ok
    assert any("nothing to forget" in line for line in done.lines())
    assert a.repo_head() == head


@pytest.mark.parametrize("model", [True, False], ids=["sync-with-a-model", "sync-then-consolidation"])
async def test_a_machine_with_no_session_of_its_own_there_rebuilds_from_the_inputs_the_branch_holds(
    pair: tuple[Machine, Machine], model: bool
) -> None:
    """B never extracted a session of the project: it holds A's alpha and gamma only through sync.
    A forgets alpha without an API key (placeholder digest); B, merging it, rebuilds from gamma: in
    that sync, or (a sync with no model at hand, as after `memd forget`) at its next consolidation."""
    a, b = pair
    await _extract(a, "alpha")
    await _extract(a, "gamma")
    await a.consolidate()
    assert (await a.sync()).pushed
    assert (await b.sync()).outcome == SyncOutcome.SYNCED
    scope = scope_for(str(a.project))
    assert sessions_in(b.tree(), scope) == {"alpha", "gamma"}
    a.env.clock.advance(timedelta(hours=7))

    await _forget_on(a, "alpha", key=False)
    assert a.tree()[f"{scope}/{SUMMARY}"] == PLACEHOLDER
    if model:
        report = await b.sync()
    else:
        report = await sync_memory(b.store, b.settings, b.repo, b.env.clock, b.env.redactor)
        assert b.tree()[f"{scope}/{SUMMARY}"] == PLACEHOLDER
        await b.consolidate()
        assert (await b.sync()).outcome == SyncOutcome.SYNCED
    assert report.outcome == SyncOutcome.SYNCED, report.reason
    assert scope in report.reconsolidate
    tree = b.tree()
    assert sessions_in(tree, scope) == {"gamma"}
    for where in (scope, GLOBAL_SCOPE):
        _assert_real_digest(tree, where, "gamma")
    assert not [p for p, text in tree.items() if "alpha" in text]
    assert (await a.sync()).outcome == SyncOutcome.SYNCED
    assert a.tree() == b.tree()
