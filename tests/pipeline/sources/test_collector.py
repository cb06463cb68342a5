from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pipeline.sources._collector import MAX_MEMORY_READS, Collector, Summary
from pipeline.transcript import MemoryRead, ToolResult
from tests.pipeline.sources.support import CLAUDE_MAIN, parse

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def test_the_state_round_trips_through_json() -> None:
    s = Summary(source="codex", session_id="x", started_at=T0, last_activity=T0, user_count=3)
    s.external.append("web_search")
    s.memory_reads.append(MemoryRead("/m/memory/memd-a.md", T0, "shell"))
    s.pending_reads["c1"] = ["shell", ["/m/memory/MEMORY.md"], T0.isoformat()]
    s.x["history_mode"] = "paginated"
    again = Summary.from_state(json.loads(json.dumps(s.to_state())), "codex")
    assert again == s


def test_a_state_that_is_not_ours_is_refused() -> None:
    good = Summary(source="pi").to_state()
    assert Summary.from_state(good, "pi") is not None
    assert Summary.from_state(None, "pi") is None
    assert Summary.from_state(good, "codex") is None
    assert Summary.from_state({**good, "v": 0}, "pi") is None
    assert Summary.from_state({**good, "x": []}, "pi") is None
    assert Summary.from_state({**good, "memory_reads": [["only-two", None]]}, "pi") is None
    assert Summary.from_state({k: v for k, v in good.items() if k != "lines"}, "pi") is None


def test_an_index_read_whose_result_arrives_in_a_later_parse_is_still_recorded(tmp_path: Path) -> None:
    content = CLAUDE_MAIN.read_bytes()
    cut = content.index(b'"tool_use_id":"toolu_02"')
    cut = content.rindex(b"\n", 0, cut) + 1  # the result's line starts the second part
    path = tmp_path / CLAUDE_MAIN.name
    path.write_bytes(content[:cut])
    first = parse("claude_code", path)
    assert first.state is not None
    assert "toolu_02" in first.state["pending_reads"]
    path.write_bytes(content)
    second = parse("claude_code", path, start_offset=first.new_offset, state=first.state)
    assert second.transcript is not None
    assert ("/home/dev/.claude/projects/-home-dev-shop/memory/MEMORY.md", "shell") in [
        (r.path, r.via) for r in second.transcript.memory_reads
    ]


def test_an_index_file_without_memds_block_is_not_a_memory_read() -> None:
    c = Collector(Summary(source="claude_code"), "claude_code", with_items=True)
    c.tool_call("Read", {"file_path": "/m/memory/MEMORY.md"}, "t1", T0)
    c.tool_result("t1", "# my own notes", False, T0)
    assert c.s.memory_reads == []
    assert c.s.pending_reads == {}
    assert c.items is not None
    assert c.items[-1] == ToolResult("t1", "# my own notes", False, T0)


def test_memory_reads_are_capped_so_the_state_stays_small() -> None:
    c = Collector(Summary(source="pi"), "pi", with_items=False)
    for n in range(MAX_MEMORY_READS + 50):
        c.tool_call("read", {"path": f"/m/memory/memd-{n}.md"}, f"c{n}", T0)
    assert len(c.s.memory_reads) == MAX_MEMORY_READS
    assert len(json.dumps(c.s.to_state())) < 100_000


def test_repeated_recall_blocks_at_one_moment_are_one_read() -> None:
    c = Collector(Summary(source="claude_code"), "claude_code", with_items=False)
    c.recall_given(T0)
    c.recall_given(T0)
    assert c.s.memory_reads == [MemoryRead("", T0, "recall")]
