"""A forget holds on every machine, for good (issue 32): two machines over ``git daemon`` on
127.0.0.1, real git, each with its own state store and memory repository.

The forgotten memory is the topic a session taught in its own words, so its text is in the inputs
(``raw_memories.md``, ``rollout_summaries/``) as well as in the topic: what a forget must take
out of every input phase 2 reads, not only out of the topic."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.memory import forget_records
from pipeline.memory.likeness import ForgottenTopic, shingles
from pipeline.projects import scope_for
from pipeline.sync.merge import merge_trees
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.consolidate.support import topic
from tests.pipeline.sync.forgetting import (
    FORGOTTEN,
    agent,
    forget,
    history_holds,
    holding,
    learn,
    served_holds,
    synced,
)
from tests.pipeline.sync.support import Machine, git, pair, two_machines

pytestmark = [pytest.mark.timeout(240)]


@pytest.fixture
async def strangers(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> AsyncIterator[tuple[Machine, Machine]]:
    async with two_machines(tmp_path, fake_api, clock, paired=False) as machines:
        fake_api.responder = agent
        yield machines


@pytest.fixture
async def paired(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> AsyncIterator[tuple[Machine, Machine]]:
    async with two_machines(tmp_path, fake_api, clock) as machines:
        fake_api.responder = agent
        yield machines


async def test_a_machine_paired_after_a_forget_never_brings_it_back(
    strangers: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = strangers
    scope = scope_for(str(a.project))
    await learn(a, "alpha", FORGOTTEN)
    await synced(a)
    assert f"{scope}/s-alpha.md" in a.tree()
    await forget(a, f"{scope}/s-alpha.md")
    assert holding(a) == []  # the inputs too: raw_memories.md and the session's summary

    await pair(a, b)  # `memd sync key` on B, `memd sync trust LINE` on A
    await learn(b, "beta", "Run the test suite with make check")
    await synced(b)  # B's first sync: joins, consolidates the scope again on top of A's
    await synced(a)
    for m in (a, b):
        assert f"{scope}/s-alpha.md" not in m.tree(), m.name
        assert holding(m) == [], m.name
        assert f"{scope}/s-beta.md" in m.tree()
    assert not served_holds(tmp_path)


async def test_a_forget_made_offline_survives_the_other_machines_consolidation(
    paired: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = paired
    scope = scope_for(str(a.project))
    await learn(a, "alpha", FORGOTTEN)
    await synced(a)
    await synced(b)
    assert f"{scope}/s-alpha.md" in b.tree(), sorted(b.tree())

    assert f"{scope}/s-alpha.md" in a.tree(), sorted(a.tree())
    await forget(a, f"{scope}/s-alpha.md", online=False)
    await learn(b, "beta", "Run the test suite with make check")  # B rewrites the scope, alpha in it
    await synced(b)
    assert served_holds(tmp_path)

    lines = await synced(a)  # both changed the scope: the remote's topic files, and A's forget
    assert f"{scope}/s-alpha.md" not in a.tree(), lines
    assert holding(a) == [], lines
    assert not served_holds(tmp_path)  # A pushed the merge: the remote's copy is gone
    await synced(b)
    assert f"{scope}/s-alpha.md" not in b.tree()
    assert holding(b) == []


async def test_a_rewound_remote_and_memds_own_advice_never_bring_a_forget_back(
    paired: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = paired
    scope = scope_for(str(a.project))
    served = tmp_path / "served" / "memory.git"
    await learn(a, "alpha", FORGOTTEN)
    await synced(a)
    await synced(b)
    before = git(served, "rev-parse", "main").strip()
    await forget(a, f"{scope}/s-alpha.md")

    git(served, "update-ref", "refs/heads/main", before)  # the remote rewound to before the forget
    await learn(b, "beta", "Run the test suite with make check")
    await synced(b)  # B, never shown the forget, builds on the rewound branch
    refused = await a.sync()
    assert refused.outcome == SyncOutcome.STOPPED
    assert refused.reason is not None
    assert "history was rewritten" in refused.reason
    advice = re.search(r"git -C (\S+) update-ref -d (\S+?),", refused.reason)
    assert advice is not None, refused.reason
    assert "stays forgotten" in refused.reason
    git(Path(advice.group(1)), "update-ref", "-d", advice.group(2))  # the user follows it

    await synced(a)
    assert f"{scope}/s-alpha.md" not in a.tree()
    assert holding(a) == []
    assert not served_holds(tmp_path)
    await synced(b)  # B learns of the forget: it stops publishing it
    assert f"{scope}/s-alpha.md" not in b.tree()
    assert holding(b) == []


def test_a_merge_keeps_a_forgotten_topic_out_whatever_side_holds_it() -> None:
    scope = "projects/app-1a2b3c4d"
    text = topic("Deploy", FORGOTTEN).encode()
    record = ForgottenTopic(scope, "deploy.md", "", "", shingles(FORGOTTEN), "2026-01-01T00:00:00")
    data = forget_records.record_bytes(record)
    raw = f"# Raw memories\n\n## Session `s1`\nagent: x; last_activity: t; rollout_summary_file: rollout_summaries/s1.md\n\n- {FORGOTTEN}\n- keep this line\n"
    scope_files = {
        f"{scope}/deploy.md": text,
        f"{scope}/renamed.md": topic("Other name", FORGOTTEN + " please").encode(),
        f"{scope}/MEMORY.md": b"# Memory index\n\n- [deploy.md](deploy.md): deploy\n- [renamed.md](renamed.md): r\n",
        f"{scope}/memory_summary.md": b"# Summary\n\nDeploys on Friday.\n",
        f"{scope}/raw_memories.md": raw.encode(),
        f"{scope}/rollout_summaries/s1.md": f"session: s1\n\n{FORGOTTEN}.\n".encode(),
    }
    base = dict(scope_files)
    forgot = {**base, forget_records.path_of(data): data}
    changed = {**base, f"{scope}/new.md": topic("New", "Something else entirely new here.").encode()}
    for one, other in ((forgot, changed), (changed, forgot)):
        merged = merge_trees(base, one, other).files
        assert forget_records.path_of(data) in merged
        assert not any(FORGOTTEN.encode() in v for v in merged.values())
        assert f"{scope}/new.md" in merged
        assert b"keep this line" in merged[f"{scope}/raw_memories.md"]
        assert b"deploy.md" not in merged[f"{scope}/MEMORY.md"]


async def test_a_forget_takes_the_text_out_of_history_and_a_first_sync_never_pushes_it(
    strangers: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = strangers
    scope = scope_for(str(a.project))
    await learn(a, "alpha", FORGOTTEN)
    memory = a.settings.paths.memory_dir
    assert history_holds(memory)
    await forget(a, f"{scope}/s-alpha.md", online=False)  # never synced: the history is its own
    assert history_holds(memory) == []
    assert "gpgsig" in git(memory, "cat-file", "commit", "HEAD")  # made again, signed by memd

    await synced(a)  # the first sync
    served = tmp_path / "served" / "memory.git"
    assert history_holds(served) == []
    await pair(a, b)
    await learn(b, "beta", "Run the test suite with make check")
    await synced(b)  # B checks every commit's signature: the rewritten history is accepted
    await synced(a)
    assert f"{scope}/s-beta.md" in a.tree()
    assert history_holds(b.settings.paths.memory_dir) == []
    assert history_holds(served) == []
