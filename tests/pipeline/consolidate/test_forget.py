"""``memd forget`` rebuilds from what is on main only, and removes the forgotten text from the store."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from pipeline.consolidate import inbox
from pipeline.consolidate.forget import forget
from pipeline.consolidate.run import run_phase2
from pipeline.memory.inputs import feeds_global
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from pipeline.store.schema import stage1_outputs
from tests.conftest import sqlite_only
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import Env, candidate, done, mem, request_bodies, turn, write_memory

SCOPE = scope_for("/work/acme")


async def _land(env: Env) -> None:
    env.api.responder = ScriptedResponder(write_memory())
    [scope] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert scope.outcome == "pending_review", scope
    assert scope.run_id is not None
    await inbox.accept(env.store, env.settings, env.repo, env.clock, scope.run_id)


async def _tree(env: Env) -> str:
    names = (await env.repo.git("ls-tree", "-r", "--name-only", "HEAD")).split()
    return "".join([await env.repo.git("show", f"HEAD:{n}") for n in names])


@sqlite_only
async def test_forget_rebuilds_from_what_is_on_main_and_never_lands_a_rejected_run(env: Env) -> None:
    env = env.with_settings(review={"mode": "inbox"}, schedule={"consolidate_cooldown_minutes": 0})
    await env.add_extract("sess-a", summary="Alpha work.", raw="- alpha fact")
    await env.add_extract("sess-c", summary="Gamma work.", raw="- gamma fact")
    await _land(env)

    env.clock.advance(timedelta(days=1))
    await env.add_extract("sess-b", summary="Rejected bravo work.", raw="- bravo fact")
    env.api.responder = ScriptedResponder(write_memory())
    [proposed] = (
        await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    ).scopes
    assert proposed.run_id is not None
    await inbox.reject(env.store, env.repo, env.clock, proposed.run_id)

    env.clock.advance(timedelta(hours=1))
    calls = len(env.api.message_requests())
    env.api.responder = ScriptedResponder(
        [
            turn(mem("view", path="/memories")),
            turn(mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nGamma.\n")),
            done(),
        ]
    )
    report = await forget(
        env.store, env.settings, env.repo, env.clock, env.llm, env.redactor, session_id="sess-a"
    )
    [run] = report.runs
    assert run.outcome == "committed", run
    assert "bravo" not in str(request_bodies(env.api)[calls:]).lower()
    tree = await _tree(env)
    assert "bravo" not in tree.lower()
    assert "Alpha work" not in tree
    assert "Gamma work." in tree
    body = await env.repo.git("log", "-1", "--format=%B")
    assert "- sess-a" in body
    assert "sess-b" not in body

    # The rejected proposal is not made again without new input.
    assert (
        await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    ).scopes == []


@sqlite_only
async def test_forgetting_a_session_only_in_a_pending_run_drops_the_run_and_succeeds(env: Env) -> None:
    env = env.with_settings(review={"mode": "inbox"}, schedule={"consolidate_cooldown_minutes": 0})
    await env.add_extract("sess-c", summary="Gamma work.")
    await _land(env)
    head = await env.repo.head()
    env.clock.advance(timedelta(days=1))
    await env.add_extract("sess-p", summary="Pending pinto work.")
    env.api.responder = ScriptedResponder(write_memory())
    [proposed] = (
        await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    ).scopes
    assert proposed.outcome == "pending_review"

    calls = len(env.api.message_requests())
    report = await forget(
        env.store, env.settings, env.repo, env.clock, env.llm, env.redactor, session_id="sess-p"
    )
    assert report.dropped_inbox == [proposed.run_id]
    [run] = report.runs
    assert run.outcome == "unchanged", run
    assert run.reason is not None
    assert "nothing of it was in the memory" in run.reason
    assert await env.repo.head() == head
    assert await env.repo.inbox_branches() == []
    assert len(env.api.message_requests()) == calls


async def test_the_forgotten_text_leaves_the_state_store_and_only_ids_stay(env: Env) -> None:
    marker = "zyxwvu-forget-me-" * 8
    await env.add_extract(
        "sess-x",
        summary=f"Summary {marker}",
        raw=f"- raw {marker}",
        memories=[candidate("user", "Secret", f"body {marker}")],
    )
    await env.add_extract("sess-y")
    env.api.responder = ScriptedResponder(write_memory())
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    env.api.responder = ScriptedResponder(write_memory())
    await forget(env.store, env.settings, env.repo, env.clock, None, env.redactor, session_id="sess-x")

    async with env.store.read() as conn:
        rows = (
            await conn.execute(select(stage1_outputs).where(stage1_outputs.c.session_id == "sess-x"))
        ).all()
    assert rows
    for row in rows:
        assert row.forgotten_at is not None
        assert row.rollout_summary == ""
        assert row.raw_memory == ""
        assert row.rollout_slug == ""
        assert row.memories == []
    assert await db.forgotten_sessions(env.store, SCOPE) == {"sess-x"}
    if env.store.dialect == "sqlite":
        files = sorted(env.tmp_path.glob("state.db*"))
        assert files
        for path in files:  # while the store is open (the daemon may hold it), then closed
            assert b"zyxwvu-forget-me" not in path.read_bytes(), path
        await env.store.close()
        for path in env.tmp_path.glob("state.db*"):
            assert b"zyxwvu-forget-me" not in path.read_bytes(), path


async def test_without_a_model_a_forget_still_withdraws_and_tombstones_and_the_next_run_rebuilds(
    env: Env,
) -> None:
    """No API key: the forgotten session's inputs and every topic citing it go now, with the digest
    (a placeholder until rebuilt) and its tombstone in the commit, so the forget takes effect and
    travels; the next run with a model rebuilds the digest, cooldown or not."""
    from pipeline.layout import PLACEHOLDER_SUMMARY
    from pipeline.memory.tombstones import path_of
    from tests.pipeline.sync.support import agent

    env.api.responder = agent
    await env.add_extract("sess-a", summary="Alpha work.", raw="- alpha fact")
    await env.add_extract("sess-c", summary="Gamma work.", raw="- gamma fact")
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert "alpha fact" in await _tree(env)

    report = await forget(
        env.store, env.settings, env.repo, env.clock, None, env.redactor, session_id="sess-a"
    )
    [run] = report.runs
    assert run.outcome == "committed", run
    tree = await _tree(env)
    assert "sess-a" not in tree
    assert "alpha" not in tree.lower()
    assert "gamma fact" in tree
    names = (await env.repo.git("ls-tree", "-r", "--name-only", "HEAD")).split()
    assert path_of("sess-a") in names
    assert await env.repo.git("show", f"HEAD:{SCOPE}/memory_summary.md") == PLACEHOLDER_SUMMARY.decode()

    calls = len(env.api.message_requests())
    [rebuilt] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert rebuilt.outcome == "committed", rebuilt
    assert len(env.api.message_requests()) > calls
    summary = await env.repo.git("show", f"HEAD:{SCOPE}/memory_summary.md")
    assert "sess-c" in summary
    assert "rebuilding" not in summary
    assert "alpha" not in (await _tree(env)).lower()
    # rebuilt once: nothing is left to do
    assert (
        await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    ).scopes == []


async def test_a_rewrite_the_model_leaves_half_done_is_dropped_and_the_forget_lands_without_it(
    env: Env,
) -> None:
    """The agent wrote a file, then the API failed: nothing it wrote lands; the forget lands as it
    would without a model (inputs, citing topics, their index lines and the digest gone), its
    tombstone with it, and the scope is marked to be rebuilt."""
    from tests.fakes.anthropic_api import bad_request
    from tests.pipeline.sync.support import agent

    env.api.responder = agent
    await env.add_extract("sess-a", summary="Alpha work.", raw="- alpha fact")
    await env.add_extract("sess-c", summary="Gamma work.", raw="- gamma fact")
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert "alpha fact" in await _tree(env)

    env.api.responder = ScriptedResponder(
        [
            turn(
                mem("create", path="/memories/half.md", file_text="---\nname: Half\n---\nalpha, half done\n")
            ),
            bad_request("messages: refused"),
        ]
    )
    report = await forget(
        env.store, env.settings, env.repo, env.clock, env.llm, env.redactor, session_id="sess-a"
    )
    [run] = report.runs
    assert run.outcome == "committed", run
    assert run.mode == "WITHDRAW"
    assert run.reason is not None
    assert "refused" in run.reason
    tree = await _tree(env)
    assert "alpha" not in tree.lower()
    assert "half done" not in tree
    assert "gamma fact" in tree
    state = await db.get_scope(env.store, SCOPE)
    assert state is not None
    assert state.rebuild
    body = await env.repo.git("log", "-1", "--format=%B")
    assert "Withdrawn for forgotten sessions" in body


async def test_a_forget_interrupted_before_its_rewrite_is_finished_by_the_next_one(env: Env) -> None:
    from tests.pipeline.sync.support import agent

    env.api.responder = agent
    await env.add_extract("sess-a", summary="Alpha work.", raw="- alpha fact")
    await env.add_extract("sess-c", summary="Gamma work.", raw="- gamma fact")
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    await db.forget(
        env.store, now=env.clock.now(), feeds_global=feeds_global, session_id="sess-a"
    )  # then the process stopped
    assert await db.not_withdrawn(env.store, session_id="sess-a") == {SCOPE}
    assert "alpha fact" in await _tree(env)

    report = await forget(
        env.store, env.settings, env.repo, env.clock, None, env.redactor, session_id="sess-a"
    )
    assert report.forgotten == {}
    assert report.unfinished == [SCOPE]
    [run] = report.runs
    assert run.outcome == "committed", run
    assert "alpha" not in (await _tree(env)).lower()
    assert await db.not_withdrawn(env.store, session_id="sess-a") == set()
    assert not (
        await forget(env.store, env.settings, env.repo, env.clock, None, env.redactor, session_id="sess-a")
    ).matched


@sqlite_only
async def test_a_forget_that_withdraws_a_pinned_memory_says_it_was_pinned(env: Env) -> None:
    """Issue 36: a forget outranks a pin, and says so rather than withdrawing it silently."""
    from daemon.actions import forget_lines
    from pipeline.memory import frontmatter
    from pipeline.memory.steer import pin_topic
    from tests.pipeline.sync.support import agent

    env.api.responder = agent
    await env.add_extract("sess-a", summary="Alpha work.", raw="- alpha fact")
    await env.add_extract("sess-c", summary="Gamma work.", raw="- gamma fact")
    await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    citing = [
        p.name
        for p in (env.repo.path / SCOPE).glob("*.md")
        if "sess-a" in frontmatter.parse(p.read_text(), strict=False).meta.sources
    ]
    assert citing
    await pin_topic(
        env.repo, SCOPE, citing[0], True, scratch_parent=env.tmp_path / "pin", author="Ada <ada@x>"
    )

    report = await forget(
        env.store, env.settings, env.repo, env.clock, None, env.redactor, session_id="sess-a"
    )
    [run] = report.runs
    assert run.pinned_withdrawn == [citing[0]]
    lines = forget_lines(report, "session sess-a", None, "sqlite")
    assert (
        f"  {SCOPE}/{citing[0]} was pinned: it cited session sess-a, and a forget outranks a pin"
        in "\n".join(lines)
    )
