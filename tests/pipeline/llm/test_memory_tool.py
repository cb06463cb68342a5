"""The confined memory tool: hostile commands are refused and nothing outside the root changes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.lib.tools import ToolError

from pipeline.clock import FakeClock
from pipeline.layout import Caps, is_input_path
from pipeline.llm.agent import MemoryAgent
from pipeline.llm.memory_tool import ConfinedMemoryTool
from pipeline.llm.pricing import Usage
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder, message, tool_use, tool_use_message

CAPS = Caps(summary_max_tokens=100, topic_max_bytes=2_000, max_topic_files=100)


def tree_digest(top: Path, *, skip: Path | None = None) -> dict[str, str]:
    """Every entry under ``top`` (outside ``skip``): files by content, symlinks by target, dirs by name."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        if skip is not None and (d == skip or skip in d.parents):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = d / name
            if skip is not None and p == skip:
                continue
            rel = str(p.relative_to(top))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not touch\n")
    scratch = tmp_path / "scratch"
    (scratch / ".git" / "hooks").mkdir(parents=True)
    (scratch / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (scratch / "global").mkdir()
    (scratch / "global" / "MEMORY.md").write_text("# global\n")
    root = scratch / "projects" / "k"
    (root / "rollout_summaries").mkdir(parents=True)
    (root / "rollout_summaries" / "a.md").write_text("session: a\n")
    (root / "raw_memories.md").write_text("# Raw memories\n")
    (root / "MEMORY.md").write_text("# Index\n")
    return tmp_path, root


def make_tool(root: Path) -> ConfinedMemoryTool:
    return ConfinedMemoryTool(root, max_bytes_for=CAPS.max_bytes_for, read_only=is_input_path)


HOSTILE: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories/../../.git/config"},
    {"command": "view", "path": "/memories/../../../outside/secret.txt"},
    {"command": "create", "path": "/memories/../escape.md", "file_text": "x"},
    {"command": "create", "path": "/etc/passwd", "file_text": "x"},
    {"command": "create", "path": "/memoriesX/foo.md", "file_text": "x"},
    {"command": "create", "path": "memories/foo.md", "file_text": "x"},
    {
        "command": "create",
        "path": "/memories/.git/hooks/pre-commit",
        "file_text": "#!/bin/sh\ntouch /tmp/pwned\n",
    },
    {
        "command": "str_replace",
        "path": "/memories/../../.git/config",
        "old_str": "bare",
        "new_str": "fsmonitor",
    },
    {"command": "create", "path": "/memories/.hidden.md", "file_text": "x"},
    {"command": "create", "path": "/memories/sub/./x.md", "file_text": "x"},
    {"command": "create", "path": "/memories/a\\..\\b.md", "file_text": "x"},
    {"command": "create", "path": "/memories/nul\x00.md", "file_text": "x"},
    {"command": "create", "path": "/memories/big.md", "file_text": "x" * 10_000_000},
    {"command": "create", "path": "/memories/notes.txt", "file_text": "x"},
    {"command": "create", "path": "/memories/script.sh", "file_text": "x"},
    {"command": "str_replace", "path": "/memories/rollout_summaries/a.md", "old_str": "a", "new_str": "b"},
    {"command": "delete", "path": "/memories/raw_memories.md"},
    {"command": "delete", "path": "/memories/rollout_summaries"},
    {"command": "create", "path": "/memories/rollout_summaries/new.md", "file_text": "x"},
    {"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/rollout_summaries/m.md"},
    {"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/../../global/MEMORY.md"},
    {"command": "delete", "path": "/memories"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "create", "path": 5, "file_text": "x"},
    {"command": "create", "path": "/memories/x.md"},
    {"command": "shell", "cmd": "rm -rf /"},
    {"command": "insert", "path": "/memories/MEMORY.md", "insert_line": True, "insert_text": "x"},
    {"command": "view", "path": "/memories", "view_range": "1-2"},
]


@pytest.mark.parametrize(
    "command", HOSTILE, ids=lambda c: f"{c.get('command')}:{str(c.get('path', c.get('old_path')))[:30]}"
)
async def test_hostile_commands_are_refused_and_nothing_changes(
    layout: tuple[Path, Path], command: dict[str, Any]
) -> None:
    top, root = layout
    before_all = tree_digest(top)
    tool = make_tool(root)
    with pytest.raises(ToolError):
        await tool.call(command)
    assert tree_digest(top) == before_all
    assert tool.refusals


async def test_planted_symlinks_are_never_followed(layout: tuple[Path, Path]) -> None:
    top, root = layout
    (root / "out").symlink_to(top / "outside")
    (root / "loop").symlink_to(root)
    (root / "evil.md").symlink_to(top / "outside" / "secret.txt")
    (root / "peer").symlink_to(top / "scratch" / "global")
    before = tree_digest(top)
    tool = make_tool(root)
    for command in (
        {"command": "view", "path": "/memories/out/secret.txt"},
        {"command": "view", "path": "/memories/evil.md"},
        {"command": "create", "path": "/memories/out/new.md", "file_text": "x"},
        {"command": "create", "path": "/memories/loop/new.md", "file_text": "x"},
        {"command": "str_replace", "path": "/memories/evil.md", "old_str": "do", "new_str": "did"},
        {"command": "create", "path": "/memories/evil.md", "file_text": "overwrite through the link"},
        {"command": "delete", "path": "/memories/peer/MEMORY.md"},
        {"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/peer/MEMORY2.md"},
    ):
        with pytest.raises(ToolError, match="symlink"):
            await tool.call(command)
    assert tree_digest(top) == before


async def test_caps_hold_for_edits_that_grow_a_file(layout: tuple[Path, Path]) -> None:
    _top, root = layout
    tool = make_tool(root)
    await tool.call({"command": "create", "path": "/memories/topic.md", "file_text": "a" * 1_900})
    with pytest.raises(ToolError, match="cap"):
        await tool.call(
            {
                "command": "str_replace",
                "path": "/memories/topic.md",
                "old_str": "a" * 10,
                "new_str": "b" * 200,
            }
        )
    with pytest.raises(ToolError, match="cap"):
        await tool.call(
            {"command": "insert", "path": "/memories/topic.md", "insert_line": 0, "insert_text": "c" * 200}
        )
    with pytest.raises(ToolError, match="cap"):
        await tool.call({"command": "create", "path": "/memories/memory_summary.md", "file_text": "d" * 400})
    with pytest.raises(ToolError, match="cap"):
        await tool.call({"command": "create", "path": "/memories/MEMORY.md", "file_text": "e" * 25_001})
    assert (root / "topic.md").read_text() == "a" * 1_900
    assert (root / "MEMORY.md").read_text() == "# Index\n"


async def test_total_bytes_written_in_a_run_are_bounded(layout: tuple[Path, Path]) -> None:
    _top, root = layout
    tool = ConfinedMemoryTool(
        root, max_bytes_for=CAPS.max_bytes_for, read_only=is_input_path, max_total_write_bytes=5_000
    )
    for i in range(2):
        await tool.call({"command": "create", "path": f"/memories/t{i}.md", "file_text": "x" * 1_999})
    with pytest.raises(ToolError, match="at most"):
        await tool.call({"command": "create", "path": "/memories/t9.md", "file_text": "x" * 1_999})
    assert not (root / "t9.md").exists()


async def test_ordinary_commands_work_inside_the_root(layout: tuple[Path, Path]) -> None:
    top, root = layout
    outside_before = tree_digest(top, skip=root)
    tool = make_tool(root)
    await tool.call({"command": "create", "path": "/memories/topics/testing.md", "file_text": "one\n"})
    await tool.call({"command": "create", "path": "/memories/topics/testing.md", "file_text": "two\n"})
    assert (root / "topics" / "testing.md").read_text() == "two\n"
    await tool.call(
        {
            "command": "str_replace",
            "path": "/memories/topics/testing.md",
            "old_str": "two",
            "new_str": "three",
        }
    )
    await tool.call(
        {"command": "insert", "path": "/memories/topics/testing.md", "insert_line": 0, "insert_text": "zero"}
    )
    assert (root / "topics" / "testing.md").read_text() == "zero\nthree\n"
    await tool.call(
        {"command": "rename", "old_path": "/memories/topics/testing.md", "new_path": "/memories/testing.md"}
    )
    listing = await tool.call({"command": "view", "path": "/memories"})
    assert isinstance(listing, str)
    assert "/memories/testing.md" in listing
    assert ".git" not in listing
    summary = await tool.call({"command": "view", "path": "/memories/rollout_summaries/a.md"})
    assert "session: a" in str(summary)
    await tool.call({"command": "delete", "path": "/memories/testing.md"})
    assert not (root / "testing.md").exists()
    assert tree_digest(top, skip=root) == outside_before
    assert not any(p.name.startswith(".memd-") for p in root.rglob("*"))
    assert tool.refusals == []


def test_a_symlinked_root_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(ValueError, match="real directory"):
        make_tool(tmp_path / "link")


# ---------------------------------------------------------------- through the real SDK tool runner


async def test_the_agent_loop_runs_hostile_turns_through_the_sdk_runner(
    layout: tuple[Path, Path], fake_api: FakeAnthropicAPI
) -> None:
    top, root = layout
    outside_before = tree_digest(top, skip=root)
    fake_api.responder = ScriptedResponder(
        [
            tool_use_message(
                tool_use(
                    "memory",
                    {"command": "create", "path": "/memories/../../.git/hooks/post-commit", "file_text": "x"},
                ),
                tool_use("memory", {"command": "create", "path": "/memories/ok.md", "file_text": "fine\n"}),
            ),
            message("done"),
            tool_use_message(tool_use("memory", {"command": "delete", "path": "/memories/ok.md"})),
            message("repaired"),
        ]
    )
    sdk = anthropic.AsyncAnthropic(api_key="k", base_url=fake_api.base_url, max_retries=0)
    usages: list[int] = []

    async def on_usage(usage: Usage, _model: str) -> None:
        usages.append(usage.total_tokens)

    agent = MemoryAgent(
        sdk=sdk,
        model="claude-sonnet-5-5",
        system="sys",
        tool=make_tool(root),
        clock=FakeClock(),
        max_turns=10,
        token_budget=10_000,
        max_backoff_s=60,
        request_timeout_s=30,
        on_usage=on_usage,
    )
    first = await agent.run("consolidate")
    assert first.stopped == "done"
    assert (root / "ok.md").read_text() == "fine\n"
    second = await agent.run("findings: remove ok.md")
    assert (second.stopped, second.turns) == ("done", 4)
    assert not (root / "ok.md").exists()
    assert tree_digest(top, skip=root) == outside_before
    bodies = [r.json for r in fake_api.message_requests()]
    assert all(
        "thread" not in b and b["tools"] == [{"type": "memory_20250818", "name": "memory"}] for b in bodies
    )
    results = bodies[1]["messages"][-1]["content"]
    assert results[0]["is_error"] is True
    assert "hidden" in results[0]["content"]
    assert not results[1].get("is_error")
    # The repair turn continues the same conversation: everything so far, then the findings.
    assert len(bodies[2]["messages"]) == 5
    assert bodies[2]["messages"][-1]["content"][-1]["text"] == "findings: remove ok.md"
    assert usages == [150, 150, 150, 150]
    assert agent.usage.total_tokens == 600
    await sdk.close()


async def test_the_agent_loop_stops_at_its_turn_limit_and_token_budget(
    layout: tuple[Path, Path], fake_api: FakeAnthropicAPI
) -> None:
    _top, root = layout
    fake_api.responder = ScriptedResponder(
        [tool_use_message(tool_use("memory", {"command": "view", "path": "/memories"})) for _ in range(8)]
    )
    sdk = anthropic.AsyncAnthropic(api_key="k", base_url=fake_api.base_url, max_retries=0)
    common: dict[str, Any] = {
        "sdk": sdk,
        "model": "m",
        "system": "s",
        "tool": make_tool(root),
        "clock": FakeClock(),
        "max_backoff_s": 60,
        "request_timeout_s": 30,
    }
    limited = await MemoryAgent(max_turns=3, token_budget=10**6, **common).run("go")
    assert (limited.stopped, limited.turns) == ("turn_limit", 3)
    spent = await MemoryAgent(max_turns=10, token_budget=250, **common).run("go")
    assert (spent.stopped, spent.turns) == ("token_budget", 2)
    assert len(fake_api.message_requests()) == 5
    await sdk.close()
