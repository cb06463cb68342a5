"""Review mode (inbox branches) and forgetting: sessions, projects, extracts unused too long."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline.consolidate import inbox
from pipeline.consolidate.forget import forget, scope_of_project
from pipeline.consolidate.run import run_phase2
from pipeline.errors import MemdError
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.memory import frontmatter
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from tests.conftest import sqlite_only
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import Env, done, dump, mem, request_bodies, topic, turn, write_memory

SCOPE = scope_for("/work/acme")


async def test_inbox_mode_parks_the_run_on_a_branch_until_accepted(env: Env) -> None:
    env = env.with_settings(review={"mode": "inbox"})
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "pending_review"
    assert scope.branch == f"inbox/{scope.run_id}"
    repo = env.repo
    assert not (repo.path / SCOPE).exists()  # the work tree is untouched
    assert len(await repo.log()) == 1
    [entry] = await inbox.pending(env.store, env.repo)
    assert entry.branch_exists
    assert entry.run.run_id == scope.run_id

    # While the run waits, the scope is not consolidated again.
    env.clock.advance(timedelta(days=1))
    await env.add_extract("sess-2")
    again = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in again.scopes] == ["skipped"]
    assert "waiting for review" in (again.scopes[0].reason or "")

    _entry, patch = await inbox.show(env.store, env.repo, scope.run_id[:10])
    assert "+++ b/" + SCOPE + "/testing.md" in patch
    assert "memd: consolidate" in patch

    head = await inbox.accept(env.store, env.settings, env.repo, env.clock, scope.run_id)
    assert await repo.head() == head
    assert (repo.path / SCOPE / "testing.md").is_file()
    assert await repo.inbox_branches() == []
    assert await inbox.pending(env.store, env.repo) == []
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert state.last_commit == head
    assert len(state.watermark) == 1
    with pytest.raises(MemdError, match="no pending run"):
        await inbox.accept(env.store, env.settings, env.repo, env.clock, scope.run_id)


@sqlite_only
async def test_an_inbox_run_lands_even_when_another_scope_moved_the_branch(env: Env) -> None:
    env = env.with_settings(review={"mode": "inbox"})
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    [scope] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    repo = env.repo
    (repo.path / "global").mkdir()
    (repo.path / "global" / "MEMORY.md").write_text("# Global\n")
    await repo.git("add", "-A")
    await repo.git("commit", "-q", "-m", "someone else")
    head = await inbox.accept(env.store, env.settings, env.repo, env.clock, scope.run_id)
    subjects = [c.subject for c in await repo.log()]
    assert subjects[0].startswith("memd: consolidate")
    assert subjects[1] == "someone else"
    assert await repo.head() == head
    assert (repo.path / "global" / "MEMORY.md").is_file()
    assert (repo.path / SCOPE / "MEMORY.md").is_file()


async def test_a_rejected_run_is_dropped_and_not_proposed_again_without_new_input(env: Env) -> None:
    env = env.with_settings(review={"mode": "inbox"}, schedule={"consolidate_cooldown_minutes": 0})
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    [scope] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    await inbox.reject(env.store, env.repo, env.clock, scope.run_id)
    assert await env.repo.inbox_branches() == []
    [run] = await db.list_runs(env.store, scope=SCOPE)
    assert run.outcome == "rejected"
    assert (
        await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    ).scopes == []
    assert len(env.api.message_requests()) == 4


async def test_forgetting_a_session_removes_what_only_it_taught(env: Env) -> None:
    first = await env.add_extract("sess-1", summary="Uses make.", raw="- `make test`")
    await env.add_extract("sess-2", summary="Deploys with fly.", raw="- `fly deploy`")
    topics = {
        "testing.md": topic("Testing", "Run `make test`."),
        "deploy.md": topic("Deploy", "Deploy with `fly deploy`."),
    }
    env.api.responder = ScriptedResponder(write_memory(topics))
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    folder = env.repo.path / SCOPE
    # Both topics came from both sessions as far as memd knows (one run consumed both).
    assert frontmatter.parse((folder / "testing.md").read_text()).meta.sources == ("sess-1", "sess-2")

    # A later run learns only from sess-3 and rewrites deploy.md; then sess-2 and sess-3 are forgotten.
    env.clock.advance(timedelta(days=1))
    await env.add_extract("sess-3", summary="Moved deploys to k8s.", raw="- `kubectl apply`")
    env.api.responder = ScriptedResponder(
        [
            turn(mem("create", path="/memories/k8s.md", file_text=topic("K8s", "Deploy with kubectl."))),
            turn(
                mem(
                    "str_replace",
                    path="/memories/MEMORY.md",
                    old_str="- [deploy.md]",
                    new_str="- [k8s.md](k8s.md) — k8s\n- [deploy.md]",
                )
            ),
            done(),
        ]
    )
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert frontmatter.parse((folder / "k8s.md").read_text()).meta.sources == ("sess-3",)

    env.clock.advance(timedelta(hours=1))
    # memd withdraws k8s.md and the digest before the agent runs; the agent only rewrites the digest.
    calls = len(env.api.message_requests())
    env.api.responder = ScriptedResponder(
        [
            turn(mem("view", path="/memories")),
            turn(mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nacme.\n")),
            done(),
        ]
    )
    report = await forget(
        env.store, env.settings, env.repo, env.clock, env.llm, env.redactor, session_id="sess-3"
    )
    assert report.forgotten == {SCOPE: 1}
    [run] = report.runs
    assert run.outcome == "committed", run
    assert run.withdrawn == ["k8s.md"]
    assert run.rebuilt == []
    assert run.removed_topics == {"k8s.md": "forgotten"}
    assert not (folder / "k8s.md").exists()
    assert "k8s.md" not in (folder / "MEMORY.md").read_text()
    assert (folder / "testing.md").exists()
    assert (folder / "deploy.md").exists()
    prompt = request_bodies(env.api)[calls]["messages"][0]["content"][0]["text"]
    assert "sess-3" in prompt
    assert "/memories/k8s.md" in prompt  # named as withdrawn
    assert "D /memories/rollout_summaries/" in prompt  # the removed input, by name only
    assert "kubectl" not in prompt
    assert "Moved deploys to k8s" not in prompt
    assert any(c.startswith("D rollout_summaries/") for c in run.changes)
    assert first  # sess-1 is still an input
    assert "sess-3" not in (folder / "raw_memories.md").read_text()


async def test_forgetting_a_project_clears_its_scope_without_a_model_call(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    calls = len(env.api.message_requests())
    key = SCOPE.split("/", 1)[1]
    report = await forget(env.store, env.settings, env.repo, env.clock, None, env.redactor, project=key)
    [run] = report.runs
    assert run.outcome == "cleared", run
    assert not (env.repo.path / SCOPE).exists()
    assert len(env.api.message_requests()) == calls
    assert (await env.repo.log())[0].subject.startswith(f"memd: forget {SCOPE}")
    assert scope_of_project("/work/acme") == SCOPE == scope_of_project(SCOPE)
    with pytest.raises(ValueError, match="not a scope"):
        scope_of_project("projects/../etc")


@sqlite_only
async def test_an_extract_unused_too_long_leaves_as_a_deletion_in_the_diff(env: Env) -> None:
    env = env.with_settings(memories={"max_unused_days": 30})
    await env.add_extract("old-sess", created_at=env.clock.now() - timedelta(days=20))
    await env.add_extract(
        "used-sess", created_at=env.clock.now() - timedelta(days=20), last_used_at=env.clock.now()
    )
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    env.clock.advance(timedelta(days=15))
    env.api.responder = ScriptedResponder([done("Nothing to change.")])
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "committed", scope
    assert scope.removed == 1
    prompt = request_bodies(env.api)[-1]["messages"][0]["content"][0]["text"]
    assert "1 session(s) removed" in prompt
    assert "old-sess" in prompt
    assert "deleted file mode" in prompt
    folder = env.repo.path / SCOPE
    assert "old-sess" not in (folder / "raw_memories.md").read_text()
    assert "used-sess" in (folder / "raw_memories.md").read_text()


async def _tree_text(repo: MemoryRepo) -> str:
    """Every file of the committed tree at HEAD, concatenated."""
    names = (await repo.git("ls-tree", "-r", "--name-only", "HEAD")).split()
    return "".join([await repo.git("show", f"HEAD:{name}") for name in names])


@sqlite_only
async def test_forgetting_a_session_rebuilds_the_topics_it_shared_without_it(env: Env) -> None:
    await env.add_extract("sess-b", summary="Runs the suite with make.", raw="- tests run with `make test`")
    env.api.responder = ScriptedResponder(
        write_memory(
            {
                "testing.md": topic("Testing", "Run `make test`."),
                "docker.md": topic("Docker", "The suite needs Docker."),
            }
        )
    )
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)

    # sess-a teaches one fact; the agent folds it into testing.md and the digest.
    env.clock.advance(timedelta(days=1))
    await env.add_extract("sess-a", summary="Lints with zebralint.", raw="- lint with `zebralint --strict`")
    env.api.responder = ScriptedResponder(
        [
            turn(
                mem(
                    "str_replace",
                    path="/memories/testing.md",
                    old_str="Run `make test`.",
                    new_str="Run `make test`. Lint with `zebralint --strict` first.",
                ),
                mem(
                    "str_replace",
                    path="/memories/memory_summary.md",
                    old_str="works on acme.",
                    new_str="works on acme and lints with zebralint.",
                ),
            ),
            done(),
        ]
    )
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    folder = env.repo.path / SCOPE
    meta = frontmatter.parse((folder / "testing.md").read_text()).meta
    assert meta.sources == ("sess-a", "sess-b")
    assert frontmatter.parse((folder / "docker.md").read_text()).meta.sources == ("sess-b",)
    assert "zebralint" in await _tree_text(env.repo)

    # Forget sess-a: a scripted agent that rebuilds testing.md and the digest from what is left.
    env.clock.advance(timedelta(hours=1))
    calls = len(env.api.message_requests())
    env.api.responder = ScriptedResponder(
        [
            turn(mem("view", path="/memories"), mem("view", path="/memories/raw_memories.md")),
            turn(
                mem("create", path="/memories/testing.md", file_text=topic("Testing", "Run `make test`.")),
                mem(
                    "str_replace",
                    path="/memories/MEMORY.md",
                    old_str="- [docker.md]",
                    new_str="- [testing.md](testing.md) — how to run the tests\n- [docker.md]",
                ),
                mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nRebuilt: acme.\n"),
            ),
            done(),
        ]
    )
    report = await forget(
        env.store, env.settings, env.repo, env.clock, env.llm, env.redactor, session_id="sess-a"
    )
    [run] = report.runs
    assert run.outcome == "committed", run
    assert run.withdrawn == ["testing.md"] == run.rebuilt  # docker.md cites only sess-b: kept as is
    assert run.removed_topics == {}

    # What the model was sent: neither testing.md's old text, nor the digest's, nor sess-a's inputs.
    sent = dump(request_bodies(env.api)[calls:])
    assert "zebralint" not in sent
    assert "Lints with" not in sent
    first = request_bodies(env.api)[calls]["messages"][0]["content"][0]["text"]
    assert "Forgotten session(s) sess-a" in first
    assert "/memories/testing.md" in first
    assert "remaining inputs" in first
    assert "The suite needs Docker" not in first  # untouched topics are not withdrawn nor shown

    # What was committed: testing.md rebuilt citing only sess-b, the digest rebuilt, no trace of sess-a.
    meta = frontmatter.parse((folder / "testing.md").read_text()).meta
    assert meta.sources == ("sess-b",)
    assert frontmatter.parse((folder / "docker.md").read_text()).meta.sources == ("sess-b",)
    assert (folder / "memory_summary.md").read_text() == "# Summary\n\nRebuilt: acme.\n"
    assert "[testing.md](testing.md)" in (folder / "MEMORY.md").read_text()
    tree = await _tree_text(env.repo)
    assert "zebralint" not in tree
    assert "sess-a" not in tree
    assert "Runs the suite with make." in tree  # sess-b's input is still there
    message = (await env.repo.log())[0]
    assert message.subject.startswith(f"memd: consolidate {SCOPE}")
    body = await env.repo.git("log", "-1", "--format=%B")
    assert "Withdrawn for forgotten sessions: testing.md" in body
    assert "Rebuilt from the remaining inputs: testing.md" in body


@sqlite_only
async def test_forgetting_the_last_input_of_a_scope_empties_it_without_a_model_call(env: Env) -> None:
    # old-sess expires (unused too long) on its own; forgetting sess-1 then leaves no input at all.
    env = env.with_settings(memories={"max_unused_days": 30})
    await env.add_extract("old-sess", created_at=env.clock.now() - timedelta(days=20))
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert (env.repo.path / SCOPE / "testing.md").is_file()
    env.clock.advance(timedelta(days=15))
    calls = len(env.api.message_requests())
    report = await forget(
        env.store, env.settings, env.repo, env.clock, env.llm, env.redactor, session_id="sess-1"
    )
    [run] = report.runs
    assert run.outcome == "cleared", run
    assert len(env.api.message_requests()) == calls
    assert not (env.repo.path / SCOPE).exists()
    assert SCOPE not in await env.repo.git("ls-tree", "-r", "--name-only", "HEAD")
    assert (await env.repo.log())[0].subject.startswith(f"memd: forget {SCOPE}")
