from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pipeline.agents.claude_code.transcripts import ClaudeCodeAdapter, prompt_text
from pipeline.transcript import AssistantText, ErrorItem, MemoryRead, ToolCall, ToolResult, UserMessage
from tests.pipeline.sources.support import CLAUDE, CLAUDE_MAIN, SHOP_SID, transcript

SHOP = CLAUDE / "-home-dev-shop"
SUBAGENTS = SHOP / SHOP_SID / "subagents"
MEM = "/home/dev/.claude/projects/-home-dev-shop/memory"


def texts(items: tuple[object, ...], kind: type) -> list[str]:
    return [i.text for i in items if isinstance(i, kind)]  # type: ignore[attr-defined]


def test_discover_finds_sessions_and_both_sub_agent_layouts_only() -> None:
    found = {p.relative_to(CLAUDE).as_posix() for p in ClaudeCodeAdapter().discover(CLAUDE)}
    assert f"-home-dev-shop/{SHOP_SID}.jsonl" in found
    assert f"-home-dev-shop/{SHOP_SID}/subagents/agent-a1b2c3d.jsonl" in found
    assert f"-home-dev-shop/{SHOP_SID}/subagents/agent-acompact-9f8e7d.jsonl" in found
    assert "-home-dev-shop/agent-5e6f7a8b.jsonl" in found
    assert not any("tool-results" in p or p.endswith(".meta.json") for p in found)
    assert len(found) == 9


def test_main_session_summary() -> None:
    t = transcript("claude_code", CLAUDE_MAIN)
    assert t.source == "claude_code"
    assert t.session_id == SHOP_SID
    assert t.cwd == "/home/dev/shop"
    assert t.agent_version == "2.1.289"
    assert t.started_at == datetime(2026, 10, 1, 9, 0, 0, 500000, tzinfo=UTC)
    assert t.last_activity == datetime(2026, 10, 1, 9, 31, 2, tzinfo=UTC)
    assert (t.subagent, t.compaction_run, t.non_interactive, t.forked_or_resumed) == (
        False,
        False,
        False,
        False,
    )
    assert t.compacted
    assert t.ingest_offset == CLAUDE_MAIN.stat().st_size
    assert t.parse_errors.count == 0
    assert t.items_complete


def test_user_prompts_exclude_wrappers_meta_notifications_and_compaction_summaries() -> None:
    t = transcript("claude_code", CLAUDE_MAIN)
    # typed prompt + prompt queued while a turn ran + prompt after compaction; not: /model without
    # arguments, its stdout, an isMeta reminder, a task notification, the compaction summary, the
    # request blob.
    assert t.user_message_count == 3
    assert texts(t.items, UserMessage) == [
        "Add a retry with backoff to the payment client.",
        "also update the changelog",
        "thanks, now run the tests",
    ]


def test_injected_memory_and_instructions_never_reach_the_items() -> None:
    t = transcript("claude_code", CLAUDE_MAIN)
    everything = json.dumps([repr(i) for i in t.items])
    for injected in (
        "Use pnpm",
        "deploys go through",
        "claudeMd",
        "system-reminder",
        "memd-recall",
        "retries use",
    ):
        assert injected not in everything
    assert not t.opted_out  # "memd:ignore" only appears inside an api-request-blob's injected CLAUDE.md


def test_memd_file_reads_become_references_and_are_recorded() -> None:
    t = transcript("claude_code", CLAUDE_MAIN)
    results = {i.call_id: i.text for i in t.items if isinstance(i, ToolResult)}
    assert results["toolu_01"] == f"[memd memory file read: {MEM}/memd-payments.md]"
    assert results["toolu_02"] == f"[memd memory file read: {MEM}/MEMORY.md]"
    assert [(r.path, r.via) for r in t.memory_reads] == [
        (f"{MEM}/memd-payments.md", "injected"),  # relevant_memories attachment
        ("", "recall"),  # SessionStart hook output
        (f"{MEM}/MEMORY.md", "injected"),  # auto-memory in the prompt's system reminder
        (f"{MEM}/memd-payments.md", "read_tool"),
        (f"{MEM}/MEMORY.md", "shell"),
    ]
    assert t.memory_reads[3] == MemoryRead(
        f"{MEM}/memd-payments.md", datetime(2026, 10, 1, 9, 0, 3, 200000, tzinfo=UTC), "read_tool"
    )


def test_one_response_split_over_records_is_one_assistant_text() -> None:
    t = transcript("claude_code", CLAUDE_MAIN)
    assert "Added the retry.\n\nTests pass." in texts(t.items, AssistantText)
    assert "" not in texts(t.items, AssistantText)  # thinking blocks with no text are dropped


def test_tool_calls_results_errors_and_external_context() -> None:
    t = transcript("claude_code", CLAUDE_MAIN)
    calls = [i for i in t.items if isinstance(i, ToolCall)]
    assert [(c.name, c.essential_arg) for c in calls] == [
        ("Read", f"{MEM}/memd-payments.md"),
        ("Bash", f"cat {MEM}/MEMORY.md"),
        ("mcp__github__get_issue", ""),
        ("WebFetch", "https://example.org/backoff"),
        ("Edit", "/home/dev/shop/src/pay.ts"),
    ]
    failed = [i for i in t.items if isinstance(i, ToolResult) and i.is_error]
    assert [f.call_id for f in failed] == ["toolu_05"]
    assert texts(t.items, ErrorItem) == ["API Error: 529 Overloaded"]
    assert t.external_context == ("mcp:github/get_issue", "web_fetch", "web_search")


def test_sub_agent_files_in_both_layouts() -> None:
    nested = transcript("claude_code", SUBAGENTS / "agent-a1b2c3d.jsonl")
    assert nested.subagent
    assert not nested.compaction_run
    assert nested.session_id == "agent-a1b2c3d"
    assert nested.parent_session_id == SHOP_SID
    assert nested.user_message_count == 1  # the task the parent gave it
    assert [type(i).__name__ for i in nested.items] == [
        "UserMessage",
        "ToolCall",
        "ToolResult",
        "AssistantText",
    ]
    sibling = transcript("claude_code", SHOP / "agent-5e6f7a8b.jsonl")
    assert sibling.subagent
    assert sibling.parent_session_id == SHOP_SID
    assert sibling.agent_version == "2.0.50"


def test_the_compaction_run_is_flagged() -> None:
    t = transcript("claude_code", SUBAGENTS / "agent-acompact-9f8e7d.jsonl")
    assert t.compaction_run
    assert t.subagent


def test_legacy_inline_sidechains_are_not_the_users_work_but_their_mcp_use_counts() -> None:
    t = transcript("claude_code", CLAUDE / "-home-dev-legacy" / "3f0d9c2e-8b7a-4d6c-9e5f-1a2b3c4d5e6f.jsonl")
    assert t.agent_version == "1.0.98"
    assert t.user_message_count == 1
    assert texts(t.items, UserMessage) == ["/orchestrator @CLAUDE.md update it to the current layout"]
    assert [c.name for c in t.items if isinstance(c, ToolCall)] == ["Task"]
    assert t.external_context == ("mcp:context7/get_docs",)
    assert not t.subagent


def test_print_mode_is_non_interactive() -> None:
    t = transcript("claude_code", SHOP / "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d.jsonl")
    assert t.non_interactive
    assert not t.memd_generated


def test_memd_generated_sessions_are_marked() -> None:
    t = transcript("claude_code", SHOP / "7c6d5e4f-3a2b-4c1d-9e8f-7a6b5c4d3e2f.jsonl")
    assert t.memd_generated


def test_opt_out_marker_in_user_text() -> None:
    assert transcript("claude_code", SHOP / "5e4f3a2b-1c0d-4e9f-8a7b-6c5d4e3f2a1b.jsonl").opted_out


def test_a_fork_keeps_the_source_sessions_id_on_copied_records() -> None:
    t = transcript("claude_code", SHOP / "2b1c0d9e-8f7a-4b6c-9d5e-4f3a2b1c0d9e.jsonl")
    assert t.forked_or_resumed
    assert t.session_id == "2b1c0d9e-8f7a-4b6c-9d5e-4f3a2b1c0d9e"


def test_unknown_record_types_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "11111111-2222-4333-8444-555555555555.jsonl"
    lines = [
        {"type": "hologram", "sessionId": "s", "uuid": "u0", "timestamp": "2026-10-01T10:00:00Z"},
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": "s",
            "timestamp": "2026-10-01T10:00:01Z",
            "message": {"role": "user", "content": "hello"},
        },
        {
            "type": "assistant",
            "uuid": "u2",
            "sessionId": "s",
            "timestamp": "2026-10-01T10:00:02Z",
            "message": {"id": "m", "role": "assistant", "content": [{"type": "future_block", "x": 1}]},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    t = transcript("claude_code", path)
    assert t.user_message_count == 1
    assert t.items == (UserMessage("hello", datetime(2026, 10, 1, 10, 0, 1, tzinfo=UTC)),)


def test_prompt_text_rules() -> None:
    assert (
        prompt_text("<command-name>/review</command-name><command-args>PR 12</command-args>")
        == "/review PR 12"
    )
    assert prompt_text("<command-name>/clear</command-name><command-args></command-args>") is None
    assert prompt_text("<bash-input>ls</bash-input>") is None
    assert prompt_text("[Request interrupted by user for tool use]") is None
    assert prompt_text("This session is being continued from a previous conversation ...") is None
    assert prompt_text("<system-reminder>x</system-reminder>") is None
    assert prompt_text("  do it  ") == "do it"
