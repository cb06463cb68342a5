"""The real OpenHands CLI (1.16), run offline against the model stub (OpenAI chat completions, native
tool calling), once: it loads the memory memd published (memd's skill and the project's AGENTS.md
reach the model, run from a folder below the repository root), asks memd mid-session through the MCP
server `memd mcp install openhands` put in ~/.openhands/mcp.json, and writes a conversation memd reads
(its project, the user's words, the tool output kept as output, the loaded instructions kept out,
the MCP calls named by their server); `memd mcp uninstall openhands` gives the user's file back.

A run takes 8-16 s, most of it OpenHands starting: one run checks reading, publishing and MCP
together. Skipped, saying why, when the pinned CLI (tests/agents_cli/install.sh, a Python 3.12
venv) or the stub is not there."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from pipeline.clock import FakeClock
from pipeline.projects import resolve_project, scope_for
from pipeline.publish.render import TOOLS_NOTE
from pipeline.sources.registry import adapter_for
from pipeline.store import Store
from pipeline.transcript import ToolCall, ToolResult, UserMessage
from tests.agents_cli.live import require_venv_cli, run_cli
from tests.agents_cli.test_copilot_qwen_live import PROMPT, _scanned, _settings
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


async def test_openhands_loads_what_memd_published_asks_memd_and_memd_reads_its_conversation(
    world: World,  # noqa: F811 - the fixture
    tmp_path: Path,
    sqlite_store: Store,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    openhands = require_venv_cli(FOLDER, "openhands")
    repo, cwd = world.project, world.project / "sub"
    cwd.mkdir()
    (repo / "README.md").write_text("app\n")
    (world.home / ".openhands").mkdir()
    mine = '{"mcpServers": {"off": {"command": "false", "enabled": false}}}\n'
    mcp_json = world.home / ".openhands" / "mcp.json"
    mcp_json.write_text(mine)
    install(world, "openhands")
    entry = json.loads(mcp_json.read_text())["mcpServers"]["memd"]
    assert entry["args"][-1] == "mcp"
    # The global scope goes into memd's skill (which says when to use memd's tools), the project's
    # into the repository's AGENTS.md.
    project_marker, global_marker = (
        f"MEMD_PROJECT_{uuid.uuid4().hex[:8]}",
        f"MEMD_GLOBAL_{uuid.uuid4().hex[:8]}",
    )
    memory = tmp_path / "memory"
    (memory / "global" / "memory_summary.md").write_text(f"The user likes short answers. {global_marker}\n")
    (memory / scope_for(resolve_project(str(repo))) / "memory_summary.md").write_text(
        f"Run make check. {project_marker}\n"
    )
    await publish(world, sqlite_store, clock, monkeypatch, openhands_global=True, agents_md=True)
    assert global_marker in (world.home / ".openhands" / "skills" / "memd.md").read_text()

    steps = [{"name": "terminal", "input": {"command": "ls .."}}, *search_then_get(world)]
    run = run_cli(
        tmp_path,
        api="openai",
        script={"steps": [{**s, "input": {**s["input"], **RISK}} for s in steps], "final": "Done."},
        argv=[str(openhands), "--headless", "--override-with-envs", "-t", PROMPT],
        cwd=cwd,
        env=_env(world.home),
        timeout_s=CLI_TIMEOUT_S,
    )
    assert_memory_reached_the_model(run, world)
    # OpenHands loaded both: memd's user-level skill and the git root's AGENTS.md (run from sub/).
    assert global_marker in run.bodies()
    assert project_marker in run.bodies()
    assert json.dumps(TOOLS_NOTE)[1:-1] in model_requests(run)[0]  # from memd's skill

    settings = _settings(world.home, tmp_path)
    path = await _scanned(sqlite_store, settings, "openhands", repo)
    assert Path(path).parent == world.home / ".openhands" / "conversations"
    result = adapter_for("openhands").parse(Path(path))
    t = result.transcript
    assert t is not None, result.problem
    assert t.cwd == str(cwd)
    assert t.session_id == Path(path).name
    assert t.non_interactive  # --headless
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [PROMPT]
    assert [i.name for i in t.items if isinstance(i, ToolCall)] == ["terminal", "memory_search", "memory_get"]
    assert any("README.md" in i.text for i in t.items if isinstance(i, ToolResult))  # `ls ..`, as output
    # memd read the calls as calls to its own MCP server (named from the mcp.json OpenHands used)
    assert "mcp:memd/memory_search" in t.external_context, t.external_context
    # OpenHands kept the loaded instructions in its system prompt event and its state...
    raw = "".join(p.read_text() for p in (Path(path) / "events").glob("event-*.json"))
    assert global_marker in raw + (Path(path) / "base_state.json").read_text()
    assert global_marker not in str(t.items)  # ...which memd keeps out of what it extracts
    assert project_marker not in str(t.items)

    result = CliRunner().invoke(
        cli,
        ["--config", str(world.config), "mcp", "uninstall", "openhands"],
        env={"HOME": str(world.home), "MEMD_CONFIG": ""},
    )
    assert result.exit_code == 0, result.output
    assert mcp_json.read_text() == mine  # byte for byte
