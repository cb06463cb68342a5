"""`memd forget` finishes or changes nothing: when no model can rebuild a scope (no API key, or the
model fails), the forgotten session's text still leaves the memory repository's head and every
published copy, without a model call, and a later run with a model rebuilds the rest."""

from __future__ import annotations

import asyncio
import random
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from click.testing import CliRunner, Result

from daemon.cli import cli
from pipeline.clock import SystemClock
from pipeline.consolidate.run import run_phase2
from pipeline.layout import PLACEHOLDER_SUMMARY
from pipeline.llm.client import build_client
from pipeline.memory.inputs import feeds_global
from pipeline.projects import scope_for
from pipeline.redaction import Redactor
from pipeline.store import consolidation as db
from pipeline.store import open_store
from tests.configs import write_config
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, bad_request
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, candidate
from tests.pipeline.sync.support import agent

ENV = {"ANTHROPIC_API_KEY": FAKE_API_KEY}
NO_KEY = {"ANTHROPIC_API_KEY": ""}
T = TypeVar("T")


def config_for(tmp_path: Path, base_url: str) -> Path:
    (tmp_path / "home" / ".claude" / "projects").mkdir(parents=True)
    for name in ("acme", "other"):
        (tmp_path / name).mkdir()
    return write_config(
        tmp_path,
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "home" / ".claude" / "projects"}"\n'
        f'[llm]\nbase_url = "{base_url}"\n'
        "[schedule]\nconsolidate_cooldown_minutes = 0\n"
        "[publish]\ngemini = false\n",
    )


def with_store(tmp_path: Path, config: Path, work: Callable[[Env], Awaitable[T]]) -> T:
    async def go() -> T:
        from daemon.config import load_settings
        from pipeline.machine import machine_id

        settings = load_settings(config).settings
        store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
        clock = SystemClock()
        llm = build_client(settings, store=store, clock=clock, env=ENV, rng=random.Random(1))
        try:
            env = Env(tmp_path, store, clock, None, settings, llm, Redactor(b"cli-test-key-0123456789"))  # type: ignore[arg-type]
            return await work(env)
        finally:
            await llm.aclose()
            await store.close()

    return asyncio.run(go())


def land(tmp_path: Path, config: Path, session: str, *, project: str = "acme") -> None:
    """An extract of ``session`` (with a memory about the user, so it feeds ``global`` too), then
    phase 2: the agent writes one topic per session in each scope."""

    async def work(env: Env) -> None:
        await env.add_extract(
            session,
            project=str(tmp_path / project),
            summary=f"{session} summary",
            raw=f"- {session} raw note",
            memories=[candidate("user", f"Likes {session}", f"The user said {session} matters.")],
        )
        report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
        assert {s.outcome for s in report.scopes} == {"committed"}, report

    with_store(tmp_path, config, work)


def head_text(tmp_path: Path) -> str:
    """Every memory file on the memory repository's head (its tombstones, named by hash, aside)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp_path / "memory", capture_output=True, text=True, check=True
        ).stdout

    names = [
        n for n in git("ls-tree", "-r", "--name-only", "HEAD").split() if not n.startswith("tombstones/")
    ]
    return "".join(f"=== {n}\n{git('show', f'HEAD:{n}')}" for n in names)


def published(tmp_path: Path) -> str:
    """Every file memd published under the test's home (Claude Code's project folders and CLAUDE.md)."""
    return "".join(f"=== {p}\n{p.read_text()}" for p in sorted((tmp_path / "home").rglob("*.md")))


def forgotten(tmp_path: Path, config: Path, scope: str) -> set[str]:
    async def work(env: Env) -> set[str]:
        return await db.forgotten_sessions(env.store, scope)

    return with_store(tmp_path, config, work)


def failing(_body: dict[str, Any], _headers: dict[str, str]) -> FakeResponse:
    return bad_request("messages: the model refused this request")


def _invoke(config: Path, *args: str, env: dict[str, str]) -> Result:
    return CliRunner().invoke(cli, ["--config", str(config), *args], env=env)


def _setup(tmp_path: Path, fake_api: FakeAnthropicAPI) -> Path:
    config = config_for(tmp_path, fake_api.base_url)
    fake_api.responder = agent
    land(tmp_path, config, "sess-keep")
    land(tmp_path, config, "sess-gone")
    land(tmp_path, config, "sess-elsewhere", project="other")
    assert _invoke(config, "publish", env=ENV).exit_code == 0
    assert "sess-gone" in head_text(tmp_path)
    assert "sess-gone" in published(tmp_path)
    return config


def _rebuilt_later(
    tmp_path: Path, config: Path, fake_api: FakeAnthropicAPI, scope: str, *, now: bool = False
) -> None:
    """A later consolidation with a working model (the daemon's, or ``memd consolidate`` when
    ``now``) rebuilds the digest from what remains."""
    fake_api.responder = agent
    calls = len(fake_api.message_requests())
    if now:
        done = _invoke(config, "consolidate", env=ENV)  # every scope waiting: global and the project
        assert done.exit_code == 0, done.output
        assert f"{scope}: committed" in done.output
        assert "global: committed" in done.output
    else:

        async def work(env: Env) -> None:
            report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
            assert scope in {s.scope for s in report.scopes if s.outcome == "committed"}, report

        with_store(tmp_path, config, work)
        assert _invoke(config, "publish", env=ENV).exit_code == 0
    assert len(fake_api.message_requests()) > calls
    head = head_text(tmp_path)
    assert "sess-gone" not in head
    assert "is rebuilding this digest" not in head
    assert "sess-keep" in head
    assert "sess-gone" not in published(tmp_path)


def test_forget_with_a_failing_model_withdraws_without_it_publishes_and_a_later_run_rebuilds(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _setup(tmp_path, fake_api)
    scope = scope_for(str(tmp_path / "acme"))
    fake_api.responder = failing

    forgot = _invoke(config, "forget", "--session", "sess-gone", env=ENV)
    assert forgot.exit_code == 0, forgot.output
    assert "sess-gone" not in head_text(tmp_path)
    assert "sess-gone" not in published(tmp_path)
    assert "sess-keep raw note" in head_text(tmp_path)  # the remaining inputs stay, to rebuild from
    assert "sess-elsewhere" in published(tmp_path)
    assert "sess-gone" in forgotten(tmp_path, config, scope)
    assert f"{scope}: committed" in forgot.output
    assert "withdrawn without the model, which failed" in forgot.output
    assert "the model refused this request" in forgot.output
    assert "rebuilt" in forgot.output

    again = _invoke(config, "forget", "--session", "sess-gone", env=ENV)
    assert again.exit_code == 1
    assert "nothing to forget" in again.output
    _rebuilt_later(tmp_path, config, fake_api, scope, now=True)


def test_forget_without_an_api_key_withdraws_with_no_model_call(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _setup(tmp_path, fake_api)
    scope = scope_for(str(tmp_path / "acme"))
    calls = len(fake_api.message_requests())

    forgot = _invoke(config, "forget", "--session", "sess-gone", env=NO_KEY)
    assert forgot.exit_code == 0, forgot.output
    assert len(fake_api.message_requests()) == calls
    assert "sess-gone" not in head_text(tmp_path)
    assert "sess-gone" not in published(tmp_path)
    assert PLACEHOLDER_SUMMARY.decode() in head_text(tmp_path)
    assert "rebuil" in forgot.output
    _rebuilt_later(tmp_path, config, fake_api, scope)


def test_forget_of_a_project_with_a_failing_model_withdraws_it_from_global_too(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _setup(tmp_path, fake_api)
    assert "sess-gone" in head_text(tmp_path).split("=== projects/")[0]  # in global
    fake_api.responder = failing

    forgot = _invoke(config, "forget", "--project", str(tmp_path / "acme"), env=ENV)
    assert forgot.exit_code == 0, forgot.output
    head = head_text(tmp_path)
    assert "sess-gone" not in head
    assert "sess-keep" not in head
    assert "sess-elsewhere raw note" in head
    assert "sess-gone" not in published(tmp_path)
    assert "sess-keep" not in published(tmp_path)
    assert "global: committed" in forgot.output
    assert "withdrawn without the model, which failed" in forgot.output
    _rebuilt_later_global(tmp_path, config, fake_api)


def _rebuilt_later_global(tmp_path: Path, config: Path, fake_api: FakeAnthropicAPI) -> None:
    fake_api.responder = agent

    async def work(env: Env) -> None:
        report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
        assert "global" in {s.scope for s in report.scopes if s.outcome == "committed"}, report

    with_store(tmp_path, config, work)
    head = head_text(tmp_path)
    assert "is rebuilding this digest" not in head
    assert "sess-gone" not in head
    assert "sess-elsewhere" in head.split("=== projects/")[0]


def _head(tmp_path: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path / "memory", capture_output=True, text=True, check=True
    ).stdout


def _refused_and_unchanged(tmp_path: Path, config: Path, fake_api: FakeAnthropicAPI, why: str) -> None:
    scope = scope_for(str(tmp_path / "acme"))
    head, copies, calls = _head(tmp_path), published(tmp_path), len(fake_api.message_requests())
    forgot = _invoke(config, "forget", "--session", "sess-gone", env=ENV)
    assert forgot.exit_code == 1, forgot.output
    assert "nothing forgotten: " in forgot.output
    assert why in forgot.output
    assert "nothing changed" in forgot.output
    assert "extract(s) forgotten" not in forgot.output
    assert forgotten(tmp_path, config, scope) == set()
    assert _head(tmp_path) == head
    assert published(tmp_path) == copies
    assert len(fake_api.message_requests()) == calls


def test_a_forget_that_cannot_rewrite_a_scope_changes_nothing_and_says_why(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _setup(tmp_path, fake_api)
    stray = tmp_path / "memory" / scope_for(str(tmp_path / "acme")) / "notes.md"
    stray.write_text("a note of mine\n")
    _refused_and_unchanged(tmp_path, config, fake_api, "uncommitted changes")

    stray.unlink()
    forgot = _invoke(config, "forget", "--session", "sess-gone", env=ENV)
    assert forgot.exit_code == 0, forgot.output
    assert "sess-gone" not in head_text(tmp_path)


def test_a_forget_waits_for_nothing_while_a_consolidation_of_the_scope_runs(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    import os
    import socket
    from datetime import UTC, datetime, timedelta

    from pipeline.store import leases

    config = _setup(tmp_path, fake_api)
    scope = scope_for(str(tmp_path / "acme"))

    async def hold(env: Env) -> None:
        now = datetime.now(UTC)
        got = await leases.acquire(
            env.store,
            f"consolidate:{scope}",
            owner="a-running-run",
            host=socket.gethostname(),
            pid=os.getppid(),
            now=now,
            ttl=timedelta(minutes=10),
        )
        assert isinstance(got, leases.Acquired)

    with_store(tmp_path, config, hold)
    _refused_and_unchanged(tmp_path, config, fake_api, "is running")


def test_a_forget_interrupted_before_its_rewrite_is_finished_by_the_same_command(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    """The extracts were marked forgotten, but the process stopped before the scope was rewritten (or
    an older memd's rewrite failed): the text is still on the head, so it is not "nothing to forget"."""
    from datetime import UTC, datetime

    config = _setup(tmp_path, fake_api)
    scope = scope_for(str(tmp_path / "acme"))

    async def interrupted(env: Env) -> None:
        await db.forget(env.store, now=datetime.now(UTC), feeds_global=feeds_global, session_id="sess-gone")

    with_store(tmp_path, config, interrupted)
    assert "sess-gone" in head_text(tmp_path)
    fake_api.responder = failing
    forgot = _invoke(config, "forget", "--session", "sess-gone", env=ENV)
    assert forgot.exit_code == 0, forgot.output
    assert "nothing to forget" not in forgot.output
    assert f"{scope}: forgotten earlier" in forgot.output
    assert "sess-gone" not in head_text(tmp_path)
    assert "sess-gone" not in published(tmp_path)
    again = _invoke(config, "forget", "--session", "sess-gone", env=ENV)
    assert "nothing to forget" in again.output


def test_a_published_copy_the_forget_cannot_rewrite_is_named_not_finished(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _setup(tmp_path, fake_api)
    [index] = list((tmp_path / "home" / ".claude" / "projects").glob("*acme/memory/MEMORY.md"))
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text(index.read_text())
    index.unlink()
    index.symlink_to(elsewhere)  # memd writes no file through a link it did not make
    forgot = _invoke(config, "forget", "--session", "sess-gone", env=NO_KEY)
    assert forgot.exit_code == 1, forgot.output
    assert "sess-gone" not in head_text(tmp_path)
    assert f"NOT finished: the published copy at {index.parent}" in forgot.output
    assert "`memd publish` writes it again" in forgot.output
