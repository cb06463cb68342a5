from __future__ import annotations

import json
from pathlib import Path

from pipeline.agents.pi.transcripts import PiAdapter
from pipeline.transcript import AssistantText, ErrorItem, ToolCall, ToolResult, UserMessage
from tests.pipeline.sources.support import PI, PI_MAIN, parse, transcript

PI_V1 = PI / "--home-dev-old--/2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl"


def test_discover() -> None:
    assert sorted(PiAdapter().discover(PI)) == sorted([PI_MAIN, PI_V1])


def test_v3_tree_counts_every_branch() -> None:
    t = transcript("pi", PI_MAIN)
    assert t.session_id == "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
    assert t.cwd == "/home/dev/shop"
    assert t.agent_version == "session format v3"
    assert t.user_message_count == 2
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "what do we know about payments?",
        "shorter answer please",
    ]
    assert t.compacted


def test_tools_extensions_errors_and_memory_reads() -> None:
    t = transcript("pi", PI_MAIN)
    assert [(c.name, c.essential_arg) for c in t.items if isinstance(c, ToolCall)] == [
        ("read", "/home/dev/.pi/memory/memd-payments.md"),
        ("web_search", "stripe retries"),
        ("mcp__linear__search", ""),
        ("todo", ""),
        ("bash", "pnpm test"),
    ]
    assert t.external_context == ("extension:todo", "mcp:linear/search", "web_search")
    results = {r.call_id: r for r in t.items if isinstance(r, ToolResult)}
    assert results["tc1"].text == "[memd memory file read: /home/dev/.pi/memory/memd-payments.md]"
    assert results["b0000003"].is_error  # a `!` command that exited 1
    assert [e.text for e in t.items if isinstance(e, ErrorItem)] == ["overloaded_error"]
    assert [r.via for r in t.memory_reads] == ["read_tool"]


def test_v1_legacy_linear_file() -> None:
    t = transcript("pi", PI_V1)
    assert t.agent_version == "session format v1"
    assert t.forked_or_resumed
    assert t.parent_session_id == "x"
    assert t.user_message_count == 2
    assert [i.text for i in t.items if isinstance(i, AssistantText)] == ["Ported."]


def test_a_file_rewritten_in_place_by_migration_is_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / PI_V1.name
    path.write_bytes(PI_V1.read_bytes())
    first = parse("pi", path, with_items=False)
    lines = PI_V1.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 3
    path.write_text("\n".join([json.dumps(header), *lines[1:], ""]) + "\n")
    second = parse("pi", path, start_offset=first.new_offset, state=first.state)
    assert second.restarted
    assert second.transcript is not None
    assert second.transcript.agent_version == "session format v3"
    assert second.transcript.user_message_count == 2


# Pi 1.6: a session as 1.6.0 writes it (a system message with the loaded instruction files, a
# codemode script calling bash and an MCP tool, an MCP tool called directly).
CWD16 = "/home/dev/work/repo/src"
SYSTEM_TEXT = (
    '<project_instructions path="/home/dev/work/repo/AGENTS.md">MEMD_BLOCK_MARKER</project_instructions>'
)


def _entry(i: int, message: dict[str, object]) -> dict[str, object]:
    return {
        "type": "message",
        "id": f"e{i}",
        "parentId": f"e{i - 1}" if i else None,
        "timestamp": f"2026-12-07T14:24:{10 + i:02d}.000Z",
        "message": message,
    }


def pi16_session(path: Path, *, nested: dict[str, object] | None = None) -> Path:
    codemode_result: dict[str, object] = {
        "role": "toolResult",
        "toolCallId": "toolu_cm",
        "toolName": "codemode",
        "content": [
            {"type": "text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
            {"type": "text", "text": "shop 1.2.3\n"},
        ],
        "details": {
            "calls": [
                {"id": "toolu_cm/1", "name": "bash", "args": '{"command":"curl -s https://example.com/x"}'},
                {"id": "toolu_cm/2", "name": "mcp__memd__memory_search", "args": '{"query":"pnpm"}'},
            ]
        },
        "nestedCalls": {
            "calls": [
                {
                    "id": "toolu_cm/1",
                    "name": "bash",
                    "status": "ok",
                    "arguments": {"command": "curl -s https://example.com/x"},
                },
                {
                    "id": "toolu_cm/2",
                    "name": "mcp__memd__memory_search",
                    "status": "ok",
                    "arguments": {"query": "pnpm"},
                },
            ],
            "complete": True,
        },
        "isError": False,
        "durationMs": 133,
    }
    if nested is not None:
        codemode_result = {**codemode_result, **nested}
    records: list[dict[str, object]] = [
        {
            "type": "session",
            "version": 3,
            "id": "019af8a0-1b5e-7000-8000-000000000001",
            "timestamp": "2026-12-07T14:24:10.000Z",
            "cwd": CWD16,
        },
        {
            "type": "model_change",
            "id": "m0",
            "parentId": None,
            "timestamp": "2026-12-07T14:24:10.000Z",
            "provider": "stub",
            "modelId": "stub-model",
        },
    ]
    messages: list[dict[str, object]] = [
        {
            "role": "system",
            "content": "",
            "sections": {"preamble": "You are Pi.", "project_context": SYSTEM_TEXT},
            "toolsAdded": [],
        },
        {"role": "user", "content": [{"type": "text", "text": "Which version is this?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll check with a script."},
                {
                    "type": "toolCall",
                    "id": "toolu_cm",
                    "name": "codemode",
                    "arguments": {"code": "return (await tools.bash({command: 'cat VERSION'})).output;"},
                },
            ],
            "stopReason": "toolUse",
            "rawStopReason": "tool_use",
            "durationMs": 5,
            "thinkingLevel": "off",
        },
        codemode_result,
        {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": "toolu_mcp",
                    "name": "mcp__memd__memory_get",
                    "arguments": {"id": "x"},
                },
            ],
            "stopReason": "toolUse",
        },
        {
            "role": "toolResult",
            "toolCallId": "toolu_mcp",
            "toolName": "mcp__memd__memory_get",
            "content": [{"type": "text", "text": "nothing"}],
            "details": {"server": "memd", "tool": "memory_get"},
            "isError": False,
        },
        {"role": "assistant", "content": [{"type": "text", "text": "It is 1.2.3."}], "stopReason": "stop"},
    ]
    records += [_entry(i + 1, m) for i, m in enumerate(messages)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_pi16_session_user_turns_words_and_the_system_message_left_out(tmp_path: Path) -> None:
    t = transcript("pi", pi16_session(tmp_path / "2026-12-07T14-24-10-000Z_019af8a0.jsonl"))
    assert t.session_id == "019af8a0-1b5e-7000-8000-000000000001"
    assert t.cwd == CWD16
    assert t.agent_version == "session format v3"
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == ["Which version is this?"]
    assert [i.text for i in t.items if isinstance(i, AssistantText)] == [
        "I'll check with a script.",
        "It is 1.2.3.",
    ]
    assert "MEMD_BLOCK_MARKER" not in str(t.items)  # the instruction files' text is not the user's


def test_pi16_codemode_inner_calls_are_tool_calls_of_their_own(tmp_path: Path) -> None:
    t = transcript("pi", pi16_session(tmp_path / "s.jsonl"))
    calls = [(c.name, c.call_id) for c in t.items if isinstance(c, ToolCall)]
    assert calls == [
        ("codemode", "toolu_cm"),
        ("bash", "toolu_cm/1"),
        ("mcp__memd__memory_search", "toolu_cm/2"),
        ("mcp__memd__memory_get", "toolu_mcp"),
    ]
    bash = next(c for c in t.items if isinstance(c, ToolCall) and c.name == "bash")
    assert bash.essential_arg == "curl -s https://example.com/x"
    # codemode is Pi's own tool; what its script called is seen by the external-context rules
    assert "extension:codemode" not in t.external_context
    assert "mcp:memd/memory_search" in t.external_context
    assert "shell:curl" in t.external_context  # a fetch from inside the script
    # the script's output stays the codemode call's result, quoted as tool output
    (result,) = [r for r in t.items if isinstance(r, ToolResult) and r.call_id == "toolu_cm"]
    assert "shop 1.2.3" in result.text


def test_pi16_codemode_details_only_and_hostile_nested_calls(tmp_path: Path) -> None:
    details_only = pi16_session(tmp_path / "a.jsonl", nested={"nestedCalls": None})
    t = transcript("pi", details_only)
    assert ("bash", "toolu_cm/2") not in [(c.name, c.call_id) for c in t.items if isinstance(c, ToolCall)]
    assert [c.name for c in t.items if isinstance(c, ToolCall)][1:3] == ["bash", "mcp__memd__memory_search"]

    junk: list[object] = [None, 7, {"name": 3}, {"name": ""}, {"name": "bash", "arguments": "not json"}]
    junk += [{"id": f"x/{i}", "name": "read", "arguments": {"path": f"/f{i}"}} for i in range(1000)]
    hostile = pi16_session(tmp_path / "b.jsonl", nested={"nestedCalls": {"calls": junk}, "details": "x"})
    t = transcript("pi", hostile)
    names = [c.name for c in t.items if isinstance(c, ToolCall)]
    assert names[:2] == ["codemode", "bash"]
    assert len(names) <= 2 + 256 + 1  # bounded: at most NESTED_CALLS_MAX inner calls
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == ["Which version is this?"]


def test_where_pi_keeps_sessions_follows_its_environment_and_settings(tmp_path: Path) -> None:
    from pipeline.agents.pi import sessions_root

    home = tmp_path / "h"
    assert sessions_root({"HOME": str(home)}) == home / ".pi" / "agent" / "sessions"
    moved = tmp_path / "agent"
    assert sessions_root({"HOME": str(home), "PI_CODING_AGENT_DIR": str(moved)}) == moved / "sessions"
    moved.mkdir()
    (moved / "settings.json").write_text(json.dumps({"sessionDir": "~/pi-sessions"}))
    assert sessions_root({"HOME": str(home), "PI_CODING_AGENT_DIR": str(moved)}) == home / "pi-sessions"
    (moved / "settings.json").write_text(json.dumps({"sessionDir": "relative/to/cwd"}))
    assert sessions_root({"HOME": str(home), "PI_CODING_AGENT_DIR": str(moved)}) == moved / "sessions"
    env = {"HOME": str(home), "PI_CODING_AGENT_DIR": str(moved), "PI_CODING_AGENT_SESSION_DIR": "/s"}
    assert sessions_root(env) == Path("/s")  # the variable wins over the setting
    # a settings.json that is not a regular file (a FIFO) or not JSON is not read, nothing hangs
    (moved / "settings.json").unlink()
    import os

    os.mkfifo(moved / "settings.json")
    assert sessions_root({"HOME": str(home), "PI_CODING_AGENT_DIR": str(moved)}) == moved / "sessions"


def _timed_session(path: Path, entries: list[tuple[str, str]]) -> Path:
    """A 1.6 session whose header is at 14:24:10.000 and each ``(time, role)`` entry follows: the
    times are all that tells a `pi -p` run from a typed one (no field says which)."""
    records: list[dict[str, object]] = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-12-07T14:24:10.000Z", "cwd": CWD16}
    ]
    for i, (at, role) in enumerate(entries):
        message: dict[str, object] = {"role": role, "content": [{"type": "text", "text": f"{role} {i}"}]}
        if role == "assistant":
            message["stopReason"] = "stop"
        records.append(
            {
                "type": "message",
                "id": f"e{i}",
                "parentId": f"e{i - 1}" if i else None,
                "timestamp": f"2026-12-07T14:{at}Z",
                "message": message,
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_pi_print_mode_sessions_are_marked_headless(tmp_path: Path) -> None:
    """`pi -p` sends its prompt(s) the moment the session starts, and each next one the moment the
    previous answer ends; a person at the TUI types for longer than that."""
    printed = _timed_session(tmp_path / "p.jsonl", [("24:10.071", "user"), ("24:10.300", "assistant")])
    assert transcript("pi", printed).non_interactive
    two = [("24:10.071", "user"), ("24:11.500", "assistant"), ("24:11.520", "user"), ("24:12.0", "assistant")]
    assert transcript("pi", _timed_session(tmp_path / "p2.jsonl", two)).non_interactive  # pi -p a b
    # Pi writes its system message as the typed prompt is sent: it does not make the prompt quick
    typed_entries = [("24:18.995", "system"), ("24:19.000", "user"), ("24:20.000", "assistant")]
    typed = _timed_session(tmp_path / "t.jsonl", typed_entries)
    assert not transcript("pi", typed).non_interactive
    # `pi "prompt"` in the TUI starts like -p; the next prompt, typed, tells it apart
    later = [("24:10.071", "user"), ("24:11.000", "assistant"), ("25:02.000", "user")]
    assert not transcript("pi", _timed_session(tmp_path / "t2.jsonl", later)).non_interactive


def test_pi_headless_mark_survives_an_incremental_parse(tmp_path: Path) -> None:
    path = _timed_session(tmp_path / "p.jsonl", [("24:10.071", "user"), ("24:10.300", "assistant")])
    first = parse("pi", path)
    assert first.transcript is not None
    assert first.transcript.non_interactive
    with path.open("a") as f:  # the user typed a follow-up a minute later (the TUI)
        entry = {"type": "message", "id": "e9", "parentId": "e1", "timestamp": "2026-12-07T14:25:30.000Z"}
        f.write(json.dumps({**entry, "message": {"role": "user", "content": "and then?"}}) + "\n")
    second = parse("pi", path, start_offset=first.new_offset, state=first.state)
    assert second.transcript is not None
    assert not second.transcript.non_interactive


def test_pi_print_mode_waits_for_declared_mcp_servers_before_its_first_prompt(tmp_path: Path) -> None:
    """Pi's first prompt waits up to 10 s for MCP servers with declared tools; the system message
    written just before it names them."""

    def session(name: str, user_at: str, tools: list[str]) -> Path:
        path = _timed_session(tmp_path / name, [(user_at, "user"), ("25:00.000", "assistant")])
        lines = path.read_text().splitlines()
        system = {
            "type": "message",
            "id": "sys",
            "parentId": None,
            "timestamp": f"2026-12-07T14:{user_at}Z",
            "message": {"role": "system", "content": "", "toolsAdded": [{"name": t} for t in tools]},
        }
        path.write_text("\n".join([lines[0], json.dumps(system), *lines[1:]]) + "\n")
        return path

    assert transcript(
        "pi", session("mcp.jsonl", "24:18.000", ["bash", "mcp__memd__memory_search"])
    ).non_interactive
    assert not transcript("pi", session("plain.jsonl", "24:18.000", ["bash", "codemode"])).non_interactive
    assert not transcript(
        "pi", session("late.jsonl", "24:40.000", ["mcp__memd__memory_search"])
    ).non_interactive
