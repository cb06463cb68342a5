"""The real Pi 1.6 (``@earendil-works/pi-coding-agent``, on the Node 22 installed beside it), run
offline against the model stub through a provider of its own ``models.json`` (``anthropic-messages``
at the stub):

- it loaded what memd published (the project's ``AGENTS.md`` block and the global block of
  ``~/.pi/agent/AGENTS.md`` are in the request the stub received);
- through the ``~/.pi/agent/mcp.json`` that ``memd mcp install pi`` wrote, it calls memd's
  ``memory_search`` and ``memory_get``, and ``memd mcp uninstall pi`` gives the user's file back
  byte for byte;
- it writes a session memd reads (its project the repository root though Pi ran in ``src/``, the
  user's words, headless, the instruction files' text of its system message kept out, a
  ``codemode`` script's inner ``bash`` call read as a tool call of its own, the MCP calls memd's).

One run checks all three: most of a run is Pi and memd's MCP server starting.

Skipped, saying why, when the pinned CLI (tests/agents_cli/install.sh) or its Node is not there.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from pipeline.clock import FakeClock
from pipeline.projects import resolve_project, scope_for
from pipeline.sources.registry import adapter_for
from pipeline.store import Store
from pipeline.transcript import ToolCall, UserMessage
from tests.agents_cli.live import require_node_cli, run_cli
from tests.agents_cli.test_copilot_qwen_live import PROMPT, _scanned, _settings
from tests.agents_cli.test_mcp_live import (
    World,
    assert_memory_reached_the_model,
    publish,
    search_then_get,
    world,
)

pytestmark = [pytest.mark.timeout(240)]
__all__ = ["world"]  # the fixture, imported
PI = ("earendil-works-pi-coding-agent-1.6.0", "pi")
CLI_TIMEOUT_S = 90


def pi_home(home: Path, settings: dict[str, Any] | None = None) -> Path:
    """``~/.pi/agent`` with a provider at the stub (``models.json``: its port filled in by ``run_cli``)."""
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True)
    provider = {
        "baseUrl": "http://127.0.0.1:{port}",  # filled in by run_cli,
        "api": "anthropic-messages",
        "apiKey": "sk-ant-fake",
        "models": [{"id": "stub-model"}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"stub": provider}}))
    if settings is not None:
        (agent / "settings.json").write_text(json.dumps(settings))
    return agent


def pi_argv(prompt: str) -> list[str]:
    return [*require_node_cli(*PI), "-p", prompt, "--provider", "stub", "--model", "stub-model"]


async def test_pi_loads_what_memd_published_asks_memd_and_memd_reads_its_session(
    world: World, tmp_path: Path, sqlite_store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = pi_argv(PROMPT)
    repo, cwd = world.project, world.project / "src"
    cwd.mkdir()
    agent = pi_home(world.home, {"defaultTools": ["+codemode"]})  # how Pi's docs turn codemode on
    mcp = agent / "mcp.json"
    users = b'{\n  "mcpServers": {\n    "off": { "command": "false", "enabled": false }\n  }\n}\n'
    mcp.write_bytes(users)
    runner, env = CliRunner(), {"HOME": str(world.home), "MEMD_CONFIG": ""}
    result = runner.invoke(cli, ["--config", str(world.config), "mcp", "install", "pi"], env=env)
    assert result.exit_code == 0, result.output
    entry = json.loads(mcp.read_text())["mcpServers"]["memd"]
    assert entry["exposure"] == "direct"  # else Pi offers memd's tools only inside codemode scripts
    assert entry["args"][-1] == "mcp"
    project_marker, global_marker = (
        f"MEMD_PROJECT_{uuid.uuid4().hex[:8]}",
        f"MEMD_GLOBAL_{uuid.uuid4().hex[:8]}",
    )
    memory = tmp_path / "memory"
    (memory / "global" / "memory_summary.md").write_text(f"The user likes short answers. {global_marker}\n")
    scope = scope_for(resolve_project(str(repo)))
    (memory / scope / "memory_summary.md").write_text(f"Run the tests with make check. {project_marker}\n")
    await publish(world, sqlite_store, clock, monkeypatch, pi_global=True, agents_md=True)
    assert global_marker in (agent / "AGENTS.md").read_text()

    code = 'const r = await tools.bash({ command: "ls" });\nreturn r.output;'
    steps = [
        {"name": "codemode", "input": {"code": code}},
        *search_then_get(world, search="mcp__memd__memory_search", get="mcp__memd__memory_get"),
    ]
    run = run_cli(
        tmp_path,
        api="anthropic",
        script={"steps": steps, "final": "Done."},
        argv=argv,
        cwd=cwd,
        env={"HOME": str(world.home)},
        port_files=(agent / "models.json",),
        timeout_s=CLI_TIMEOUT_S,
    )
    assert_memory_reached_the_model(run, world)  # through the mcp.json memd mcp install wrote
    assert project_marker in run.bodies()  # the repository root's AGENTS.md, loaded from src/
    assert global_marker in run.bodies()  # ~/.pi/agent/AGENTS.md

    path = await _scanned(sqlite_store, _settings(world.home, tmp_path), "pi", repo)
    assert Path(path).parent.parent == agent / "sessions"
    raw = Path(path).read_text()
    assert project_marker in raw  # 1.6's system message holds the instruction files' text...
    t = adapter_for("pi").parse(Path(path)).transcript
    assert t is not None
    assert t.cwd == str(cwd)
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [PROMPT]
    assert t.non_interactive  # `pi -p`, told by its timing (nothing in the file names the mode)
    assert project_marker not in str(t.items)  # ...which memd keeps out of what it extracts
    assert global_marker not in str(t.items)
    calls = [(c.name, c.essential_arg) for c in t.items if isinstance(c, ToolCall)]
    assert calls[0][0] == "codemode"
    assert ("bash", "ls") in calls  # the script's inner call, a tool call of its own
    assert "extension:codemode" not in t.external_context
    assert "mcp:memd/memory_search" in t.external_context, t.external_context

    result = runner.invoke(cli, ["--config", str(world.config), "mcp", "uninstall", "pi"], env=env)
    assert result.exit_code == 0, result.output
    assert mcp.read_bytes() == users
