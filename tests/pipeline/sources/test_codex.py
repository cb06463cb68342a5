from __future__ import annotations

import json
from pathlib import Path

from pipeline.agents.codex.transcripts import CodexAdapter, output_text
from pipeline.transcript import AssistantText, ErrorItem, ToolCall, ToolResult, UserMessage
from tests.pipeline.sources.support import CODEX, CODEX_MAIN, parse, transcript

DAY3 = CODEX / "sessions/2026/10/03"


def test_discover_covers_sessions_archive_and_zst_without_twins() -> None:
    found = sorted(p.relative_to(CODEX).as_posix() for p in CodexAdapter().discover(CODEX / "sessions"))
    assert "archived_sessions/rollout-2026-09-01T10-00-00-019a0e00-0000-7000-8000-00000000f0c0.jsonl" in found
    assert (
        "sessions/2026/09/20/rollout-2026-09-20T10-00-00-019a0f00-0000-7000-8000-000000000c0d.jsonl.zst"
        in found
    )
    twins = [p for p in found if "2026/09/21" in p]
    assert twins == [
        "sessions/2026/09/21/rollout-2026-09-21T10-00-00-019a0f01-0000-7000-8000-000000000c0e.jsonl"
    ]
    assert len(found) == 8
    # $CODEX_HOME itself as the root finds the same files
    assert sorted(p.relative_to(CODEX).as_posix() for p in CodexAdapter().discover(CODEX)) == found


def test_interactive_rollout_summary() -> None:
    t = transcript("codex", CODEX_MAIN)
    assert t.session_id == "019a0b1c-2d3e-7f40-8a51-b2c3d4e5f601"
    assert t.cwd == "/home/dev/shop"
    assert t.agent_version == "0.104.0"
    assert t.compacted
    assert not (t.subagent)
    assert not (t.non_interactive)
    assert not (t.forked_or_resumed)
    assert t.external_context == ("mcp:linear/get_issue", "web_search")


def test_prompts_come_from_user_message_events_not_injected_context() -> None:
    t = transcript("codex", CODEX_MAIN)
    assert t.user_message_count == 2
    # The IDE context is dropped, the pasted recall block stripped, AGENTS.md/environment ignored.
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "Add retries to charge()",
        "The timing test: use fake timers.",
    ]
    everything = repr(t.items)
    for injected in (
        "AGENTS.md",
        "environment_context",
        "MEMORY_SUMMARY",
        "prefers pnpm",
        "tests use fake timers",
    ):
        assert injected not in everything


def test_shell_reads_of_memd_files_and_recall_blocks_are_recorded() -> None:
    t = transcript("codex", CODEX_MAIN)
    assert [(r.path, r.via) for r in t.memory_reads] == [
        ("/home/dev/.codex/memories/memd-release.md", "shell"),
        ("", "recall"),
    ]
    result = next(i for i in t.items if isinstance(i, ToolResult) and i.call_id == "call_A1")
    assert result.text == "[memd memory file read: /home/dev/.codex/memories/memd-release.md]"


def test_tool_calls_outputs_and_errors() -> None:
    t = transcript("codex", CODEX_MAIN)
    calls = [(c.name, c.essential_arg) for c in t.items if isinstance(c, ToolCall)]
    assert calls == [
        ("exec_command", "sed -n 1,80p /home/dev/.codex/memories/memd-release.md"),
        ("mcp__linear__get_issue", ""),
        ("web_search", "exponential backoff jitter"),
        ("apply_patch", "src/pay.ts"),
        ("exec_command", "pnpm test"),
    ]
    results = {r.call_id: r for r in t.items if isinstance(r, ToolResult)}
    assert results["call_A3"].text.startswith("Success.")
    assert not results["call_A3"].is_error
    assert results["call_A4"].is_error
    assert [e.text for e in t.items if isinstance(e, ErrorItem)] == ["stream disconnected before completion"]
    assert [a.text for a in t.items if isinstance(a, AssistantText)][
        0
    ] == "Reading the release notes in memory."


def test_exec_runs_are_non_interactive() -> None:
    t = transcript("codex", DAY3 / "rollout-2026-10-03T08-00-00-019a0c00-0000-7000-8000-00000000e0e0.jsonl")
    assert t.non_interactive
    assert t.user_message_count == 1


def test_sub_agent_source_object() -> None:
    t = transcript("codex", DAY3 / "rollout-2026-10-03T08-05-00-019a0c01-0000-7000-8000-0000000c4d00.jsonl")
    assert t.subagent
    assert t.parent_session_id == "019a0b1c-2d3e-7f40-8a51-b2c3d4e5f601"
    assert t.agent_version == "0.146.0"


def test_paginated_history_counts_item_completed_once() -> None:
    t = transcript(
        "codex",
        CODEX / "sessions/2026/10/04/rollout-2026-10-04T10-00-00-019a0d00-0000-7000-8000-0000000aa9e0.jsonl",
    )
    # the first prompt arrives both as a user_message event and as an item_completed UserMessage
    assert t.user_message_count == 2
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "rename charge to capture",
        "and the docs",
    ]
    assert [i.text for i in t.items if isinstance(i, AssistantText)] == ["Renamed in 4 files."]
    assert t.external_context == ("mcp:docs/search", "mcp:sentry/search_issues")


def test_the_first_session_meta_is_canonical_and_a_fork_is_flagged() -> None:
    t = transcript(
        "codex",
        CODEX / "archived_sessions/rollout-2026-09-01T10-00-00-019a0e00-0000-7000-8000-00000000f0c0.jsonl",
    )
    assert t.session_id == "019a0e00-0000-7000-8000-00000000f0c0"
    assert t.forked_or_resumed


def test_zst_rollouts_are_read() -> None:
    t = transcript(
        "codex",
        CODEX
        / "sessions/2026/09/20/rollout-2026-09-20T10-00-00-019a0f00-0000-7000-8000-000000000c0d.jsonl.zst",
    )
    assert t.user_message_count == 1
    assert t.session_id == "019a0f00-0000-7000-8000-000000000c0d"


def test_a_zst_is_always_read_whole() -> None:
    path = (
        CODEX
        / "sessions/2026/09/20/rollout-2026-09-20T10-00-00-019a0f00-0000-7000-8000-000000000c0d.jsonl.zst"
    )
    first = parse("codex", path)
    again = parse("codex", path, start_offset=first.new_offset, state=first.state)
    assert again.restarted
    assert again.transcript == first.transcript


def test_legacy_bare_line_format() -> None:
    t = transcript(
        "codex", CODEX / "sessions/rollout-2025-07-01T10-00-00-0197c000-0000-7000-8000-000000000b0b.jsonl"
    )
    assert t.session_id == "0197c000-0000-7000-8000-000000000b0b"
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == ["fix the lint errors"]
    assert [(c.name, c.essential_arg) for c in t.items if isinstance(c, ToolCall)] == [
        ("shell", "pnpm lint --fix")
    ]


def test_unknown_types_and_untimestamped_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-10-09T10-00-00-019a1000-0000-7000-8000-000000000001.jsonl"
    lines = [
        {"timestamp": "2026-10-09T08:00:00Z", "type": "session_meta", "payload": {"id": "x", "cwd": "/p"}},
        {"timestamp": "[trimmed]", "type": "holo_event", "payload": {"type": "beam"}, "ordinal": 4},
        {"timestamp": "2026-10-09T08:00:01Z", "type": "event_msg", "payload": {"type": "brand_new", "x": 1}},
        {"timestamp": "2026-10-09T08:00:02Z", "type": "response_item", "payload": {"type": "hologram_call"}},
        {
            "timestamp": "2026-10-09T08:00:03Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "hi"},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    t = transcript("codex", path)
    assert t.user_message_count == 1
    assert t.parse_errors.count == 0


def test_output_text_shapes() -> None:
    assert output_text('{"output":"ok","metadata":{"exit_code":2}}') == ("ok", True)
    assert output_text({"type": "input_text", "text": "a"}) == ("a", False)
    assert output_text([{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]) == (
        "a\nb",
        False,
    )
    assert output_text({"content": [{"type": "text", "text": "x"}], "success": False}) == ("x", True)
    assert output_text("Exit code: 0\nfine") == ("Exit code: 0\nfine", False)
