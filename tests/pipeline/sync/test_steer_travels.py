"""A person's change to one memory (issue 25) is a commit sync accepts: signed by memd like its own,
pushed at once, merged by the other machine."""

from __future__ import annotations

from datetime import timedelta

import pytest

from daemon.runtime import Runtime
from daemon.steer import edit_memory, forget_memory
from pipeline.layout import PLACEHOLDER_SUMMARY
from pipeline.memory.likeness import ForgottenTopic
from pipeline.projects import scope_for
from pipeline.store import forgotten_topics
from pipeline.vocabulary import SyncOutcome
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.sync.support import Machine

pytestmark = [pytest.mark.timeout(240)]


async def test_an_edit_and_a_forget_travel_to_the_other_machine(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    await a.extract("alpha")
    await a.consolidate()
    assert (await a.sync()).outcome == SyncOutcome.SYNCED
    assert (await b.sync()).outcome == SyncOutcome.SYNCED
    scope = scope_for(str(a.project))
    topic = f"{scope}/s-alpha.md"
    assert topic in b.tree()

    rt = Runtime(a.store, lambda: a.settings, clock=a.env.clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY})
    try:
        edited = await edit_memory(rt, topic, "Alpha, as the person put it.")
        assert edited.synced is not None
        assert edited.synced.outcome == SyncOutcome.SYNCED, edited.synced.lines()
        merged = await b.sync()
        assert merged.outcome == SyncOutcome.SYNCED, merged.lines()
        assert "Alpha, as the person put it." in b.tree()[topic]
        assert "edited: " in b.tree()[topic]

        forgot = await forget_memory(rt, topic)
        assert forgot.synced is not None
        assert forgot.synced.outcome == SyncOutcome.SYNCED, forgot.synced.lines()
    finally:
        await rt.aclose()
    # The digest, written from every topic, went with it: the placeholder, on A's head.
    assert a.tree()[f"{scope}/memory_summary.md"] == PLACEHOLDER_SUMMARY.decode()
    merged = await b.sync()
    assert merged.outcome == SyncOutcome.SYNCED, merged.lines()
    assert topic not in b.tree()
    assert "s-alpha.md" not in b.tree()[f"{scope}/MEMORY.md"]
    # B merged a placeholder digest with inputs: it rebuilt the scope in that sync, with its model.
    assert "is rebuilding this digest" not in b.tree()[f"{scope}/memory_summary.md"]
    assert topic not in b.tree()

    # The other machine keeps it forgotten too: its own consolidation, from the inputs the branch
    # holds (alpha's among them), does not bring it back.
    kept = await forgotten_topics.of_scope(b.store, scope, ForgottenTopic.from_json)
    assert [t.file for t in kept] == ["s-alpha.md"]
    b.env.clock.advance(timedelta(hours=7))
    await b.extract("beta")
    await b.consolidate()
    tree = b.tree()
    assert f"{scope}/s-beta.md" in tree
    assert topic not in tree
