"""Hostile memory-tool turns in a real run: nothing reaches anywhere but the scope, failures change nothing."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from pipeline.consolidate.run import run_phase2
from pipeline.gitrepo.git import run_git
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from pipeline.store import leases
from tests.conftest import sqlite_only
from tests.fakes.anthropic_api import FakeResponse, ScriptedResponder
from tests.pipeline.consolidate.support import (
    SECRET_LINE,
    Env,
    done,
    last_user_text,
    mem,
    request_bodies,
    tool_results,
    topic,
    turn,
    write_memory,
)

pytestmark = sqlite_only  # behaviour above the store (tests/conftest.py)

SCOPE = scope_for("/work/acme")


def digest(top: Path, *, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        dirnames[:] = [n for n in dirnames if d / n not in skip]
        for name in dirnames + filenames:
            p = d / name
            if p in skip or name.startswith("state.db"):  # the SQLite store of the test
                continue
            rel = p.relative_to(top).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


async def seed_repo(env: Env) -> Path:
    """A repository with a global scope and one previous consolidation of the project scope."""
    repo = env.repo
    await repo.ensure()
    (repo.path / "global").mkdir()
    (repo.path / "global" / "MEMORY.md").write_text("# Global\n")
    (repo.path / "global" / "memory_summary.md").write_text("The user prefers short answers.\n")
    await repo.git("add", "-A")
    await repo.git("commit", "-q", "-m", "seed global")
    outside = env.tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the memory\n")
    return outside


async def repo_state(env: Env) -> tuple[str | None, dict[str, str], str]:
    repo = env.repo
    status = await repo.git("status", "--porcelain=v1", "--untracked-files=all")
    return (
        await repo.head(),
        digest(repo.path, skip=(repo.path / ".git" / "objects", repo.path / ".git" / "logs")),
        status,
    )


async def test_hostile_turns_reach_nothing_outside_the_scope(env: Env) -> None:
    outside = await seed_repo(env)
    await env.add_extract("sess-1")
    memory = env.repo.path
    hooks_before = digest(memory / ".git" / "hooks")
    config_before = (memory / ".git" / "config").read_bytes()
    outside_before = digest(env.tmp_path, skip=(memory, env.tmp_path / "state"))
    global_before = digest(memory / "global")
    hostile = [
        turn(
            mem("view", path="/memories/../../.git/config"),
            mem("create", path="/memories/../../global/MEMORY.md", file_text="# overwritten\n"),
            mem("create", path=str(outside / "pwned.md"), file_text="pwned"),
            mem("create", path="/memoriesX/foo.md", file_text="prefix trick"),
        ),
        turn(
            mem(
                "create", path="/memories/../../.git/hooks/post-commit", file_text="#!/bin/sh\ntouch pwned\n"
            ),
            mem(
                "str_replace",
                path="/memories/../../.git/config",
                old_str="[core]",
                new_str="[core]\n\tfsmonitor = touch pwned",
            ),
            mem("create", path="/memories/.git/config", file_text="[core]\n\tfsmonitor = touch pwned\n"),
            mem("rename", old_path="/memories/raw_memories.md", new_path="/memories/../../global/raw.md"),
        ),
        turn(mem("create", path="/memories/huge.md", file_text="x" * 10_000_000)),
    ]
    env.api.responder = ScriptedResponder([*hostile, *write_memory()])
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)

    [scope] = report.scopes
    assert scope.outcome == "committed", scope
    bodies = request_bodies(env.api)
    refused = [r for b in bodies[1:4] for r in tool_results(b)]
    assert len(refused) == 9
    assert all(r.get("is_error") for r in refused)
    assert not any("outside the memory" in str(r["content"]) for r in refused)
    # What reached the repository: the scope only.
    changed = (await env.repo.git("show", "--name-only", "--format=", "HEAD")).split()
    assert changed
    assert all(p.startswith(SCOPE + "/") for p in changed)
    assert not (memory / SCOPE / "huge.md").exists()
    # And nothing anywhere else.
    assert digest(memory / "global") == global_before
    assert digest(memory / ".git" / "hooks") == hooks_before
    assert (memory / ".git" / "config").read_bytes() == config_before
    assert digest(env.tmp_path, skip=(memory, env.tmp_path / "state")) == outside_before
    assert not list(env.tmp_path.rglob("pwned*"))
    assert not list((env.tmp_path / "state" / "phase2-scratch").iterdir())


async def test_a_symlink_planted_in_the_scope_is_never_followed(env: Env) -> None:
    outside = await seed_repo(env)
    await env.add_extract("sess-1")
    memory = env.repo.path
    (memory / SCOPE).mkdir(parents=True)
    (memory / SCOPE / "peer").symlink_to("../../global")
    (memory / SCOPE / "evil.md").symlink_to(outside / "secret.txt")
    await env.repo.git("add", "-A")
    await env.repo.git("commit", "-q", "-m", "plant symlinks")
    global_before = digest(memory / "global")
    outside_before = digest(outside)

    def plant_mid_run(body: dict[str, Any], _headers: dict[str, str]) -> FakeResponse:
        # Another process races the agent: a symlink appears in the scratch copy of the scope.
        [scratch] = (env.tmp_path / "state" / "phase2-scratch").glob("run-*/repo")
        (scratch / SCOPE / "late").symlink_to(outside)
        return turn(
            mem("create", path="/memories/late/x.md", file_text="through the link"),
            mem("view", path="/memories/evil.md"),
            mem("str_replace", path="/memories/peer/MEMORY.md", old_str="#", new_str="##"),
        )

    env.api.responder = ScriptedResponder([plant_mid_run, *write_memory()])
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "committed", scope
    results = tool_results(request_bodies(env.api)[1])
    assert len(results) == 3
    assert all(r.get("is_error") for r in results)
    assert all("symlink" in str(r["content"]) or "does not exist" in str(r["content"]) for r in results)
    assert digest(memory / "global") == global_before
    assert digest(outside) == outside_before
    tree = await env.repo.git("ls-tree", "-r", "--name-only", "HEAD", "--", SCOPE)
    assert "peer" not in tree
    assert "evil.md" not in tree
    assert "late" not in tree
    message = await env.repo.git("log", "-1", "--format=%B")
    assert "Not memory, removed: " in message
    assert "peer" in message
    assert "late" in message


async def test_a_secret_is_sent_back_for_repair_and_then_committed_clean(env: Env) -> None:
    await env.add_extract("sess-1")
    leaky = topic("Deploy", f"Deploy with `make deploy`.\n{SECRET_LINE}\n")
    fixed = topic("Deploy", "Deploy with `make deploy`; the password is in the team vault.\n")
    env.api.responder = ScriptedResponder(
        [
            *write_memory({"deploy.md": leaky}),
            turn(mem("create", path="/memories/deploy.md", file_text=fixed)),
            done(),
        ]
    )
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "committed", scope
    repair = last_user_text(request_bodies(env.api)[4])
    assert "deploy.md: the secret gate found a password at line" in repair
    assert "hunter2" not in repair
    assert "hunter2" not in (env.repo.path / SCOPE / "deploy.md").read_text()
    assert "hunter2" not in await env.repo.git("log", "-p", "--all")


@pytest.mark.parametrize("case", ["secret", "index_over_cap", "no_index", "bad_frontmatter"])
async def test_a_violation_that_survives_the_repair_turn_fails_the_run_and_changes_nothing(
    env: Env, case: str
) -> None:
    await seed_repo(env)
    await env.add_extract("sess-1")
    before = await repo_state(env)
    if case == "secret":
        script = write_memory({"deploy.md": topic("Deploy", SECRET_LINE)})
    elif case == "index_over_cap":
        script = write_memory()
        long_index = "# Index\n- [testing.md](testing.md) — tests\n" + "".join(
            f"- line {i}\n" for i in range(250)
        )
        script.insert(3, turn(mem("create", path="/memories/MEMORY.md", file_text=long_index)))
    elif case == "no_index":
        script = [turn(mem("create", path="/memories/memory_summary.md", file_text="short\n")), done()]
    else:
        script = write_memory({"notes.md": "no frontmatter here\n"})
    env.api.responder = ScriptedResponder([*script, done("I could not fix it.")])
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)

    [scope] = report.scopes
    assert scope.outcome == "failed", scope
    expected = {
        "secret": "the secret gate found a password",
        "index_over_cap": "MEMORY.md has 252 lines, over the cap of 200",
        "no_index": "MEMORY.md is missing",
        "bad_frontmatter": "notes.md: the file must start with a frontmatter block",
    }[case]
    assert any(expected in f for f in scope.findings), scope.findings
    assert expected in last_user_text(request_bodies(env.api)[-1])
    assert await repo_state(env) == before
    [run] = await db.list_runs(env.store, scope=SCOPE)
    assert run.outcome == "failed"
    assert "repair turn" in (run.reason or "")
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert state.retry_at is not None
    assert state.retry_at > env.clock.now()
    assert state.watermark == frozenset()
    assert await leases.holders(env.store) == []
    assert not list((env.tmp_path / "state" / "phase2-scratch").iterdir())


@pytest.mark.parametrize("interrupt", [RuntimeError("boom"), asyncio.CancelledError()])
async def test_a_crash_or_kill_mid_run_leaves_the_repository_exactly_as_it_was(
    env: Env, monkeypatch: pytest.MonkeyPatch, interrupt: BaseException
) -> None:
    from pipeline.llm.agent import MemoryAgent

    await seed_repo(env)
    await env.add_extract("sess-1")
    before = await repo_state(env)

    async def dies_half_way(self: MemoryAgent, text: str, *, turns: int | None = None) -> Any:
        await self.tool.call(
            {"command": "create", "path": "/memories/half.md", "file_text": topic("Half", "written")}
        )
        await self.tool.call(
            {"command": "create", "path": "/memories/MEMORY.md", "file_text": "- [half](half.md)\n"}
        )
        assert (self.tool.root / "half.md").exists()
        raise interrupt

    monkeypatch.setattr(MemoryAgent, "run", dies_half_way)
    with pytest.raises(type(interrupt)):
        await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert await repo_state(env) == before
    [run] = await db.list_runs(env.store, scope=SCOPE)
    assert run.outcome == "crashed"
    assert await leases.holders(env.store) == []
    assert not list((env.tmp_path / "state" / "phase2-scratch").iterdir())


async def test_memd_git_never_runs_what_a_repository_config_asks_for(env: Env) -> None:
    await seed_repo(env)
    await env.add_extract("sess-1")
    memory = env.repo.path
    marker = env.tmp_path / "ran"
    with (memory / ".git" / "config").open("a") as f:
        f.write(f"[core]\n\tfsmonitor = touch {marker}\n\thooksPath = {memory / 'hooks'}\n")
    (memory / "hooks").mkdir()
    for hook in ("pre-commit", "post-commit", "post-merge", "reference-transaction"):
        (memory / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (memory / "hooks" / hook).chmod(0o755)
        (memory / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (memory / ".git" / "hooks" / hook).chmod(0o755)
    await run_git(memory, "add", "-A", env=None)
    await run_git(memory, "commit", "-q", "-m", "hooks")
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert report.scopes[0].outcome == "committed"
    assert not marker.exists()


async def test_what_a_killed_process_left_behind_is_cleaned_up_by_the_next_run(env: Env) -> None:
    await seed_repo(env)
    await env.add_extract("sess-1")
    scratch = env.tmp_path / "state" / "phase2-scratch"
    left = scratch / "run-20261031T000000Z-dead00.k3j2"
    (left / "repo" / SCOPE).mkdir(parents=True)
    (left / "repo" / SCOPE / "half.md").write_text("half-written\n")
    await db.start_run(
        env.store,
        run_id="20261031T000000Z-dead00",
        scope=SCOPE,
        mode="consolidate",
        now=env.clock.now(),
        inputs={},
    )
    before = await repo_state(env)
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["committed"]
    assert not left.exists()
    old = await db.get_run(env.store, "20261031T000000Z-dead00")
    assert old is not None
    assert old.outcome == "crashed"
    assert "abandoned" in (old.reason or "")
    assert before[0] != await env.repo.head()
    assert "half.md" not in await env.repo.git("ls-tree", "-r", "--name-only", "HEAD")
