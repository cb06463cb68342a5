"""The real OpenHands CLI (1.16), run offline against the model stub (OpenAI chat completions, native
tool calling): it loads the memory memd published (memd's skill and the project's AGENTS.md reach
the model), writes a conversation memd reads (its project, the user's words, the tool output kept as
output, the loaded instructions kept out), and asks memd mid-session through the MCP server
`memd mcp install openhands` put in ~/.openhands/mcp.json.

Each run takes 8-16 s: one run per behaviour. Skipped, saying why, when the pinned CLI
(tests/agents_cli/install.sh, a Python 3.12 venv) or the stub is not there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.publish.render import TOOLS_NOTE
from pipeline.sources.registry import adapter_for
from pipeline.store import Store
from pipeline.transcript import ToolCall, ToolResult, UserMessage
from tests.agents_cli.live import require_venv_cli, run_cli
from tests.agents_cli.test_copilot_qwen_live import PROMPT, _publish, _scanned, _settings, _workspace
from tests.agents_cli.test_mcp_live import (
    CLI_TIMEOUT_S,
    World,
    assert_memory_reached_the_model,
    install,
    model_requests,
    publish,
    search_then_get,
    world,  # noqa: F401 - the fixture
)

pytestmark = [pytest.mark.timeout(240)]
FOLDER = "openhands-1.16.0"
RISK = {"security_risk": "LOW", "summary": "memd live test"}
"""What OpenHands asks of every tool call besides the tool's own arguments."""


def _env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "LLM_MODEL": "openai/stub-model",
        "LLM_BASE_URL": "http://127.0.0.1:{port}/v1",
        "LLM_API_KEY": "sk-fake",
        "OPENHANDS_SUPPRESS_BANNER": "1",
    }


async def test_openhands_loads_what_memd_published_and_memd_reads_its_conversation(
    tmp_path: Path, sqlite_store: Store, clock: FakeClock
) -> None:
    openhands = require_venv_cli(FOLDER, "openhands")
    home, repo, cwd = _workspace(tmp_path)
    (home / ".openhands").mkdir()
    settings = _settings(home, tmp_path, openhands_global="true", agents_md="true")
    project_marker, global_marker = await _publish(sqlite_store, settings, repo, clock)
    assert global_marker in (home / ".openhands" / "skills" / "memd.md").read_text()

    run = run_cli(
        tmp_path,
        api="openai",
        script={
            "steps": [{"name": "terminal", "input": {"command": "ls ..", **RISK}}],
            "final": "Done.",
        },
        argv=[str(openhands), "--headless", "--override-with-envs", "-t", PROMPT],
        cwd=cwd,
        env=_env(home),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # OpenHands loaded both: memd's user-level skill and the git root's AGENTS.md (run from sub/).
    assert global_marker in run.bodies()
    assert project_marker in run.bodies()

    path = await _scanned(sqlite_store, settings, "openhands", repo)
    assert Path(path).parent == home / ".openhands" / "conversations"
    result = adapter_for("openhands").parse(Path(path))
    t = result.transcript
    assert t is not None, result.problem
    assert t.cwd == str(cwd)
    assert t.session_id == Path(path).name
    assert t.non_interactive  # --headless
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [PROMPT]
    assert [i.name for i in t.items if isinstance(i, ToolCall)] == ["terminal"]
    assert any("README.md" in i.text for i in t.items if isinstance(i, ToolResult))  # `ls ..`, as output
    # OpenHands kept the loaded instructions in its system prompt event and its state...
    raw = "".join(p.read_text() for p in (Path(path) / "events").glob("event-*.json"))
    assert global_marker in raw + (Path(path) / "base_state.json").read_text()
    assert global_marker not in str(t.items)  # ...which memd keeps out of what it extracts
    assert project_marker not in str(t.items)


async def test_openhands_asks_memd_through_its_mcp_tools(
    world: World,  # noqa: F811 - the fixture
    tmp_path: Path,
    sqlite_store: Store,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    openhands = require_venv_cli(FOLDER, "openhands")
    (world.home / ".openhands").mkdir()
    mine = '{"mcpServers": {"off": {"command": "false", "enabled": false}}}\n'
    (world.home / ".openhands" / "mcp.json").write_text(mine)
    install(world, "openhands")
    entry = json.loads((world.home / ".openhands" / "mcp.json").read_text())["mcpServers"]["memd"]
    assert entry["args"][-1] == "mcp"
    # The global scope goes into memd's skill, which tells OpenHands when to use memd's tools.
    (tmp_path / "memory" / "global" / "memory_summary.md").write_text("The user likes short answers.\n")
    await publish(world, sqlite_store, clock, monkeypatch, openhands_global=True)
    run = run_cli(
        tmp_path,
        api="openai",
        script={
            "steps": [{**s, "input": {**s["input"], **RISK}} for s in search_then_get(world)],
            "final": "Done.",
        },
        argv=[str(openhands), "--headless", "--override-with-envs", "-t", PROMPT],
        cwd=world.project,
        env=_env(world.home),
        timeout_s=CLI_TIMEOUT_S,
    )
    assert_memory_reached_the_model(run, world)
    assert json.dumps(TOOLS_NOTE)[1:-1] in model_requests(run)[0]  # from memd's skill

    # memd read the call as a call to its own MCP server.
    (folder,) = (world.home / ".openhands" / "conversations").iterdir()
    t = adapter_for("openhands").parse(folder).transcript
    assert t is not None
    assert "mcp:memd/memory_search" in t.external_context, t.external_context  # the server, from mcp.json

    from click.testing import CliRunner

    from daemon.cli import cli

    result = CliRunner().invoke(
        cli,
        ["--config", str(world.config), "mcp", "uninstall", "openhands"],
        env={"HOME": str(world.home), "MEMD_CONFIG": ""},
    )
    assert result.exit_code == 0, result.output
    assert (world.home / ".openhands" / "mcp.json").read_text() == mine  # byte for byte
