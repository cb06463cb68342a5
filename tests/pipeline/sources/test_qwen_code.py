"""Qwen Code 0.24 sessions, from the real samples (tests/fixtures/transcripts/qwen_code)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.agents.qwen_code.transcripts import QwenCodeAdapter
from pipeline.transcript import AssistantText, ToolCall, ToolResult, UserMessage
from tests.pipeline.sources.support import FIXTURES, parse, transcript

PROJECTS = FIXTURES / "qwen_code" / "projects"
MAIN = PROJECTS / "-home-dev-ag-work-repo-sub" / "chats" / "9a6fb558-84a3-408a-bc55-62d5c09b94c1.jsonl"
PARENT_ID = "541f0786-a632-49d3-9104-b2507d38fada"
WITH_SUB_AGENT = PROJECTS / "-home-dev-ag-work-repo" / "chats" / f"{PARENT_ID}.jsonl"
SUB_AGENT = (
    PROJECTS
    / "-home-dev-ag-work-repo"
    / "subagents"
    / PARENT_ID
    / "agent-general-purpose-call_3a25911d2e97493aadf4.jsonl"
)
COMPACTED = PROJECTS / "-home-dev-ag-work-repo" / "chats" / "ddfb6016-6ddd-4e85-b73c-4ad4ed28c441.jsonl"
SECRET = "ghp_XGB65dGcQy9eThnpDBZvYxXkNdh62qDRRdNa"


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_discover_finds_chats_and_sub_agents_and_nothing_else(tmp_path: Path) -> None:
    assert sorted(QwenCodeAdapter().discover(PROJECTS)) == sorted(
        [MAIN, WITH_SUB_AGENT, COMPACTED, SUB_AGENT]
    )
    project = tmp_path / "-p"
    chat = _write(project / "chats" / "s.jsonl", _records(MAIN))
    (project / "chats" / "s.runtime.json").write_text("{}")
    (project / "memory").mkdir()
    (project / "memory" / "notes.jsonl").write_text("{}\n")  # not where Qwen keeps sessions
    (project / "subagents" / "s").mkdir(parents=True)
    (project / "subagents" / "s" / "agent-x.meta.json").write_text("{}")
    (tmp_path / "usage_record.jsonl").write_text("{}\n")
    assert list(QwenCodeAdapter().discover(tmp_path)) == [chat]


def test_a_session_keeps_the_users_words_tools_and_cwd() -> None:
    t = transcript("qwen_code", MAIN)
    assert t.session_id == "9a6fb558-84a3-408a-bc55-62d5c09b94c1"
    assert t.cwd == "/home/dev/ag/work/repo/sub"  # Qwen keys chats by the cwd; memd maps it to the repository
    assert t.agent_version == "0.24.4"
    assert not t.subagent
    assert not t.compacted
    assert not t.non_interactive
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        f"Please list the files here. My GitHub token is {SECRET} (keep it private)."
    ]
    assert [(c.name, c.essential_arg) for c in t.items if isinstance(c, ToolCall)] == [
        ("run_shell_command", "ls")
    ]
    result = next(r for r in t.items if isinstance(r, ToolResult))
    assert "Output: AGENTS.md" in result.text
    assert not result.is_error


def test_a_background_sub_agent_and_its_notification() -> None:
    t = transcript("qwen_code", WITH_SUB_AGENT)
    assert not t.subagent
    assert t.user_message_count == 1  # the <task-notification> the harness sent back is not the user's
    assert not any("<task-notification>" in i.text for i in t.items if isinstance(i, UserMessage))
    sub = transcript("qwen_code", SUB_AGENT)
    assert sub.subagent
    assert sub.parent_session_id == PARENT_ID
    assert (
        sub.session_id == "agent-general-purpose-call_3a25911d2e97493aadf4"
    )  # the parent's sessionId is not its own
    assert [i.text for i in sub.items if isinstance(i, AssistantText)] == ["STUB_FINAL_TEXT qw2"]


def test_chat_compression_marks_the_session_compacted_and_its_summary_is_not_a_prompt() -> None:
    t = transcript("qwen_code", COMPACTED)
    assert t.compacted
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "Compaction test: list files and print cwd."
    ]
    assert "Resume the prior task" not in json.dumps([str(i) for i in t.items])


def test_injected_context_failed_commands_and_reads_of_memds_files(tmp_path: Path) -> None:
    base = _records(MAIN)[0]
    topic = "/home/dev/.qwen/projects/-home-dev-app/memory/memd-build.md"

    def rec(kind: str, message: dict[str, object], **extra: object) -> dict[str, object]:
        return {**base, "type": kind, "message": message, **extra}

    records = [
        rec(
            "user",
            {
                "role": "user",
                "parts": [
                    {
                        "text": "--- Context from: QWEN.md ---\nMEMD_CTX\n--- End of Context from: QWEN.md ---\nship it"
                    }
                ],
            },
            provenance="real_user",
        ),
        rec(
            "assistant",
            {
                "role": "model",
                "parts": [
                    {"text": "thinking", "thought": True},
                    {"functionCall": {"id": "c1", "name": "read_file", "args": {"file_path": topic}}},
                    {"functionCall": {"id": "c2", "name": "run_shell_command", "args": {"command": "make"}}},
                ],
            },
        ),
        rec(
            "tool_result",
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c1",
                            "name": "read_file",
                            "response": {"output": "---\nname: build\n---\nrun make"},
                        }
                    }
                ],
            },
        ),
        rec(
            "tool_result",
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c2",
                            "name": "run_shell_command",
                            "response": {"output": "Command: make\nOutput: boom\nExit Code: 2"},
                        }
                    }
                ],
            },
        ),
        rec(
            "user",
            {"role": "user", "parts": [{"text": "MEMD_GOAL"}]},
            provenance="goal_runtime",
            subtype="goal_runtime",
        ),
        rec(
            "user",
            {"role": "user", "parts": [{"text": "and the docs"}]},
            provenance="real_user",
            subtype="mid_turn_user_message",
        ),
    ]
    t = transcript("qwen_code", _write(tmp_path / "p" / "chats" / "s.jsonl", records))
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == ["ship it", "and the docs"]
    assert "MEMD_" not in json.dumps([str(i) for i in t.items])
    assert "thinking" not in [i.text for i in t.items if isinstance(i, AssistantText)]
    results = {r.call_id: r for r in t.items if isinstance(r, ToolResult)}
    assert results["c1"].text == f"[memd memory file read: {topic}]"
    assert results["c2"].is_error
    assert [(r.path, r.via) for r in t.memory_reads] == [(topic, "read_tool")]


def test_a_sub_session_spawned_by_another_is_a_sub_agent(tmp_path: Path) -> None:
    records = _records(MAIN)
    records.insert(
        1, {**records[1], "subtype": "parent_session", "systemPayload": {"parentSessionId": "p-1"}}
    )
    t = transcript("qwen_code", _write(tmp_path / "p" / "chats" / "s.jsonl", records))
    assert t.subagent
    assert t.parent_session_id == "p-1"


def test_an_appended_session_parses_to_the_same_summary_as_a_whole_one(tmp_path: Path) -> None:
    lines = WITH_SUB_AGENT.read_bytes().splitlines(keepends=True)
    path = tmp_path / "p" / "chats" / WITH_SUB_AGENT.name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines[:5]))
    first = parse("qwen_code", path, with_items=False)
    path.write_bytes(b"".join(lines))
    second = parse("qwen_code", path, start_offset=first.new_offset, state=first.state)
    assert not second.restarted
    whole = parse("qwen_code", path).transcript
    assert second.transcript is not None
    assert whole is not None
    assert second.transcript.summary() == whole.summary()
