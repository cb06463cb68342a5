"""GitHub Copilot CLI 1.0 sessions, from the real samples (tests/fixtures/transcripts/copilot_cli)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.agents.copilot_cli.transcripts import CopilotCliAdapter
from pipeline.transcript import AssistantText, ToolCall, ToolResult, UserMessage
from tests.pipeline.sources.support import FIXTURES, parse, transcript

STATE = FIXTURES / "copilot_cli" / "session-state"
MAIN = STATE / "3fd7c126-5204-45fe-bfba-e296d37a14d4" / "events.jsonl"
WITH_SUB_AGENT = STATE / "5fb34c7b-a8fb-4697-99c6-668cdfb32083" / "events.jsonl"
COMPACTED = STATE / "f5feb490-8be4-4de1-9b9b-b22e9ab00d0a" / "events.jsonl"
SECRET = "ghp_XGB65dGcQy9eThnpDBZvYxXkNdh62qDRRdNa"


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, events: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_discover_finds_each_sessions_events_and_nothing_else(tmp_path: Path) -> None:
    assert sorted(CopilotCliAdapter().discover(STATE)) == sorted([MAIN, WITH_SUB_AGENT, COMPACTED])
    root = tmp_path / "session-state"
    (root / ".session-operation-locks").mkdir(parents=True)
    (root / ".session-operation-locks" / "events.jsonl").write_text("{}\n")
    (root / "abc" / "files").mkdir(parents=True)
    (root / "abc" / "files" / "events.jsonl").write_text("{}\n")  # a session's artifact, not a transcript
    session = _write(root / "abc" / "events.jsonl", _events(MAIN))
    assert list(CopilotCliAdapter().discover(root)) == [session]


def test_a_session_names_its_project_from_session_start_and_keeps_the_users_words() -> None:
    t = transcript("copilot_cli", MAIN)
    assert t.session_id == "3fd7c126-5204-45fe-bfba-e296d37a14d4"
    assert t.cwd == "/home/dev/ag/work/repo"  # the git root of session.start's context (cwd was repo/sub)
    assert t.agent_version == "1.0.102"
    assert t.non_interactive  # `copilot -p`
    assert not t.subagent
    assert not t.compacted
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        f"Please list the files here. My GitHub token is {SECRET} (keep it private)."
    ]
    assert [(c.name, c.essential_arg) for c in t.items if isinstance(c, ToolCall)] == [("bash", "ls")]
    results = [r for r in t.items if isinstance(r, ToolResult)]
    assert len(results) == 1
    assert results[0].text.startswith("AGENTS.md\nCLAUDE.md")
    assert not results[0].is_error
    assert [i.text for i in t.items if isinstance(i, AssistantText)][-1].startswith("STUB_FINAL_TEXT")


def test_the_system_message_with_the_instruction_files_never_reaches_the_items() -> None:
    raw = MAIN.read_text()
    assert "MK_R_AGENTS" in raw  # the instruction files' text is in the transcript (system.message)...
    text = json.dumps([str(i) for i in transcript("copilot_cli", MAIN).items])
    assert "MK_" not in text  # ...and none of it is extracted
    assert "You are the GitHub Copilot CLI" not in text


def test_memds_published_block_in_the_system_message_or_a_user_message_is_kept_out(tmp_path: Path) -> None:
    events = _events(MAIN)
    for event in events:
        data = event["data"]
        assert isinstance(data, dict)
        if event["type"] == "system.message":
            data["content"] += (
                "\n<custom_instruction>\n<!-- memd:begin -->\nMEMD_PUBLISHED_FACT\n<!-- memd:end -->\n</custom_instruction>"
            )
        if event["type"] == "user.message":
            data["content"] = (
                "<system_reminder>\nCustom instructions from other/AGENTS.md: MEMD_NESTED\n</system_reminder>\n"
                "<custom_instruction>MEMD_INLINE</custom_instruction>fix the build"
            )
    t = transcript("copilot_cli", _write(tmp_path / "s1" / "events.jsonl", events))
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == ["fix the build"]
    assert "MEMD_" not in json.dumps([str(i) for i in t.items])


def test_an_inline_sub_agent_is_not_the_parents_conversation() -> None:
    t = transcript("copilot_cli", WITH_SUB_AGENT)
    assert not t.subagent  # the session itself is the user's
    assert t.user_message_count == 1  # the task handed to the sub-agent is not a user message
    texts = [i.text for i in t.items if isinstance(i, UserMessage)]
    assert texts == [
        f"Use a subagent, then read other/notes.txt, then remember how to run tests. token={SECRET}"
    ]
    assert [(c.name, c.essential_arg) for c in t.items if isinstance(c, ToolCall)] == [
        ("task", "Inspect sub dir"),
        ("view", "/home/dev/ag/work/repo/other/notes.txt"),
    ]
    # What the sub-agent reported reaches the parent as the result of its `task` call, once.
    results = {r.call_id: r.text for r in t.items if isinstance(r, ToolResult)}
    assert results["toolu_4661ccdbc7544569a976"] == "STUB_FINAL_TEXT cp2"
    assert [i.text for i in t.items if isinstance(i, AssistantText)].count("STUB_FINAL_TEXT cp2") == 1


def test_a_compacted_and_resumed_session() -> None:
    t = transcript("copilot_cli", COMPACTED)
    assert t.compacted
    assert t.forked_or_resumed  # `copilot --resume` appended to the same file
    assert t.user_message_count == 1
    assert "STUB_FINAL_TEXT cp3" in [i.text for i in t.items if isinstance(i, AssistantText)]


def test_errors_failed_tools_and_reads_of_memds_files(tmp_path: Path) -> None:
    events = _events(MAIN)[:3]
    when = "2026-12-01T05:00:00.000Z"
    topic = "/home/dev/.qwen/projects/-x/memory/memd-build.md"
    events += [
        {
            "type": "assistant.message",
            "timestamp": when,
            "data": {
                "messageId": "m1",
                "content": "",
                "toolRequests": [
                    {"toolCallId": "t1", "name": "view", "arguments": {"path": topic}},
                    {"toolCallId": "t2", "name": "bash", "arguments": {"command": "make test"}},
                ],
            },
        },
        {
            "type": "tool.execution_complete",
            "timestamp": when,
            "data": {
                "toolCallId": "t1",
                "success": True,
                "result": {"content": "---\nname: build\n---\nrun make"},
            },
        },
        {
            "type": "tool.execution_complete",
            "timestamp": when,
            "data": {
                "toolCallId": "t2",
                "success": True,
                "shellExecution": {"exitCode": 2},
                "result": {"content": "boom"},
            },
        },
        {
            "type": "tool.execution_start",
            "timestamp": when,
            "data": {
                "toolCallId": "t3",
                "toolName": "github-list_issues",
                "mcpServerName": "github",
                "mcpToolName": "list_issues",
                "arguments": {},
            },
        },
        {
            "type": "session.error",
            "timestamp": when,
            "data": {"errorType": "authentication", "message": "Authentication failed"},
        },
    ]
    t = transcript("copilot_cli", _write(tmp_path / "s2" / "events.jsonl", events))
    results = {r.call_id: r for r in t.items if isinstance(r, ToolResult)}
    assert results["t1"].text == f"[memd memory file read: {topic}]"
    assert results["t2"].is_error
    assert [(r.path, r.via) for r in t.memory_reads] == [(topic, "read_tool")]
    assert t.external_context == ("mcp:github/list_issues",)
    assert "Authentication failed" in json.dumps([str(i) for i in t.items])


def test_an_appended_session_parses_to_the_same_summary_as_a_whole_one(tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines(keepends=True)
    path = tmp_path / "s3" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(lines[:4]))
    first = parse("copilot_cli", path, with_items=False)
    path.write_bytes(b"".join(lines))
    second = parse("copilot_cli", path, start_offset=first.new_offset, state=first.state)
    assert not second.restarted
    whole = parse("copilot_cli", path).transcript
    assert second.transcript is not None
    assert whole is not None
    assert second.transcript.summary() == whole.summary()
