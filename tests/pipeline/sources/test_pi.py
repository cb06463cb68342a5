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
