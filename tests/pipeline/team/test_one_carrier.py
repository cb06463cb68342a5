"""Team mode: two machines on one PostgreSQL store and one git remote. The store coordinates (a
scope's lease, the shared extracts and watermarks) and carries no memory: a scope is consolidated
once, by one machine, and the other gets the result by sync. ``global/`` is per person."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect

from pipeline.clock import FakeClock
from pipeline.consolidate.run import run_phase2
from pipeline.projects import scope_for
from pipeline.store import Store
from pipeline.sync.run import due
from pipeline.team.arrival import patience
from pipeline.vocabulary import RunOutcome, SyncOutcome
from tests.conftest import postgres_only
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sync.support import Machine, close, git
from tests.pipeline.team.support import conversations, files_holding, same_person, team_on_one_remote

pytestmark = [pytest.mark.timeout(240), postgres_only]


def _cooldown(m: Machine) -> timedelta:
    return timedelta(minutes=m.settings.schedule.consolidate_cooldown_minutes)


def _projects(tree: dict[str, str]) -> dict[str, str]:
    return {path: text for path, text in tree.items() if path.startswith("projects/")}


async def _synced(m: Machine) -> None:
    report = await m.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.reason


async def test_a_scope_is_consolidated_once_and_the_other_machine_gets_it_by_sync(
    store: Store, tmp_path: Path, fake_api: FakeAnthropicAPI, second_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    async with store.read() as conn:
        assert not await conn.run_sync(lambda c: inspect(c).has_table("scope_snapshots"))
    _, (a, b) = await team_on_one_remote(tmp_path, clock, store, ("a", fake_api, ""), ("b", second_api, ""))
    try:
        scope = scope_for(str(a.project))
        await a.extract("alpha")
        await b.extract("beta")
        await a.consolidate()
        await b.consolidate()  # the shared watermark says the scope is done: no model call here
        assert (conversations(fake_api), conversations(second_api)) == (1, 0)
        assert not (b.settings.paths.memory_dir / scope).exists()
        await _synced(a)
        await _synced(b)
        assert _projects(b.tree()) == _projects(a.tree())
        assert {"alpha", "beta"} <= {p.split("/s-")[-1].removesuffix(".md") for p in _projects(b.tree())}

        # A new session on B, and a run of A's B has not fetched yet: B waits for it to arrive.
        await a.extract("gamma")
        clock.advance(timedelta(days=1))
        await a.consolidate()
        await b.extract("delta")
        clock.advance(_cooldown(b) + timedelta(minutes=1))  # B may run again: but not beside A's run
        waits = await run_phase2(b.store, b.settings, b.repo, clock, b.env.llm, b.env.redactor)
        [held] = [s for s in waits.scopes if s.scope == scope]
        assert held.outcome == RunOutcome.SKIPPED
        assert "to arrive by sync" in (held.reason or "")
        assert conversations(second_api) == 0
        await _synced(a)
        await _synced(b)  # A's run arrives; B consolidates its session on top of it
        await b.consolidate()
        assert conversations(second_api) == 1
        await _synced(b)
        await _synced(a)
        assert _projects(a.tree()) == _projects(b.tree())
        names = {p.split("/s-")[-1].removesuffix(".md") for p in _projects(a.tree()) if "/s-" in p}
        assert names == {"alpha", "beta", "gamma", "delta"}
        assert conversations(fake_api) == 2  # every scope once per change, across both machines
    finally:
        await close(a, b)


def _about_me(marker: str) -> list[dict[str, str]]:
    return [{"type": "user", "name": f"{marker} preference", "body": f"{marker} likes tabs"}]


async def _alice_and_bob(
    store: Store,
    tmp_path: Path,
    alices_api: FakeAnthropicAPI,
    bobs_api: FakeAnthropicAPI,
    clock: FakeClock,
    *,
    publish: dict[str, Any] | None = None,
) -> tuple[str, list[Machine]]:
    """Alice's machine ``a`` and Bob's ``b`` on one remote, ``b`` trusted by ``a``: (remote, [a, b])."""
    return await team_on_one_remote(
        tmp_path, clock, store, ("a", alices_api, "alice"), ("b", bobs_api, "bob"), publish=publish
    )


async def _each_said_about_themselves(a: Machine, b: Machine) -> None:
    """An extract of a session on each: Alice's (on ``a``) marked ALICEONLY, Bob's (on ``b``) BOBONLY."""
    await a.env.add_extract(
        "alice-session", project=str(a.project), raw="- alice raw", memories=_about_me("ALICEONLY")
    )
    await b.env.add_extract(
        "bob-session", project=str(b.project), raw="- bob raw", memories=_about_me("BOBONLY")
    )


async def test_global_is_per_person_and_never_reaches_another_persons_memory(
    store: Store, tmp_path: Path, fake_api: FakeAnthropicAPI, second_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    remote, (a, b) = await _alice_and_bob(store, tmp_path, fake_api, second_api, clock)
    try:
        await _each_said_about_themselves(a, b)
        for m in (a, b):
            await m.consolidate()
        for m in (a, b, a, b):
            await _synced(m)
        for m in (a, b):
            await m.publish()
        assert any("alice-session" in p for p in a.tree() if p.startswith("global/"))
        assert any("bob-session" in p for p in b.tree() if p.startswith("global/"))
        # B's memory repository's head, everything B published or keeps in its home, B's requests:
        assert not any("ALICEONLY" in text for text in b.tree().values())
        assert not any("alice" in path for path in b.tree() if path.startswith("global/"))
        assert files_holding(b.env.tmp_path, "ALICEONLY") == []
        assert not any("ALICEONLY" in str(r.body) for r in second_api.message_requests())
        assert not any("BOBONLY" in str(r.body) for r in fake_api.message_requests())
        assert not any("bob" in path for path in a.tree() if path.startswith("global/"))
        assert not any("BOBONLY" in text for text in a.tree().values())
        assert _projects(a.tree()) == _projects(b.tree())
        # Nothing new: syncing again moves nothing (the two global/ folders do not chase each other).
        served = git(Path(remote), "rev-parse", "main").strip()
        for m in (a, b, a, b):
            await _synced(m)
            assert await due(m.store, m.settings, m.repo, clock) is None
        assert git(Path(remote), "rev-parse", "main").strip() == served
    finally:
        await close(a, b)


async def test_a_run_whose_commit_never_arrives_holds_the_scope_only_for_a_while(
    store: Store, tmp_path: Path, fake_api: FakeAnthropicAPI, second_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    _, (a, b) = await team_on_one_remote(tmp_path, clock, store, ("a", fake_api, ""), ("b", second_api, ""))
    try:
        scope = scope_for(str(a.project))
        await a.extract("alpha")
        await a.consolidate()  # ... and A never pushes it (its disk died, its pushes are refused)
        await b.extract("beta")
        clock.advance(_cooldown(b) + timedelta(minutes=1))

        async def b_runs() -> RunOutcome:
            report = await run_phase2(b.store, b.settings, b.repo, clock, b.env.llm, b.env.redactor)
            return next(s.outcome for s in report.scopes if s.scope == scope)

        assert await b_runs() == RunOutcome.SKIPPED  # waits for A's run to arrive
        clock.advance(patience(b.settings) - _cooldown(b))
        assert await b_runs() == RunOutcome.COMMITTED  # no longer: B consolidates on what it has
        assert conversations(second_api) == 1
    finally:
        await close(a, b)


async def test_one_persons_machines_each_build_global_from_all_of_that_persons_sessions(
    store: Store, tmp_path: Path, fake_api: FakeAnthropicAPI, second_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    _, (laptop, desktop, other) = await team_on_one_remote(
        tmp_path, clock, store, ("a", fake_api, "alice"), ("b", second_api, "alice"), ("c", second_api, "bob")
    )
    try:
        await same_person(laptop, desktop)  # a person is their keys: each machine vouched for the other
        for m, session in ((laptop, "on-laptop"), (desktop, "on-desktop"), (other, "bobs")):
            await m.env.add_extract(
                session, project=str(m.project), raw=f"- {session} raw", memories=_about_me(session.upper())
            )
        for m in (laptop, desktop):
            await m.consolidate()
            mine = {p for p in m.tree() if p.startswith("global/s-")}
            assert mine == {"global/s-on-laptop.md", "global/s-on-desktop.md"}, mine
    finally:
        await close(laptop, desktop, other)


def _objects_holding(repo: Path, needle: str) -> list[str]:
    """Every object of the git repository at ``repo`` (every ref's history, the index's and loose ones
    aside) whose content holds ``needle``: what a fetch brought, not only what the branch shows."""
    listed = [line for line in git(repo, "rev-list", "--all", "--objects").splitlines() if line]
    # every object's content at once (``git cat-file --batch``: a header line, the content, a newline)
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=repo,
        input="".join(line.split(" ", 1)[0] + "\n" for line in listed).encode(),
        capture_output=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"},
    ).stdout
    found, at = [], 0
    for line in listed:
        header_end = batch.index(b"\n", at)
        sha, _type, size = batch[at:header_end].decode().split(" ")
        assert sha == line.split(" ", 1)[0], (sha, line)
        start = header_end + 1
        if needle.encode() in batch[start : start + int(size)]:
            found.append(line)
        at = start + int(size) + 1
    return found


async def test_no_commit_that_reaches_the_remote_carries_global(
    store: Store, tmp_path: Path, fake_api: FakeAnthropicAPI, second_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    from pipeline.consolidate.forget import forget

    both = {"claude_code_global": True}
    remote, (a, b) = await _alice_and_bob(store, tmp_path, fake_api, second_api, clock, publish=both)
    try:
        await _each_said_about_themselves(a, b)
        await a.consolidate()  # A's global/ and the project, both in commits of A's memory repository
        await b.consolidate()
        for m in (a, b, a, b):
            await _synced(m)
        await a.extract("later")  # a run for another scope: its commit is pushed, A's global/ is not
        clock.advance(timedelta(days=1))
        await a.consolidate()
        for m in (a, b, a, b):
            await _synced(m)
        for m in (a, b):
            await m.publish()
        names = {p.split("/s-")[-1].removesuffix(".md") for p in _projects(b.tree()) if "/s-" in p}
        assert {"alice-session", "bob-session", "later"} <= names  # the projects still travel
        assert _projects(a.tree()) == _projects(b.tree())
        served = Path(remote)
        assert git(served, "ls-tree", "-r", "--name-only", "main").strip()
        assert not git(served, "log", "--all", "--format=%H", "--", "global").strip()
        for repo, needle in (
            (b.settings.paths.memory_dir, "ALICEONLY"),
            (served, "ALICEONLY"),
            (served, "BOBONLY"),
            (a.settings.paths.memory_dir, "BOBONLY"),
        ):
            assert _objects_holding(repo, needle) == [], (repo, needle)
        assert not git(b.settings.paths.memory_dir, "log", "--all", "-p", "--", "global/").count("ALICE")
        # A's own memory and what A published still hold what A's sessions say about A.
        assert any("ALICEONLY" in text for p, text in a.tree().items() if p.startswith("global/"))
        published = a.env.tmp_path / ".claude" / "CLAUDE.md"
        assert "alice-session" in published.read_text(encoding="utf-8")
        assert "alice-session" not in (b.env.tmp_path / ".claude" / "CLAUDE.md").read_text(encoding="utf-8")
        # Forgetting a session of A's global/ still works: A's memory and published files lose it.
        report = await forget(
            a.store, a.settings, a.repo, clock, a.env.llm, a.env.redactor, session_id="alice-session"
        )
        assert report.forgotten
        await _synced(a)
        await a.publish()
        assert not any("ALICEONLY" in text for text in a.tree().values())
        assert "alice-session" not in (published.read_text(encoding="utf-8") if published.exists() else "")
        await _synced(b)
        assert _objects_holding(b.settings.paths.memory_dir, "ALICEONLY") == []
        assert _objects_holding(served, "ALICEONLY") == []
    finally:
        await close(a, b)


async def test_a_run_landing_right_after_a_push_is_pushed_next_without_a_new_consolidation(
    store: Store,
    tmp_path: Path,
    fake_api: FakeAnthropicAPI,
    second_api: FakeAnthropicAPI,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The branch moved between the push and its record as merged: the next sync records it then,
    and a scope this machine changed on both sides of it is not taken for another machine's change."""
    from pipeline.gitrepo import remote as remote_git
    from pipeline.team import outgoing

    real_adopt, refused = outgoing.adopt, []

    async def adopt_after_a_run(repo: object, head: str, pushed: str) -> str:
        if not refused:
            refused.append(pushed)
            raise remote_git.RepoMoved("a run landed meanwhile")
        return await real_adopt(repo, head, pushed)  # type: ignore[arg-type]

    remote, (a, b) = await _alice_and_bob(store, tmp_path, fake_api, second_api, clock)
    monkeypatch.setattr(outgoing, "adopt", adopt_after_a_run)  # pairing's own push is recorded as usual
    try:
        scope = scope_for(str(a.project))
        await a.env.add_extract(
            "alpha", project=str(a.project), raw="- alpha", memories=_about_me("ALICEONLY")
        )
        await a.consolidate()
        await _synced(a)  # pushed, not yet recorded as merged
        assert refused
        assert git(Path(remote), "rev-parse", "main").strip() == refused[0]
        await a.extract("beta")
        clock.advance(timedelta(days=1))
        await a.consolidate()
        report = await a.sync()
        assert report.outcome == SyncOutcome.SYNCED, report.reason
        assert report.reconsolidate == []
        assert report.landed is None
        git(a.settings.paths.memory_dir, "merge-base", "--is-ancestor", refused[0], "HEAD")  # recorded now
        assert conversations(fake_api) == 3  # global, the project, the project again: nothing more
        await _synced(b)
        assert _projects(b.tree()) == _projects(a.tree())
        assert any(p.endswith("s-beta.md") for p in _projects(b.tree())), scope
        assert _objects_holding(Path(remote), "ALICEONLY") == []
    finally:
        await close(a, b)
