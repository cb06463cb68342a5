"""The page's and the command line's API for one memory (``daemon.steer``, issue 25): each change lands
as one commit and is published at once; a forgotten memory is recorded for phase 2 (never its text)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from daemon.config import load_settings
from daemon.runtime import Runtime
from daemon.steer import edit_memory, forget_memory, pin_memory
from pipeline.clock import FakeClock
from pipeline.consolidate.run import run_phase2
from pipeline.llm.client import build_client
from pipeline.memory.likeness import ForgottenTopic
from pipeline.memory.steer import TopicMissing
from pipeline.projects import scope_for
from pipeline.publish.run import publish_all
from pipeline.redaction import Redactor
from pipeline.settings import Settings
from pipeline.store import Store, consolidation, forgotten_topics
from tests.configs import write_config
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, short_topics, write_memory

ENV = {"ANTHROPIC_API_KEY": FAKE_API_KEY}
DEPLOY_BODY = "Deploy with `fly deploy --remote-only` from the main branch once the tests pass."


def steer_settings(tmp_path: Path, base_url: str) -> Settings:
    (tmp_path / "home" / ".claude" / "projects").mkdir(parents=True)
    (tmp_path / "acme").mkdir()
    config = write_config(
        tmp_path,
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "home" / ".claude" / "projects"}"\n'
        f'[llm]\nbase_url = "{base_url}"\n'
        "[publish]\ngemini = false\n",
    )
    return load_settings(config).settings


def published(tmp_path: Path) -> str:
    root = tmp_path / "home" / ".claude" / "projects"
    return "".join(p.read_text() for p in sorted(root.glob("*/memory/*.md")))


async def consolidated(
    tmp_path: Path, store: Store, clock: FakeClock, api: FakeAnthropicAPI
) -> tuple[Settings, str]:
    """A project scope with deploy.md and testing.md, consolidated by a scripted model and published."""
    settings = steer_settings(tmp_path, api.base_url)
    llm = build_client(settings, store=store, clock=clock, env=ENV, rng=random.Random(1))
    try:
        env = Env(tmp_path, store, clock, api, settings, llm, Redactor(b"steer-test-key-0123456789"))
        project = str(tmp_path / "acme")
        await env.add_extract("sess-1", project=project)
        api.responder = ScriptedResponder(write_memory(short_topics(DEPLOY_BODY)))
        report = await run_phase2(store, settings, env.repo, clock, llm, env.redactor)
        assert [s.outcome for s in report.scopes] == ["committed"], report.scopes
    finally:
        await llm.aclose()
    await publish_all(store, settings, clock)
    assert "fly deploy" in published(tmp_path)
    return settings, scope_for(project)


async def test_forget_memory_records_it_removes_it_and_publishes_at_once(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: FakeAnthropicAPI
) -> None:
    settings, scope = await consolidated(tmp_path, store, clock, fake_api)
    rt = Runtime(store, lambda: settings, clock=clock, env=ENV)
    done = await forget_memory(rt, f"{scope}/deploy.md")

    assert done.ok
    assert done.steered.commit is not None
    assert not (settings.paths.memory_dir / scope / "deploy.md").exists()
    assert "fly deploy" not in published(tmp_path)
    assert "Run `make test`" in published(tmp_path)
    assert any("published" in line for line in done.lines())
    [record] = await forgotten_topics.of_scope(store, scope, ForgottenTopic.from_json)
    assert record.file == "deploy.md"
    assert record.name == "Deploy"
    assert "fly" not in str(record.as_json())
    state = await consolidation.get_scope(store, scope)
    assert state is not None
    assert state.rebuild  # the next cycle writes the digest again without it

    with pytest.raises(TopicMissing):
        await forget_memory(rt, f"{scope}/deploy.md")
    with pytest.raises(TopicMissing):
        await forget_memory(rt, "not-an-id")


async def test_edit_and_pin_by_short_name_land_and_publish(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: FakeAnthropicAPI
) -> None:
    settings, scope = await consolidated(tmp_path, store, clock, fake_api)
    rt = Runtime(store, lambda: settings, clock=clock, env=ENV)
    edited = await edit_memory(rt, "acme/deploy.md", "Deploy on Fridays only.")
    assert edited.ok
    assert edited.steered.commit is not None
    assert "Deploy on Fridays only." in (settings.paths.memory_dir / scope / "deploy.md").read_text()
    assert "fly deploy" not in published(tmp_path)
    assert edited.steered.digest_withdrawn  # the digest said the old value: the placeholder now
    state = await consolidation.get_scope(store, scope)
    assert state is not None
    assert state.rebuild  # `memd consolidate` and the next cycle write it again, not "up to date"
    assert any("memory_summary.md" in line and "placeholder" in line for line in edited.lines())

    pinned = await pin_memory(rt, f"{scope}/testing.md")
    assert pinned.steered.commit is not None
    assert "pinned: true" in (settings.paths.memory_dir / scope / "testing.md").read_text()
    again = await pin_memory(rt, f"{scope}/testing.md")
    assert again.steered.commit is None
    assert again.published is None
    assert (await pin_memory(rt, f"{scope}/testing.md", pinned=False)).steered.commit is not None


async def test_a_change_while_a_run_of_the_scope_holds_it_is_refused_and_changes_nothing(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: FakeAnthropicAPI
) -> None:
    import os
    from datetime import timedelta

    from pipeline.memory.steer import SteerRefused
    from pipeline.store import leases

    settings, scope = await consolidated(tmp_path, store, clock, fake_api)
    rt = Runtime(store, lambda: settings, clock=clock, env=ENV)
    name = f"consolidate:{scope}"
    got = await leases.acquire(
        store, name, owner="run-1", host="here", pid=os.getpid(), now=clock.now(), ttl=timedelta(minutes=10)
    )
    assert not isinstance(got, leases.Holder)
    before = (settings.paths.memory_dir / scope / "deploy.md").read_text()
    with pytest.raises(SteerRefused, match="consolidation of .* is running"):
        await forget_memory(rt, f"{scope}/deploy.md")
    assert (settings.paths.memory_dir / scope / "deploy.md").read_text() == before
    assert await forgotten_topics.of_scope(store, scope, ForgottenTopic.from_json) == []
    await leases.release(store, name, owner="run-1")
    assert (await pin_memory(rt, f"{scope}/deploy.md")).steered.commit is not None
    assert [h.name for h in await leases.holders(store)] == []  # the change let go of the scope


def unwritable_copy(tmp_path: Path) -> Path:
    """The published MEMORY.md of acme made a link (memd writes no file through a link it did not
    make): publishing that copy fails. Its folder."""
    [index] = list((tmp_path / "home" / ".claude" / "projects").glob("*acme/memory/MEMORY.md"))
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text(index.read_text())
    index.unlink()
    index.symlink_to(elsewhere)
    return index.parent


async def test_a_forget_refused_for_uncommitted_changes_leaves_no_record(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: FakeAnthropicAPI
) -> None:
    from pipeline.memory.steer import SteerRefused

    settings, scope = await consolidated(tmp_path, store, clock, fake_api)
    rt = Runtime(store, lambda: settings, clock=clock, env=ENV)
    scratch = settings.paths.memory_dir / scope / "scratch-note.md"
    scratch.write_text("uncommitted\n")
    with pytest.raises(SteerRefused, match="uncommitted changes"):
        await forget_memory(rt, f"{scope}/deploy.md")
    assert (settings.paths.memory_dir / scope / "deploy.md").is_file()
    assert await forgotten_topics.of_scope(store, scope, ForgottenTopic.from_json) == []
    state = await consolidation.get_scope(store, scope)
    assert state is not None
    assert not state.rebuild

    # a record an earlier forget of the same file left is kept as it was
    scratch.unlink()
    await forget_memory(rt, f"{scope}/deploy.md")
    [earlier] = await forgotten_topics.of_scope(store, scope, ForgottenTopic.from_json)
    (settings.paths.memory_dir / scope / "deploy.md").write_text(
        "---\nname: Deploy again\ndescription: by hand\ntype: project\n---\n\nShip on Mondays.\n"
    )
    await rt.memory_repo().git("add", "--", f"{scope}/deploy.md")
    await rt.memory_repo().git("commit", "-q", "-m", "by hand")
    scratch.write_text("uncommitted\n")
    with pytest.raises(SteerRefused, match="uncommitted changes"):
        await forget_memory(rt, f"{scope}/deploy.md")
    assert await forgotten_topics.of_scope(store, scope, ForgottenTopic.from_json) == [earlier]


async def test_a_forget_whose_publish_fails_is_not_finished_and_names_the_copy(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: FakeAnthropicAPI
) -> None:
    settings, scope = await consolidated(tmp_path, store, clock, fake_api)
    rt = Runtime(store, lambda: settings, clock=clock, env=ENV)
    copy = unwritable_copy(tmp_path)
    done = await forget_memory(rt, f"{scope}/deploy.md")

    assert done.steered.commit is not None
    assert not done.ok
    assert "fly deploy" in published(tmp_path)  # the copy still holds it
    lines = done.lines()
    assert lines[0].startswith(f"{scope}/deploy.md: removed from the memory repository (")
    assert "NOT finished" in lines[0]
    assert f"NOT finished: the published copy at {copy} still holds {scope}/deploy.md" in "\n".join(lines)
    assert not any("stays forgotten" in line or ": forgotten (" in line for line in lines)


async def test_an_edit_whose_publish_fails_is_not_finished_and_names_the_copy(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: FakeAnthropicAPI
) -> None:
    settings, scope = await consolidated(tmp_path, store, clock, fake_api)
    rt = Runtime(store, lambda: settings, clock=clock, env=ENV)
    copy = unwritable_copy(tmp_path)
    done = await edit_memory(rt, f"{scope}/deploy.md", "Deploy on Fridays only.")

    assert not done.ok
    assert "NOT finished" in done.lines()[0]
    assert f"NOT finished: the published copy at {copy} still holds {scope}/deploy.md as it was before" in (
        "\n".join(done.lines())
    )


async def test_a_forget_interrupted_after_it_landed_keeps_its_record(
    tmp_path: Path,
    store: Store,
    clock: FakeClock,
    fake_api: FakeAnthropicAPI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while the scratch copy is removed, after the forget's commit is on the branch: the forget
    happened, so its record stays (else the next run could write the topic back) and the scope is to
    be rebuilt."""
    import pipeline.gitrepo.repository as repository

    settings, scope = await consolidated(tmp_path, store, clock, fake_api)
    rt = Runtime(store, lambda: settings, clock=clock, env=ENV)
    real = repository.shutil.rmtree

    def interrupted(path: Any, ignore_errors: bool = False) -> None:
        real(path, ignore_errors)
        raise KeyboardInterrupt

    monkeypatch.setattr(repository.shutil, "rmtree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        await forget_memory(rt, f"{scope}/deploy.md")
    monkeypatch.setattr(repository.shutil, "rmtree", real)
    assert "forget" in await rt.memory_repo().git("log", "-1", "--format=%s")
    assert [r.file for r in await forgotten_topics.of_scope(store, scope, ForgottenTopic.from_json)] == [
        "deploy.md"
    ]
    state = await consolidation.get_scope(store, scope)
    assert state is not None
    assert state.rebuild
