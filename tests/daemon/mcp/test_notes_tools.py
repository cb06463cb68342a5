"""`memory_remember` and `memory_feedback` as an agent calls them, spoken to by the SDK's own client,
writing their records into a real SQLite store: the server `memd mcp` builds, in this process
(``base.server``), and four real `memd mcp` subprocesses over stdio sharing one store (``base.process``)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pipeline.layout import GLOBAL_SCOPE
from pipeline.notes.caps import FEEDBACK_PER_HOUR, TEXT_MAX_CHARS
from pipeline.notes.remember import GLOBAL_HELD
from tests.configs import write_config
from tests.daemon.mcp import test_server as base

AWS_KEY = "AKIA" + "QYLPMN5HHHFPZAM2"
world = base.world
"""The memory and project of `memd mcp`'s own tests (``tests.daemon.mcp.test_server``)."""


@pytest.fixture
def stored(world: dict[str, Any], migrated_sqlite: Path) -> dict[str, Any]:
    """The world with a migrated store, as memd leaves it after its first run."""
    db = world["config"].parent / "state.db"
    shutil.copyfile(migrated_sqlite, db)
    return {**world, "db": db}


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_the_two_tools_are_listed_as_writing_nothing_destructive(world: dict[str, Any]) -> None:
    async with base.server(world) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    for name in ("memory_remember", "memory_feedback"):
        tool = tools[name]
        assert tool.annotations is not None
        assert (tool.annotations.read_only_hint, tool.annotations.destructive_hint) == (False, False)
        assert tool.output_schema is not None
        assert "status" in tool.output_schema["properties"]
    remember = tools["memory_remember"].input_schema
    assert remember["required"] == ["text"]
    assert remember["properties"]["text"]["maxLength"] == TEXT_MAX_CHARS
    assert remember["properties"]["scope"]["enum"] == ["project", "global"]
    feedback = tools["memory_feedback"].input_schema
    assert sorted(feedback["required"]) == ["id", "verdict"]
    assert feedback["properties"]["verdict"]["enum"] == ["helped", "misled", "stale", "wrong"]


async def test_remember_keeps_a_note_for_the_projects_next_consolidation(stored: dict[str, Any]) -> None:
    async with base.server(stored) as session:
        kept = await session.call_tool(
            "memory_remember", {"text": "Staging deploys need VPN", "reason": "it failed without"}
        )
        to_global = await session.call_tool("memory_remember", {"text": "Prefers uv", "scope": "global"})
        secret = await session.call_tool("memory_remember", {"text": f"the key is {AWS_KEY}"})
        too_long = await session.call_tool("memory_remember", {"text": "x" * (TEXT_MAX_CHARS + 1)})
    out = kept.structured_content or {}
    assert out["status"] == "pending"
    assert out["id"].startswith("note-")
    assert (to_global.structured_content or {})["reason"] == GLOBAL_HELD
    refused = secret.structured_content or {}
    assert refused["status"] == "refused"
    assert "aws" in refused["reason"].lower()
    assert AWS_KEY not in str(secret.content) + str(refused)
    assert too_long.is_error
    assert rows(stored["db"], "SELECT scope, text, reason, origin FROM memory_notes ORDER BY id") == [
        (stored["scope"], "Staging deploys need VPN", "it failed without", "agent via MCP"),
        (GLOBAL_SCOPE, "Prefers uv", None, "agent via MCP"),
    ]


async def test_a_session_past_its_hourly_notes_is_refused(
    world: dict[str, Any], migrated_sqlite: Path
) -> None:
    config = write_config(world["config"].parent, "[notes]\nremember_per_hour = 1\n")
    shutil.copyfile(migrated_sqlite, config.parent / "state.db")
    async with base.server({**world, "config": config}) as session:
        first = await session.call_tool("memory_remember", {"text": "one"})
        second = await session.call_tool("memory_remember", {"text": "two"})
    assert (first.structured_content or {})["status"] == "pending"
    assert (second.structured_content or {})["status"] == "refused"
    assert "remember_per_hour" in (second.structured_content or {})["reason"]


async def test_feedback_is_recorded_on_a_memory_of_the_repository(stored: dict[str, Any]) -> None:
    deploy = f"{stored['scope']}/deploy.md"
    async with base.server(stored) as session:
        wrong = await session.call_tool(
            "memory_feedback", {"id": deploy, "verdict": "wrong", "note": "it is make ship now"}
        )
        missing = await session.call_tool("memory_feedback", {"id": "global/nope.md", "verdict": "stale"})
        bad = await session.call_tool("memory_feedback", {"id": deploy, "verdict": "meh"})
    assert (wrong.structured_content or {}) == {"status": "recorded", "reason": None}
    assert (missing.structured_content or {})["status"] == "refused"
    assert bad.is_error
    assert rows(stored["db"], "SELECT scope, file, verdict, note, resolved_run FROM memory_feedback") == [
        (stored["scope"], "deploy.md", "wrong", "it is make ship now", None)
    ]


async def test_without_a_store_nothing_is_kept_and_no_store_is_made(world: dict[str, Any]) -> None:
    async with base.server(world) as session:
        got = await session.call_tool("memory_remember", {"text": "keep this"})
    assert (got.structured_content or {})["status"] == "refused"
    assert "has not run" in (got.structured_content or {})["reason"]
    assert not (world["config"].parent / "state.db").exists()


def test_the_tools_module_loads_no_store_code_at_the_servers_start() -> None:
    """The server starts within its budget: the store, git and the redaction rules load at a call."""
    import subprocess
    import sys

    probe = (
        "import sys, daemon.mcp.tools_notes\n"
        "print([m for m in ('sqlalchemy', 'pipeline.store', 'pipeline.projects', 'pipeline.redaction')"
        " if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


async def test_a_session_past_its_hourly_verdicts_is_refused(stored: dict[str, Any]) -> None:
    deploy = f"{stored['scope']}/deploy.md"
    async with base.server(stored) as session:
        given = [
            await session.call_tool("memory_feedback", {"id": deploy, "verdict": "helped"})
            for _ in range(FEEDBACK_PER_HOUR + 1)
        ]
    statuses = [(g.structured_content or {})["status"] for g in given]
    assert statuses == ["recorded"] * FEEDBACK_PER_HOUR + ["refused"]
    assert f"{FEEDBACK_PER_HOUR} verdicts in the last hour" in (given[-1].structured_content or {})["reason"]
    assert rows(stored["db"], "SELECT count(*) FROM memory_feedback") == [(FEEDBACK_PER_HOUR,)]


async def test_feedback_on_another_projects_memory_is_refused(stored: dict[str, Any]) -> None:
    """Refused alike whether the other project's topic exists or not (nothing said about it)."""
    other = stored["memory"] / "projects" / "shop-0a1b2c3d"
    other.mkdir(parents=True)
    (other / "payments.md").write_text(base.topic("Stripe webhooks", "Signatures", "Check the signature."))
    async with base.server(stored) as session:
        there = await session.call_tool(
            "memory_feedback", {"id": "projects/shop-0a1b2c3d/payments.md", "verdict": "wrong"}
        )
        absent = await session.call_tool(
            "memory_feedback", {"id": "projects/shop-0a1b2c3d/nope.md", "verdict": "wrong"}
        )
    for answer in (there, absent):
        out = answer.structured_content or {}
        assert out["status"] == "refused"
        assert "another project" in out["reason"]
    assert (there.structured_content or {})["reason"].replace("payments", "nope") == (
        absent.structured_content or {}
    )["reason"]
    assert rows(stored["db"], "SELECT count(*) FROM memory_feedback") == [(0,)]


async def test_four_servers_at_once_share_the_scopes_hourly_notes(
    world: dict[str, Any], migrated_sqlite: Path
) -> None:
    """Issue 32 (F7): 4 agent sessions (4 `memd mcp` processes) x 3 notes at once, 5 an hour: 5 kept."""
    import asyncio

    config = write_config(world["config"].parent, "[notes]\nremember_per_hour = 5\n")
    shutil.copyfile(migrated_sqlite, config.parent / "state.db")

    async def agent(n: int) -> list[str]:
        async with base.process({**world, "config": config}) as session:
            got = []
            for i in range(3):
                answer = await session.call_tool("memory_remember", {"text": f"server {n} note {i}"})
                got.append((answer.structured_content or {})["status"])
            return got

    statuses = [s for answer in await asyncio.gather(*(agent(n) for n in range(4))) for s in answer]
    assert statuses.count("pending") == 5, statuses
    assert rows(config.parent / "state.db", "SELECT count(*) FROM memory_notes") == [(5,)]
