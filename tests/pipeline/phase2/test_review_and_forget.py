"""Review mode (inbox branches) and forgetting: sessions, projects, extracts unused too long."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline.errors import MemdError
from pipeline.phase2 import inbox
from pipeline.phase2.forget import forget, scope_of_project
from pipeline.phase2.run import run_phase2
from pipeline.projects import scope_for
from pipeline.repo import frontmatter
from pipeline.store import consolidation as db
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.phase2.support import Env, done, mem, request_bodies, topic, turn, write_memory

SCOPE = scope_for("/work/acme")


async def test_inbox_mode_parks_the_run_on_a_branch_until_accepted(env: Env) -> None:
    env = env.with_settings(review={"mode": "inbox"})
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    assert scope.outcome == "pending_review"
    assert scope.branch == f"inbox/{scope.run_id}"
    repo = env.repo
    assert not (repo.path / SCOPE).exists()  # the work tree is untouched
    assert len(await repo.log()) == 1
    [entry] = await inbox.pending(env.store, env.settings)
    assert entry.branch_exists
    assert entry.run.run_id == scope.run_id

    # While the run waits, the scope is not consolidated again.
    env.clock.advance(timedelta(days=1))
    await env.add_extract("sess-2")
    again = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in again.scopes] == ["skipped"]
    assert "waiting for review" in (again.scopes[0].reason or "")

    _entry, patch = await inbox.show(env.store, env.settings, scope.run_id[:10])
    assert "+++ b/" + SCOPE + "/testing.md" in patch
    assert "memd: consolidate" in patch

    head = await inbox.accept(env.store, env.settings, env.clock, scope.run_id)
    assert await repo.head() == head
    assert (repo.path / SCOPE / "testing.md").is_file()
    assert await repo.inbox_branches() == []
    assert await inbox.pending(env.store, env.settings) == []
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert state.last_commit == head
    assert len(state.watermark) == 1
    with pytest.raises(MemdError, match="no pending run"):
        await inbox.accept(env.store, env.settings, env.clock, scope.run_id)


async def test_an_inbox_run_lands_even_when_another_scope_moved_the_branch(env: Env) -> None:
    env = env.with_settings(review={"mode": "inbox"})
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    [scope] = (await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)).scopes
    repo = env.repo
    (repo.path / "global").mkdir()
    (repo.path / "global" / "MEMORY.md").write_text("# Global\n")
    await repo.git("add", "-A")
    await repo.git("commit", "-q", "-m", "someone else")
    head = await inbox.accept(env.store, env.settings, env.clock, scope.run_id)
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
    [scope] = (await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)).scopes
    await inbox.reject(env.store, env.settings, env.clock, scope.run_id)
    assert await env.repo.inbox_branches() == []
    [run] = await db.list_runs(env.store, scope=SCOPE)
    assert run.outcome == "rejected"
    assert (await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)).scopes == []
    assert len(env.api.message_requests()) == 4


async def test_forgetting_a_session_removes_what_only_it_taught(env: Env) -> None:
    first = await env.add_extract("sess-1", summary="Uses make.", raw="- `make test`")
    await env.add_extract("sess-2", summary="Deploys with fly.", raw="- `fly deploy`")
    topics = {
        "testing.md": topic("Testing", "Run `make test`."),
        "deploy.md": topic("Deploy", "Deploy with `fly deploy`."),
    }
    env.api.responder = ScriptedResponder(write_memory(topics))
    await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
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
    await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    assert frontmatter.parse((folder / "k8s.md").read_text()).meta.sources == ("sess-3",)

    env.clock.advance(timedelta(hours=1))
    # The agent keeps everything (it does not obey the diff); memd removes k8s.md itself.
    env.api.responder = ScriptedResponder([turn(mem("view", path="/memories")), done()])
    report = await forget(env.store, env.settings, env.clock, env.llm, env.redactor, session_id="sess-3")
    assert report.forgotten == {SCOPE: 1}
    [run] = report.runs
    assert run.outcome == "committed", run
    assert run.removed_topics == {"k8s.md": "forgotten"}
    assert not (folder / "k8s.md").exists()
    assert "k8s.md" not in (folder / "MEMORY.md").read_text()
    assert (folder / "testing.md").exists()
    assert (folder / "deploy.md").exists()
    prompt = request_bodies(env.api)[-2]["messages"][0]["content"][0]["text"]
    assert "sess-3" in prompt
    assert "deleted file" in prompt
    assert any(c.startswith("D rollout_summaries/") for c in run.changes)
    assert first  # sess-1 is still an input
    assert "sess-3" not in (folder / "raw_memories.md").read_text()


async def test_forgetting_a_project_clears_its_scope_without_a_model_call(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    calls = len(env.api.message_requests())
    key = SCOPE.split("/", 1)[1]
    report = await forget(env.store, env.settings, env.clock, None, env.redactor, project=key)
    [run] = report.runs
    assert run.outcome == "cleared", run
    assert not (env.repo.path / SCOPE).exists()
    assert len(env.api.message_requests()) == calls
    assert (await env.repo.log())[0].subject.startswith(f"memd: forget {SCOPE}")
    assert scope_of_project("/work/acme") == SCOPE == scope_of_project(SCOPE)
    with pytest.raises(ValueError, match="not a project key"):
        scope_of_project("../etc")


async def test_an_extract_unused_too_long_leaves_as_a_deletion_in_the_diff(env: Env) -> None:
    env = env.with_settings(memories={"max_unused_days": 30})
    await env.add_extract("old-sess", created_at=env.clock.now() - timedelta(days=20))
    await env.add_extract(
        "used-sess", created_at=env.clock.now() - timedelta(days=20), last_used_at=env.clock.now()
    )
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
    env.clock.advance(timedelta(days=15))
    env.api.responder = ScriptedResponder([done("Nothing to change.")])
    report = await run_phase2(env.store, env.settings, env.clock, env.llm, env.redactor)
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
