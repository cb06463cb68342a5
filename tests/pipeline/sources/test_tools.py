from __future__ import annotations

import pytest

from pipeline.sources._tools import (
    ESSENTIAL_ARG_MAX_CHARS,
    args_summary,
    essential_arg,
    external_tag,
    memory_read_request,
    shell_read_paths,
)


@pytest.mark.parametrize(
    ("source", "name", "kwargs", "tag"),
    [
        ("claude_code", "mcp__github__get_issue", {}, "mcp:github/get_issue"),
        ("claude_code", "mcp__my-server__do__thing", {}, "mcp:my-server/do__thing"),
        ("claude_code", "WebSearch", {}, "web_search"),
        ("claude_code", "WebFetch", {}, "web_fetch"),
        ("claude_code", "ReadMcpResourceTool", {}, "mcp_resources"),
        ("claude_code", "Read", {}, None),
        ("claude_code", "mcp_github_x", {}, None),
        ("codex", "mcp__supabase__execute_sql", {}, "mcp:supabase/execute_sql"),
        ("codex", "linear__get_issue", {}, "mcp:linear/get_issue"),
        ("codex", "execute_sql", {"namespace": "mcp__supabase"}, "mcp:supabase/execute_sql"),
        ("codex", "list_mcp_resources", {}, "mcp_resources"),
        ("codex", "exec_command", {}, None),
        ("gemini_cli", "mcp_github_get_issue", {}, "mcp:github/get_issue"),
        ("gemini_cli", "mcp_my_srv_tool", {"display_name": "tool (my_srv MCP Server)"}, "mcp:my_srv/tool"),
        ("gemini_cli", "search", {"display_name": "search (jira MCP Server)"}, "mcp:jira/search"),
        ("gemini_cli", "google_web_search", {}, "web_search"),
        ("gemini_cli", "web_fetch", {}, "web_fetch"),
        ("gemini_cli", "read_file", {}, None),
        ("pi", "bash", {}, None),
        ("pi", "web_search", {}, "web_search"),
        ("pi", "mcp__linear__search", {}, "mcp:linear/search"),
        ("pi", "todo", {}, "extension:todo"),
    ],
)
def test_external_context_of_every_naming_generation(
    source: str, name: str, kwargs: dict[str, str], tag: str
) -> None:
    assert external_tag(source, name, **kwargs) == tag  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"command": "pnpm test", "description": "Run"}, "pnpm test"),
        ({"cmd": "ls -la"}, "ls -la"),
        ({"command": ["bash", "-lc", "make ship"]}, "make ship"),
        ({"command": ["git", "commit", "-m", "a b"]}, "git commit -m 'a b'"),
        ({"file_path": "/p/a.ts", "old_string": "x"}, "/p/a.ts"),
        ({"paths": ["a", "b"]}, "a b"),
        ({"url": "https://example.org", "prompt": "x"}, "https://example.org"),
        ({"unknown": 1}, ""),
        ("*** Begin Patch\n*** Update File: a.ts\n*** Add File: b.ts\n*** End Patch", "a.ts b.ts"),
        (None, ""),
    ],
)
def test_essential_arg(args: object, expected: str) -> None:
    assert essential_arg("tool", args) == expected


def test_long_arguments_are_capped() -> None:
    text = essential_arg("Bash", {"command": "x" * 5000})
    assert len(text) < ESSENTIAL_ARG_MAX_CHARS + 40
    assert text.endswith("more chars]")
    assert len(args_summary({"content": "y" * 5000})) < 400


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat /m/memory/memd-a.md", ["/m/memory/memd-a.md"]),
        ("sed -n 1,80p ~/.codex/memories/memd-r.md | head", ["~/.codex/memories/memd-r.md"]),
        ("cd /x && head -n 5 /m/memory/MEMORY.md", ["/m/memory/MEMORY.md"]),
        ("LC_ALL=C grep -n retry '/m/memory/memd-a.md'", ["/m/memory/memd-a.md"]),
        ("rm /m/memory/memd-a.md", []),
        ("echo memd-a.md > /tmp/x", []),
        ("cat 'unterminated", []),
    ],
)
def test_shell_reads_of_memory_files(command: str, paths: list[str]) -> None:
    assert shell_read_paths(command) == paths


def test_memory_read_requests_per_source() -> None:
    assert memory_read_request("claude_code", "Read", {"file_path": "/m/memory/memd-a.md"}) == (
        "read_tool",
        ["/m/memory/memd-a.md"],
    )
    assert memory_read_request("claude_code", "Read", {"file_path": "/p/src/a.ts"}) is None
    assert memory_read_request(
        "codex", "shell", {"command": ["bash", "-lc", "cat /m/memories/memd-a.md"]}
    ) == (
        "shell",
        ["/m/memories/memd-a.md"],
    )
    assert memory_read_request("gemini_cli", "read_many_files", {"paths": ["/m/memory/memd-a.md", "b"]}) == (
        "read_tool",
        ["/m/memory/memd-a.md"],
    )
    assert memory_read_request("pi", "edit", {"path": "/m/memory/memd-a.md"}) is None
