"""A scope's key follows its repository's identity: existing scopes move to the new key, in one commit,
and the state store follows; nothing is consolidated (or paid for) again unless two folders join."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.consolidate.plan import plan_scope
from pipeline.consolidate.run import run_phase2
from pipeline.projects import path_key, scope_for
from pipeline.projects.rekey import Move, rekey
from pipeline.store import consolidation as db
from pipeline.store import rekey as store_rekey
from tests.pipeline.consolidate.support import Env
from tests.pipeline.sync.support import agent


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _project(path: Path) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    return path


async def test_a_scope_moves_to_its_origin_key_in_one_commit_and_the_store_follows(env: Env) -> None:
    env.api.responder = agent
    project = _project(env.tmp_path / "src" / "app")
    old = f"projects/{path_key(str(project))}"
    assert scope_for(str(project)) == old
    await env.add_extract("s1", project=str(project))
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    memory = env.settings.paths.memory_dir
    before = sorted(p.relative_to(memory / old).as_posix() for p in (memory / old).rglob("*") if p.is_file())
    commits = int(_git(memory, "rev-list", "--count", "HEAD"))

    _git(project, "remote", "add", "origin", "git@github.com:acme/app.git")
    new = scope_for(str(project))
    assert new != old
    moved = await rekey(env.store, env.settings, env.repo, env.clock)
    assert moved == [Move(str(project), old, new, merged=False)]
    assert not (memory / old).exists()
    after = sorted(p.relative_to(memory / new).as_posix() for p in (memory / new).rglob("*") if p.is_file())
    assert after == before
    assert int(_git(memory, "rev-list", "--count", "HEAD")) == commits + 1
    assert "scope keys follow the repository's identity" in _git(memory, "log", "-1", "--format=%s")
    assert await store_rekey.project_scopes(env.store) == [(str(project), new)]
    assert await db.get_scope(env.store, old) is None
    state = await db.get_scope(env.store, new)
    assert state is not None
    assert state.last_commit is not None
    plan = await plan_scope(env.store, env.settings, new, now=env.clock.now(), force=True)
    assert plan.action == "none"  # nothing to consolidate again: the memory moved as it was
    assert await rekey(env.store, env.settings, env.repo, env.clock) == []  # idempotent


async def test_two_clones_of_one_repository_join_one_scope(env: Env) -> None:
    env.api.responder = agent
    first = _project(env.tmp_path / "a" / "app")
    second = _project(env.tmp_path / "b" / "app")
    await env.add_extract("s1", project=str(first))
    await env.add_extract("s2", project=str(second))
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    for clone in (first, second):
        _git(clone, "remote", "add", "origin", "https://github.com/acme/app.git")
    moved = await rekey(env.store, env.settings, env.repo, env.clock)
    new = scope_for(str(first))
    assert {m.new for m in moved} == {new}
    assert any(m.merged for m in moved)
    folder = env.settings.paths.memory_dir / new
    assert len(list((folder / "rollout_summaries").iterdir())) == 2  # both clones' inputs
    raw = (folder / "raw_memories.md").read_text()
    assert "`s1`" in raw
    assert "`s2`" in raw
    plan = await plan_scope(env.store, env.settings, new, now=env.clock.now(), force=True)
    assert plan.action == "consolidate"  # one scope over both clones' sessions
    assert {r.session_id for r in plan.inputs} == {"s1", "s2"}


async def test_on_a_shared_store_a_machine_moves_its_folder_after_another_moved_the_records(env: Env) -> None:
    env.api.responder = agent
    project = _project(env.tmp_path / "src" / "app")
    old = f"projects/{path_key(str(project))}"
    await env.add_extract("s1", project=str(project))
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    _git(project, "remote", "add", "origin", "git@github.com:acme/app.git")
    new = scope_for(str(project))
    # Another machine sharing the store moved the records (and its own folder) first.
    await store_rekey.rename_scope(
        env.store, project=str(project), old=old, new=new, merged=False, now=env.clock.now()
    )
    watermark = (await db.get_scope(env.store, new)).watermark  # type: ignore[union-attr]
    moved = await rekey(env.store, env.settings, env.repo, env.clock)
    assert moved == [Move(str(project), old, new, merged=False)]
    memory = env.settings.paths.memory_dir
    assert not (memory / old).exists()
    assert (memory / new / "MEMORY.md").is_file()
    state = await db.get_scope(env.store, new)
    assert state is not None
    assert state.watermark == watermark  # the records were not touched again: nothing re-runs
    plan = await plan_scope(env.store, env.settings, new, now=env.clock.now(), force=True)
    assert plan.action == "none"
    assert await rekey(env.store, env.settings, env.repo, env.clock) == []


@pytest.mark.parametrize("origin", ["../app.git", "ssh://git@host:2222/acme/app.git"])
async def test_a_key_this_identity_fix_changes_is_renamed_not_lost(
    env: Env, monkeypatch: pytest.MonkeyPatch, origin: str
) -> None:
    """Before, a relative ``origin`` keyed by its text (``../app``) and a port was dropped: memory made
    under such a key moves to the key the project has now, with its records; nothing is paid again."""
    import pipeline.projects as projects

    env.api.responder = agent
    project = _project(env.tmp_path / "src" / "app")
    _git(project, "remote", "add", "origin", origin)
    fixed = scope_for(str(project))

    def before_the_fix(path: str) -> str | None:  # the identity memd made before: no base, no port
        url = projects.origin_url(Path(path))
        if url is None:
            return None
        return projects.normalize_remote(url.replace(":2222", ""))

    with monkeypatch.context() as patched:
        patched.setattr(projects, "repository_identity", before_the_fix)
        old = scope_for(str(project))
        await env.add_extract("s1", project=str(project))
        await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert old != fixed
    memory = env.settings.paths.memory_dir
    before = sorted(p.relative_to(memory / old).as_posix() for p in (memory / old).rglob("*") if p.is_file())
    assert before

    moved = await rekey(env.store, env.settings, env.repo, env.clock)
    assert moved == [Move(str(project), old, fixed, merged=False)]
    assert not (memory / old).exists()
    after = sorted(
        p.relative_to(memory / fixed).as_posix() for p in (memory / fixed).rglob("*") if p.is_file()
    )
    assert after == before
    assert await store_rekey.project_scopes(env.store) == [(str(project), fixed)]
    plan = await plan_scope(env.store, env.settings, fixed, now=env.clock.now(), force=True)
    assert plan.action == "none"  # the memory moved as it was: nothing to consolidate again
