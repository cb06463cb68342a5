"""The session-start block names memd's MCP tools only to agents that have memd's server
(``memd mcp install``, in the user's file or in the project's), and says when to use them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.agents.claude_code.folder import memory_folder
from pipeline.clock import FakeClock
from pipeline.publish.mcp_clients import clients
from pipeline.publish.mcp_install import McpInstalls, install, uninstall
from pipeline.publish.render import TOOLS_NOTE
from pipeline.publish.run import publish_all
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, write_scope

COMMAND = ["/opt/memd/bin/memd", "mcp"]


def test_the_note_says_which_tools_and_when() -> None:
    assert "memory_search" in TOOLS_NOTE
    assert "memory_get" in TOOLS_NOTE
    assert "before you say you do not know something about this project or this user" in TOOLS_NOTE


def test_without_an_environment_no_agent_has_the_server(tmp_path: Path) -> None:
    assert McpInstalls().note("claude_code") is None
    install(clients()["codex"], {"HOME": str(tmp_path)}, COMMAND)
    installs = McpInstalls({"HOME": str(tmp_path)})
    assert installs.note("claude_code") is None
    assert installs.note("claude_code", "codex") == TOOLS_NOTE


@sqlite_only
async def test_a_block_names_the_tools_once_the_agent_that_loads_it_has_memds_server(
    env: Env, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(env.home))
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Run the tests with make check.")
    write_scope(env.memory_dir, "global", summary="The user likes short answers.")
    settings = env.settings(gemini=False, claude_code_global=True, agents_md=True)
    index = memory_folder(env.claude_home, str(project)) / "MEMORY.md"
    global_file = env.claude_home / "CLAUDE.md"
    agents_md = project / "AGENTS.md"

    await publish_all(store, settings, clock)
    for path in (index, global_file, agents_md):
        assert "make check" in path.read_text() or "short answers" in path.read_text()
        assert TOOLS_NOTE not in path.read_text(), path

    install(clients()["claude-code"], {"HOME": str(env.home)}, COMMAND)
    await publish_all(store, settings, clock)
    assert TOOLS_NOTE in index.read_text()
    assert TOOLS_NOTE in global_file.read_text()
    assert TOOLS_NOTE not in agents_md.read_text()  # Claude Code does not load AGENTS.md

    # Codex, for this project only: its AGENTS.md now names the tools too.
    install(clients()["codex"], {"HOME": str(env.home)}, COMMAND, project=project)
    await publish_all(store, settings, clock)
    assert TOOLS_NOTE in agents_md.read_text()

    uninstall(clients()["claude-code"], {"HOME": str(env.home)})
    await publish_all(store, settings, clock)
    assert TOOLS_NOTE not in index.read_text()
    assert TOOLS_NOTE not in global_file.read_text()
