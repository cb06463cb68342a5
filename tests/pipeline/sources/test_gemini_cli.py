from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pipeline.agents.gemini_cli.transcripts import GeminiCliAdapter
from pipeline.transcript import AssistantText, ErrorItem, ToolCall, ToolResult, UserMessage
from tests.pipeline.sources.support import GEMINI, GEMINI_MAIN, HOSTILE, parse, transcript

LEGACY_DIR = GEMINI / "tmp" / hashlib.sha256(b"/home/dev/legacy-app").hexdigest() / "chats"
LEGACY_MAIN = LEGACY_DIR / "session-2025-12-01T10-00-9330d511.json"
LEGACY_SUB = LEGACY_DIR / "session-2025-12-01T10-01-9330d511.json"
SHOP_CHATS = GEMINI / "tmp/shop/chats"


def test_discover_finds_legacy_jsonl_and_nested_sub_agents_and_prefers_the_jsonl_twin() -> None:
    found = sorted(
        p.relative_to(GEMINI / "tmp").as_posix() for p in GeminiCliAdapter().discover(GEMINI / "tmp")
    )
    assert found == sorted(
        [
            f"{LEGACY_DIR.parent.name}/chats/session-2025-12-01T10-00-9330d511.json",
            f"{LEGACY_DIR.parent.name}/chats/session-2025-12-01T10-01-9330d511.json",
            "shop/chats/6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f/b0c1d2e3-f4a5-4b6c-9d7e-8f9a0b1c2d3e.jsonl",
            "shop/chats/session-2026-01-10T09-30-7e8f9a0b.jsonl",
            "shop/chats/session-2026-10-05T08-00-6c1d2e3f.jsonl",
        ]
    )


def test_jsonl_last_wins_rewind_and_session_context() -> None:
    t = transcript("gemini_cli", GEMINI_MAIN)
    assert t.session_id == "6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    # u0 is session context (GEMINI.md), u2 was rewound, u3 is /compress: two prompts are left
    assert t.user_message_count == 2
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "Add retries to the payment client.",
        "run the tests",
    ]
    assert "Three it is." not in [i.text for i in t.items if isinstance(i, AssistantText)]
    # g1 was written twice (executing, then success): one call, one result
    calls = [c for c in t.items if isinstance(c, ToolCall)]
    assert [c.name for c in calls] == [
        "read_file",
        "mcp_github_get_issue",
        "google_web_search",
        "run_shell_command",
    ]
    results = {r.call_id: r for r in t.items if isinstance(r, ToolResult)}
    assert results["shell-1"].is_error
    assert results["shell-1"].text == "exit 1"
    assert [e.text for e in t.items if isinstance(e, ErrorItem)] == [
        "Quota exceeded for gemini-3-flash-preview."
    ]
    assert "Use pnpm" not in repr(t.items)


def test_project_root_from_the_marker_file() -> None:
    assert transcript("gemini_cli", GEMINI_MAIN).cwd == "/home/dev/shop"


def test_project_root_from_projects_json_by_hash(tmp_path: Path) -> None:
    assert transcript("gemini_cli", LEGACY_MAIN).cwd == "/home/dev/legacy-app"


def test_project_root_from_projects_json_by_slug(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "shop" / "chats"
    chats.mkdir(parents=True)
    (tmp_path / "projects.json").write_text(json.dumps({"projects": {"/srv/shop": "shop"}}))
    target = chats / GEMINI_MAIN.name
    target.write_bytes(GEMINI_MAIN.read_bytes())
    assert transcript("gemini_cli", target).cwd == "/srv/shop"
    (tmp_path / "projects.json").write_text("{broken")
    assert transcript("gemini_cli", target).cwd is None


def test_external_context_and_memory_reads() -> None:
    t = transcript("gemini_cli", GEMINI_MAIN)
    assert t.external_context == ("mcp:github/get_issue", "web_search")
    assert [(r.path, r.via) for r in t.memory_reads] == [
        ("/home/dev/.gemini/tmp/shop/memory/memd-payments.md", "read_tool")
    ]
    result = next(r for r in t.items if isinstance(r, ToolResult) and r.call_id == "read_file-1")
    assert result.text == "[memd memory file read: /home/dev/.gemini/tmp/shop/memory/memd-payments.md]"


def test_nested_sub_agent_file() -> None:
    t = transcript(
        "gemini_cli",
        SHOP_CHATS / "6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f/b0c1d2e3-f4a5-4b6c-9d7e-8f9a0b1c2d3e.jsonl",
    )
    assert t.subagent
    assert t.parent_session_id == "6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"


def test_compress_checkpoint_and_resume() -> None:
    t = transcript("gemini_cli", SHOP_CHATS / "session-2026-01-10T09-30-7e8f9a0b.jsonl")
    assert t.compacted
    assert t.forked_or_resumed
    # the prompts before the checkpoint stay; its state snapshot is not a prompt
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "explain the cart module",
        "and checkout?",
        "now the refunds",
    ]
    assert t.user_message_count == 3


def test_legacy_json_main_and_its_sub_agent_sharing_the_session_id() -> None:
    main = transcript("gemini_cli", LEGACY_MAIN)
    sub = transcript("gemini_cli", LEGACY_SUB)
    assert main.session_id == sub.session_id == "9330d511-4926-4229-a4b7-f13824f66b81"
    assert not main.subagent
    assert sub.subagent
    assert main.user_message_count == 1
    assert main.external_context == ("mcp:jira/search", "web_fetch")
    assert main.ingest_offset == LEGACY_MAIN.stat().st_size


def test_a_half_written_legacy_file_is_retryable_not_an_error() -> None:
    for name in ("session-half-written.json", "session-empty.json"):
        result = parse("gemini_cli", HOSTILE / name)
        assert result.problem is not None, name
        assert result.retryable, name
        assert result.transcript is None


def test_a_garbage_legacy_file_is_unreadable() -> None:
    result = parse("gemini_cli", HOSTILE / "session-garbage.json")
    assert result.problem is not None
    assert not result.retryable


def test_a_legacy_file_is_reparsed_whole_when_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "tmp" / "p" / "chats" / "session-2026-01-01T00-00-aaaaaaaa.json"
    path.parent.mkdir(parents=True)
    record = {
        "sessionId": "aaaaaaaa",
        "projectHash": "h",
        "startTime": "2026-01-01T00:00:00Z",
        "messages": [],
    }
    record["messages"].append(
        {"id": "1", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": "one"}
    )
    path.write_text(json.dumps(record, indent=2))
    first = parse("gemini_cli", path)
    record["messages"].append(
        {"id": "2", "timestamp": "2026-01-01T00:00:02Z", "type": "user", "content": "two"}
    )
    path.write_text(json.dumps(record, indent=2))
    second = parse("gemini_cli", path, start_offset=first.new_offset, state=first.state)
    assert second.transcript is not None
    assert second.transcript.user_message_count == 2
    assert second.transcript.items == ()  # incremental calls return the summary only


# -- hostile files (issues 13 and 14) ---------------------------------------------------------------


def _hostile(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_legacy_file_that_is_a_fifo_or_dev_zero_is_unreadable_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / LEGACY_MAIN.name
    _hostile(path, kind)
    result = parse("gemini_cli", path)
    assert result.problem is not None
    assert not result.retryable
    assert ("FIFO" if kind == "fifo" else "character device") in result.problem.reason


def test_a_legacy_file_grown_past_the_scanned_size_waits_for_the_next_scan(tmp_path: Path) -> None:
    path = tmp_path / LEGACY_MAIN.name
    path.write_bytes(LEGACY_MAIN.read_bytes())
    seen = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"\n" * 100)  # rewritten since the scan: now larger
    result = parse("gemini_cli", path, max_bytes=seen)
    assert result.transcript is None
    assert result.problem is not None
    assert result.retryable
    assert "changed since it was scanned" in result.problem.reason


def test_a_legacy_file_nested_too_deeply_is_unreadable_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / LEGACY_MAIN.name
    path.write_bytes(b'{"messages": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    result = parse("gemini_cli", path)
    assert result.transcript is None
    assert result.problem is not None
    assert not result.retryable
    assert result.problem.reason == "JSON nested too deeply to read"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
@pytest.mark.parametrize("which", [".project_root", "projects.json"])
def test_a_hostile_project_file_never_hangs_and_is_ignored(tmp_path: Path, which: str, kind: str) -> None:
    chats = tmp_path / "tmp" / "shop" / "chats"
    chats.mkdir(parents=True)
    target = chats / GEMINI_MAIN.name
    target.write_bytes(GEMINI_MAIN.read_bytes())
    if which == "projects.json":
        _hostile(tmp_path / "projects.json", kind)
    else:
        _hostile(tmp_path / "tmp" / "shop" / ".project_root", kind)
        (tmp_path / "projects.json").write_text(json.dumps({"projects": {"/srv/shop": "shop"}}))
    t = transcript("gemini_cli", target)
    assert t.cwd == (None if which == "projects.json" else "/srv/shop")


def test_an_oversized_project_marker_is_ignored(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "shop" / "chats"
    chats.mkdir(parents=True)
    target = chats / GEMINI_MAIN.name
    target.write_bytes(GEMINI_MAIN.read_bytes())
    (tmp_path / "tmp" / "shop" / ".project_root").write_text("/srv/" + "x" * 100_000)
    (tmp_path / "projects.json").write_text(json.dumps({"projects": {"/srv/shop": "shop"}}))
    assert transcript("gemini_cli", target).cwd == "/srv/shop"
