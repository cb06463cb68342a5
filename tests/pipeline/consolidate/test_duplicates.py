"""A run whose topics say the same thing twice gets one repair turn, and is refused if it still does;
the duplicates found and fixed are recorded on the run."""

from __future__ import annotations

from pipeline.consolidate.run import run_phase2
from pipeline.projects import scope_for
from pipeline.store import consolidation as db
from tests.conftest import sqlite_only
from tests.fakes.anthropic_api import ScriptedResponder
from tests.pipeline.consolidate.support import (
    Env,
    done,
    last_user_text,
    mem,
    request_bodies,
    topic,
    turn,
    write_memory,
)

pytestmark = sqlite_only  # behaviour above the store (tests/conftest.py)

SCOPE = scope_for("/work/acme")
BODY = (
    "Run the test suite with make test from the repository root. The suite needs Docker running, "
    "and the integration tests need the fixtures database seeded first with make seed."
)
TWICE = {"testing.md": topic("Testing", BODY), "tests.md": topic("How to test", BODY)}
INDEX_ONCE = "# Memory index\n\n- [Testing](testing.md) — how to run the tests\n"


async def test_duplicates_are_sent_back_and_the_fixed_run_records_them(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(
        [
            *write_memory(TWICE),
            turn(
                mem("delete", path="/memories/tests.md"),
                mem("create", path="/memories/MEMORY.md", file_text=INDEX_ONCE),
            ),
            done(),
        ]
    )
    [scope] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert scope.outcome == "committed", scope
    repair = last_user_text(request_bodies(env.api)[4])
    assert "duplicate:" in repair
    assert "tests.md" in repair
    assert "testing.md" in repair
    assert not (env.repo.path / SCOPE / "tests.md").exists()
    [run] = await db.list_runs(env.store, scope=SCOPE)
    assert run.usage["duplicates_found"] == 1
    assert run.usage["duplicates_fixed"] == 1
    message = await env.repo.git("log", "-1", "--format=%B")
    assert "Duplicates: 1 found, 1 fixed by the repair turn" in message


async def test_duplicates_left_after_the_repair_turn_refuse_the_run_with_the_reason(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder([*write_memory(TWICE), done("Both files are fine.")])
    [scope] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert scope.outcome == "failed", scope
    assert any("duplicate:" in f and "tests.md" in f for f in scope.findings), scope.findings
    assert not (env.repo.path / SCOPE / "testing.md").exists()
    [run] = await db.list_runs(env.store, scope=SCOPE)
    assert "duplicate:" in (run.reason or "")
    assert run.usage["duplicates_found"] == 1
    assert run.usage["duplicates_fixed"] == 0


async def test_a_clean_run_records_no_duplicates(env: Env) -> None:
    await env.add_extract("sess-1")
    env.api.responder = ScriptedResponder(write_memory())
    [scope] = (await run_phase2(env.store, env.settings, env.repo, env.clock, env.llm, env.redactor)).scopes
    assert scope.outcome == "committed", scope
    [run] = await db.list_runs(env.store, scope=SCOPE)
    assert "duplicates_found" not in run.usage
