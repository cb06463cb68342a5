"""A topic resting on tool output only (``evidence: tool``) reaches an agent through `memd mcp`
marked as it is published (issue 24): a field in both tools' results and the published note inside
the fenced body, so tool output is never read as the user's word. Spoken to by the SDK's own client
(the server `memd mcp` builds, in this process: ``tests.daemon.mcp.test_server.server``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon.mcp.tools_memory import BODY_MAX_BYTES
from pipeline.projects import resolve_project, scope_for
from pipeline.publish.render import FROM_TOOLS_NOTE
from tests.configs import write_config
from tests.daemon.mcp.test_server import server, topic

# Two topics that match a query equally (same scope, same day, the same body): one rests on tool
# output only, the other on the user's words. The tool one's file name sorts first, so only its
# evidence can put it second.
BODY = "Release builds are signed with the hardware key before upload to the mirror."
QUERY = "release builds signed hardware key"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    project = tmp_path / "app"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    scope = scope_for(resolve_project(str(project)))
    memory = tmp_path / "memory"
    own = memory / scope
    own.mkdir(parents=True)
    (memory / "global").mkdir()
    (own / "a-fetched.md").write_text(
        topic("Alpha", "What the fetched page said", BODY, extra="evidence: tool\n")
    )
    (own / "b-said.md").write_text(topic("Beta", "What the user said", BODY, extra="evidence: user\n"))
    (own / "c-plain.md").write_text(topic("Gamma", "Unmarked", BODY))
    return {"project": project, "scope": scope, "memory": memory, "config": write_config(tmp_path)}


async def test_both_output_schemas_name_the_evidence_field(world: dict[str, Any]) -> None:
    async with server(world) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    search, get = listed["memory_search"].output_schema, listed["memory_get"].output_schema
    assert search is not None
    assert get is not None
    assert "evidence" in search["$defs"]["SearchResult"]["properties"]
    assert "evidence" in get["$defs"]["Memory"]["properties"]


async def test_a_tool_only_topic_comes_back_marked_and_a_user_one_unmarked(world: dict[str, Any]) -> None:
    scope = world["scope"]
    tool_id, user_id, plain_id = f"{scope}/a-fetched.md", f"{scope}/b-said.md", f"{scope}/c-plain.md"
    async with server(world) as session:
        found = await session.call_tool("memory_search", {"query": QUERY})
        assert not found.is_error, found.content
        got = await session.call_tool("memory_get", {"ids": [tool_id, user_id, plain_id]})
        assert not got.is_error, got.content
    results = {r["id"]: r for r in (found.structured_content or {})["results"]}
    assert set(results) == {tool_id, user_id, plain_id}
    assert results[tool_id]["evidence"] == "tool"
    assert results[user_id].get("evidence") is None
    assert results[plain_id].get("evidence") is None

    memories = {m["id"]: m for m in (got.structured_content or {})["memories"]}
    assert memories[tool_id]["evidence"] == "tool"
    fenced = memories[tool_id]["body"]
    assert fenced.startswith(f'<memd-memory id="{tool_id}">\n{FROM_TOOLS_NOTE}\n')
    assert BODY in fenced
    assert fenced.endswith("</memd-memory>")
    for unmarked in (user_id, plain_id):
        assert memories[unmarked].get("evidence") is None
        assert FROM_TOOLS_NOTE not in memories[unmarked]["body"]
        assert "tool output" not in memories[unmarked]["body"]


async def test_a_tool_only_topic_never_outranks_an_equal_user_one(world: dict[str, Any]) -> None:
    scope = world["scope"]
    async with server(world) as session:
        found = await session.call_tool("memory_search", {"query": QUERY})
    ids = [r["id"] for r in (found.structured_content or {})["results"]]
    assert ids == [f"{scope}/b-said.md", f"{scope}/c-plain.md", f"{scope}/a-fetched.md"]


async def test_the_note_counts_within_the_body_cap_and_survives_the_cut(world: dict[str, Any]) -> None:
    scope = world["scope"]
    long_body = "\n".join(
        f"Line {i}: the mirror printed checksum {i:08x} for the signed build." for i in range(600)
    )
    assert len(long_body.encode()) > BODY_MAX_BYTES
    (world["memory"] / scope / "d-long.md").write_text(
        topic("Delta", "A long page the agent fetched", long_body, extra="evidence: tool\n")
    )
    async with server(world) as session:
        got = await session.call_tool("memory_get", {"ids": [f"{scope}/d-long.md"]})
    [memory] = (got.structured_content or {})["memories"]
    head, tail = f'<memd-memory id="{scope}/d-long.md">\n', "\n</memd-memory>"
    assert memory["body"].startswith(head)
    assert memory["body"].endswith(tail)
    inner = memory["body"][len(head) : -len(tail)]
    assert inner.startswith(FROM_TOOLS_NOTE + "\n\nLine 0:")
    assert len(inner.encode()) <= BODY_MAX_BYTES
    assert memory["truncated"] is True
    assert memory["evidence"] == "tool"
