"""The real Claude Code, Codex and Qwen Code ask memd mid-session, offline against the model stub:
`memd mcp install` writes each agent's own configuration into a private HOME, the scripted model
calls `memory_search` then `memory_get`, and the memory's text reaches the next model request
(the tool results the agent sent back are in what the stub received). memd's memory, published where
each agent loads it, tells the agent that the tools exist and when to use them.

Each agent starts `memd mcp` itself (its command, its environment, its working directory: the
project). Skipped, saying why, when the pinned CLI (tests/agents_cli/install.sh) is not there.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from daemon.config import load_settings
from pipeline.clock import FakeClock
from pipeline.projects import resolve_project, scope_for
from pipeline.publish.render import TOOLS_NOTE
from pipeline.publish.run import publish_all
from pipeline.store import Store
from tests.agents_cli.live import Run, only_publishing, require_cli, run_cli
from tests.configs import write_config
from tests.pipeline.publish.support import add_scope

pytestmark = [pytest.mark.timeout(240)]
PROMPT = "How do we deploy this app? memd live test."
CLI_TIMEOUT_S = 90
CLAUDE_WAITS_FOR_MCP = {"CLAUDE_CODE_MCP_STARTUP_WAIT_MS": "30000"}
"""Claude Code's own switch (an environment variable, or a key of its settings' ``env``): `claude -p`
waits up to this long for the MCP servers before its first turn. Without it the first turn starts
without a server still starting, and memd's server answers its opening once the MCP SDK has loaded
(about a second): a one-shot run on a loaded machine would go without memd's tools
(docs/mcp-server.md)."""
CODEX_WAITS_FOR_MCP = ["-c", "mcp_servers.memd.required=true"]
"""Codex's own switch for a server its run needs: `codex exec` waits for it (and fails without it)."""


@dataclass
class World:
    home: Path
    project: Path
    config: Path
    topic_id: str
    body_marker: str
    """A word only the topic's body holds: the answer of `memory_get`, nowhere in any prompt."""


@pytest.fixture
def world(tmp_path: Path) -> World:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "work" / "app"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    scope = scope_for(resolve_project(str(project)))
    folder = tmp_path / "memory" / scope
    folder.mkdir(parents=True)
    (tmp_path / "memory" / "global").mkdir()
    marker = f"MEMDBODY{uuid.uuid4().hex[:10]}"
    (folder / "deploy.md").write_text(
        "---\nname: Deploying to staging\ndescription: How the app is deployed to staging\n"
        "type: project\ncreated: 2026-11-01\nupdated: 2026-11-20\nsources: [claude-code:s-1]\n---\n"
        f"Tag the release, then run `make deploy-staging`; the smoke test is `make smoke`. {marker}\n"
    )
    return World(home, project, write_config(tmp_path), f"{scope}/deploy.md", marker)


def install(world: World, agent: str, env: dict[str, str] | None = None) -> str:
    """`memd --config CONFIG mcp install AGENT` for the private HOME; the file it wrote."""
    result = CliRunner().invoke(
        cli,
        ["--config", str(world.config), "mcp", "install", agent],
        env={"HOME": str(world.home), "MEMD_CONFIG": "", **(env or {})},
    )
    assert result.exit_code == 0, result.output
    return result.output


async def publish(
    world: World, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, **targets: bool
) -> None:
    """Publish the memory into the private HOME with only ``targets`` on (as the daemon does after a
    consolidation): the block says memd's tools exist where `memd mcp install` put them."""
    monkeypatch.setenv("HOME", str(world.home))
    env = {
        "HOME": str(world.home),
        **only_publishing(),
        **{f"MEMD_PUBLISH__{name.upper()}": str(on).lower() for name, on in targets.items()},
    }
    settings = load_settings(world.config, env).settings
    await add_scope(store, str(world.project), clock.now())
    report = await publish_all(store, settings, clock)
    assert [r.outcome for r in report.results] == ["published"] * len(targets), report.results


def model_requests(run: Run) -> list[str]:
    """The bodies of the model requests the stub answered, in order."""
    return [
        json.dumps(r["body"])
        for r in run.requests
        if r["method"] == "POST"
        and isinstance(r.get("body"), dict)
        and ("messages" in r["body"] or "input" in r["body"])
    ]


def tool_results(run: Run) -> list[str]:
    """What the agent sent back to the model as tool results, in every request (Anthropic's
    ``tool_result`` blocks, Chat Completions' ``tool`` messages, Responses' ``function_call_output``)."""
    found: list[str] = []
    for r in run.requests:
        body = r.get("body")
        if r["method"] != "POST" or not isinstance(body, dict):
            continue
        for item in [*body.get("messages", []), *(body.get("input") or [])]:
            if not isinstance(item, dict):
                continue
            if item.get("role") == "tool" or item.get("type") == "function_call_output":
                found.append(json.dumps(item))
            content = item.get("content")
            if isinstance(content, list):
                found += [
                    json.dumps(b) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
    return found


def assert_memory_reached_the_model(run: Run, world: World, *, agent_recalls: bool = False) -> None:
    """The tools' answers reached the model as tool results. ``agent_recalls``: the agent's own memory
    may put a topic it finds relevant into the first request (Qwen Code does), so only the tools'
    answers are checked; otherwise the topic's body is nowhere in the first request."""
    assert run.returncode == 0, run.stderr[-3000:]
    bodies = model_requests(run)
    assert bodies, run.stderr[-2000:]
    if not agent_recalls:
        assert world.body_marker not in bodies[0]  # not loaded at session start: only the tools bring it
    results = tool_results(run)
    assert any(world.topic_id in r for r in results), (
        f"memory_search's result never reached the model: {run.stderr[-3000:]} {bodies[-1][-3000:]}"
    )
    got = [r for r in results if world.body_marker in r]
    assert got, "memory_get's memory never reached the model"
    assert "make deploy-staging" in got[-1]


def search_then_get(
    world: World, *, search: str = "memory_search", get: str = "memory_get"
) -> list[dict[str, Any]]:
    return [
        {"name": search, "input": {"query": "how to deploy to staging"}},
        {"name": get, "input": {"ids": [world.topic_id]}},
    ]


async def test_claude_code_asks_memd_through_its_mcp_tools(
    world: World, tmp_path: Path, sqlite_store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = require_cli("anthropic-ai-claude-code-2.1.332", "claude")
    install(world, "claude-code")
    entry = json.loads((world.home / ".claude.json").read_text())["mcpServers"]["memd"]
    assert entry["args"][-1] == "mcp"
    (world.home / ".claude").mkdir()
    await publish(world, sqlite_store, clock, monkeypatch, claude_code=True)
    # Claude Code 2.1 defers MCP tools: the model loads their schemas with ToolSearch first.
    select = {
        "name": "ToolSearch",
        "input": {"query": "select:mcp__memd__memory_search,mcp__memd__memory_get"},
    }
    run = run_cli(
        tmp_path,
        api="anthropic",
        script={
            "steps": [
                select,
                *search_then_get(world, search="mcp__memd__memory_search", get="mcp__memd__memory_get"),
            ],
            "final": "Done.",
        },
        argv=[str(claude), "-p", PROMPT, "--allowedTools", "mcp__memd__memory_search,mcp__memd__memory_get"],
        cwd=world.project,
        env={
            "HOME": str(world.home),
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:{port}",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            **CLAUDE_WAITS_FOR_MCP,
        },
        timeout_s=CLI_TIMEOUT_S,
    )
    assert_memory_reached_the_model(run, world)
    first = model_requests(run)[0]
    assert "mcp__memd__memory_search" in first  # offered (deferred) from the first turn
    assert json.dumps(TOOLS_NOTE)[1:-1] in first  # memd's auto-memory block told it when to search

    # Claude Code rewrote ~/.claude.json meanwhile (its own keys, its own order): uninstall takes
    # memd's entry out of that file, and the `mcpServers` the install made (its record is in memd's
    # state directory), and leaves every key Claude Code wrote.
    written = json.loads((world.home / ".claude.json").read_text())
    assert len(written) > 1
    result = CliRunner().invoke(
        cli,
        ["--config", str(world.config), "mcp", "uninstall", "claude-code"],
        env={"HOME": str(world.home), "MEMD_CONFIG": ""},
    )
    assert result.exit_code == 0, result.output
    left = json.loads((world.home / ".claude.json").read_text())
    assert left == {k: v for k, v in written.items() if k != "mcpServers"}


async def test_codex_asks_memd_through_its_mcp_tools(
    world: World, tmp_path: Path, sqlite_store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = require_cli("openai-codex-0.171.0", "codex")
    codex_home = world.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text('# mine\nmodel = "gpt-5.1-codex"\n')
    install(world, "codex")
    await publish(world, sqlite_store, clock, monkeypatch, agents_md=True)
    assert (
        (codex_home / "config.toml")
        .read_text()
        .startswith('# mine\nmodel = "gpt-5.1-codex"\n\n[mcp_servers.memd]\n')
    )
    provider = 'model_providers.stub={name="stub", base_url="http://127.0.0.1:{port}/v1", wire_api="responses", env_key="OPENAI_API_KEY"}'
    run = run_cli(
        tmp_path,
        api="openai",
        script={"steps": search_then_get(world), "final": "Done."},
        argv=[
            str(codex),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            *CODEX_WAITS_FOR_MCP,
            "-c",
            'model_provider="stub"',
            "-c",
            provider,
            PROMPT,
        ],
        cwd=world.project,
        env={"HOME": str(world.home), "OPENAI_API_KEY": "sk-fake"},
        timeout_s=CLI_TIMEOUT_S,
    )
    assert_memory_reached_the_model(run, world)
    assert '"memory_search"' in model_requests(run)[0]  # memd's tools were offered from the first turn
    assert "mcp: memd/memory_get (completed)" in run.stderr + run.stdout
    assert json.dumps(TOOLS_NOTE)[1:-1] in model_requests(run)[0]  # from the project's AGENTS.md


async def test_qwen_code_asks_memd_through_its_mcp_tools(
    world: World, tmp_path: Path, sqlite_store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    qwen = require_cli("qwen-code-qwen-code-0.24.4", "qwen")
    (world.home / ".qwen").mkdir()
    (world.home / ".qwen" / "settings.json").write_text(
        '{\n  "privacy": {"usageStatisticsEnabled": false},\n  "telemetry": {"enabled": false},\n'
        '  "general": {"disableAutoUpdate": true, "disableUpdateNag": true}\n}\n'
    )
    install(world, "qwen-code")
    await publish(world, sqlite_store, clock, monkeypatch, qwen_code=True)
    # Qwen Code 0.24 defers MCP tools behind its tool_search / tool_call bridge.
    steps = [
        {"name": "tool_search", "input": {"query": "select:mcp__memd__memory_search,mcp__memd__memory_get"}},
        *(
            {"name": "tool_call", "input": {"name": f"mcp__memd__{s['name']}", "arguments": s["input"]}}
            for s in search_then_get(world)
        ),
    ]
    run = run_cli(
        tmp_path,
        api="openai",
        script={"steps": steps, "final": "Done."},
        argv=[str(qwen), "-p", PROMPT, "--yolo"],
        cwd=world.project,
        env={
            "HOME": str(world.home),
            "OPENAI_API_KEY": "sk-fake",
            "OPENAI_BASE_URL": "http://127.0.0.1:{port}/v1",
            "OPENAI_MODEL": "qwen3-coder-plus",
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        },
        timeout_s=CLI_TIMEOUT_S,
    )
    assert_memory_reached_the_model(run, world, agent_recalls=True)
    # Qwen's first request selects memories; its conversation carries memd's block from MEMORY.md.
    assert any(json.dumps(TOOLS_NOTE)[1:-1] in body for body in model_requests(run))
