"""Phase 2 keeps what the person decided (issue 25), enforced in code against a scripted model: a
forgotten memory recreated (same file, or the same text under another name) is a finding for the
repair turn and never lands while the rest of the run does; an edited topic overwritten, or a
pinned topic deleted, is restored."""

from __future__ import annotations

from datetime import timedelta

from daemon.runtime import Runtime
from daemon.usecases.memories import edit_memory, forget_memory, pin_memory
from pipeline.consolidate.run import run_phase2
from pipeline.memory import frontmatter
from pipeline.projects import scope_for
from tests.fakes.anthropic_api import ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import (
    Env,
    done,
    last_user_text,
    mem,
    request_bodies,
    short_topics,
    topic,
    turn,
    write_memory,
)

DEPLOY_BODY = "Deploy with `fly deploy --remote-only` from the main branch once the tests pass."
PROJECT = "/work/acme"
SCOPE = scope_for(PROJECT)


async def _first_run(env: Env) -> Runtime:
    await env.add_extract("sess-1", project=PROJECT)
    env.api.responder = ScriptedResponder(write_memory(short_topics(DEPLOY_BODY)))
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    assert [s.outcome for s in report.scopes] == ["committed"], report.scopes
    return Runtime(env.store, lambda: env.settings, clock=env.clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY})


def _index(*files: str) -> str:
    return "# Memory index\n\n" + "".join(f"- [{f}]({f}) — about {f}\n" for f in files)


async def _second_run(env: Env, script: list) -> object:  # type: ignore[type-arg]
    await env.add_extract("sess-2", project=PROJECT, summary="Release notes.", raw="- releases on Fridays")
    env.clock.advance(timedelta(days=1))
    env.api.responder = ScriptedResponder(script)
    report = await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)
    [scope] = report.scopes
    return scope


async def test_a_forgotten_memory_recreated_never_lands_and_the_rest_of_the_run_does(env: Env) -> None:
    rt = await _first_run(env)
    await forget_memory(rt, f"{SCOPE}/deploy.md")

    recreate = turn(
        mem("create", path="/memories/deploy.md", file_text=topic("Deploy", "Ship it on Fridays.")),
        mem(
            "create",
            path="/memories/shipping.md",
            file_text=topic(
                "Shipping", "Deploy with fly deploy --remote-only from the main branch, once tests pass."
            ),
        ),
        mem(
            "create", path="/memories/releases.md", file_text=topic("Releases", "Releases go out on Fridays.")
        ),
        mem(
            "create",
            path="/memories/MEMORY.md",
            file_text=_index("testing.md", "deploy.md", "shipping.md", "releases.md"),
        ),
        # The forget left the placeholder digest, which memd removed before the run: written again.
        mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nReleases on Fridays.\n"),
    )
    scope = await _second_run(env, [recreate, done(), recreate, done()])

    assert scope.outcome == "committed", scope  # type: ignore[attr-defined]
    folder = env.repo.path / SCOPE
    assert not (folder / "deploy.md").exists()
    assert not (folder / "shipping.md").exists()
    assert (folder / "releases.md").is_file()
    index = (folder / "MEMORY.md").read_text()
    assert "releases.md" in index
    assert "shipping.md" not in index
    assert "deploy.md" not in index
    message = await env.repo.git("log", "-1", "--format=%B")
    assert "Kept for the person: shipping.md brings back deploy.md" in message

    bodies = request_bodies(env.api)[-4:]
    assert "forgotten, never write it again" in bodies[0]["messages"][0]["content"][0]["text"]
    assert "deploy.md" in bodies[0]["messages"][0]["content"][0]["text"]
    assert "remote-only" not in bodies[0]["messages"][0]["content"][0]["text"]  # its text is not shown again
    assert "leaving memory_summary.md as a placeholder" in bodies[0]["messages"][0]["content"][0]["text"]
    assert (folder / "memory_summary.md").read_text() == "# Summary\n\nReleases on Fridays.\n"
    repair = last_user_text(bodies[2])
    assert "shipping.md brings back deploy.md" in repair
    assert "deploy.md brings back deploy.md, a memory the person forgot (the same file)" in repair


async def test_an_edited_topic_overwritten_and_a_pinned_topic_deleted_are_restored(env: Env) -> None:
    rt = await _first_run(env)
    await edit_memory(rt, f"{SCOPE}/testing.md", "Run `just test`, never `make test`.")
    await pin_memory(rt, f"{SCOPE}/deploy.md")
    edited = (env.repo.path / SCOPE / "testing.md").read_text()

    overwrite = turn(
        mem("create", path="/memories/testing.md", file_text=topic("Testing", "Run `make test`.")),
        mem("delete", path="/memories/deploy.md"),
        mem(
            "create", path="/memories/releases.md", file_text=topic("Releases", "Releases go out on Fridays.")
        ),
        mem("create", path="/memories/MEMORY.md", file_text=_index("testing.md", "releases.md")),
        # the edit left the placeholder digest (issue 36): this run writes it again
        mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nRun `just test`.\n"),
    )
    scope = await _second_run(env, [overwrite, done(), done()])

    assert scope.outcome == "committed", scope  # type: ignore[attr-defined]
    folder = env.repo.path / SCOPE
    assert (folder / "testing.md").read_text() == edited
    meta = frontmatter.parse((folder / "deploy.md").read_text()).meta
    assert meta.pinned
    assert DEPLOY_BODY in (folder / "deploy.md").read_text()
    index = (folder / "MEMORY.md").read_text()
    assert "deploy.md" in index
    assert "releases.md" in index
    assert (folder / "releases.md").is_file()
    repair = last_user_text(request_bodies(env.api)[-1])
    assert "testing.md is the person's own text (edited): you changed it, so memd restored it" in repair
    assert "deploy.md is pinned by the person: you deleted it, so memd restored it" in repair
    assert "never change or delete it" in request_bodies(env.api)[-3]["messages"][0]["content"][0]["text"]


async def test_a_forget_refused_for_uncommitted_changes_leaves_the_next_run_alone(env: Env) -> None:
    import pytest

    from pipeline.memory.steer import SteerRefused

    rt = await _first_run(env)
    folder = env.repo.path / SCOPE
    (folder / "scratch-note.md").write_text("uncommitted\n")
    with pytest.raises(SteerRefused, match="uncommitted changes"):
        await forget_memory(rt, f"{SCOPE}/deploy.md")
    (folder / "scratch-note.md").unlink()

    keep = turn(
        mem(
            "create", path="/memories/releases.md", file_text=topic("Releases", "Releases go out on Fridays.")
        ),
        mem("create", path="/memories/MEMORY.md", file_text=_index("testing.md", "deploy.md", "releases.md")),
    )
    scope = await _second_run(env, [keep, done(), done()])

    assert scope.outcome == "committed", scope  # type: ignore[attr-defined]
    assert (folder / "deploy.md").is_file()  # told nothing changed: nothing did
    assert "forgotten" not in (await env.repo.git("log", "-1", "--format=%B"))
