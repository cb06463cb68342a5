"""Each real agent still opens `memd mcp` with the lines ``benchmarks/data/mcp_handshakes.json``
records (what ``benchmarks/mcp_bench.py`` replays and ``tests/daemon/mcp/test_stdio.py`` sends):
the agent, installed by `memd mcp install` in a private HOME with its default settings, starts
memd's server through ``tests/agents_cli/wire_log.py``, which logs every line; its first lines up
to its ``tools/list`` must be the recorded ones, byte for byte.

After an agent's update changes them, record them again. Where the agent waited is read from when
the answers arrived (an answer that came before the agent's next line counts as waited for), so a
fast server records more waits than the agent makes: the file's were recorded against a server that
answered only after the SDK loaded, where the agent's real waits show.

    MEMD_RECORD_OPENINGS=1 .venv/bin/python -m pytest -n 0 tests/agents_cli/test_mcp_openings_live.py

Skipped, saying why, when the pinned CLI (tests/agents_cli/install.sh) is not there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import daemon.cli.mcp_install as mcp_install
from tests.agents_cli import test_mcp_live
from tests.agents_cli.live import require_cli, run_cli
from tests.agents_cli.test_mcp_live import CLAUDE_WAITS_FOR_MCP, CODEX_WAITS_FOR_MCP, PROMPT, World, install
from tests.agents_cli.wire_log import opening

world = test_mcp_live.world
"""The private HOME, project and memory of the MCP live tests."""

pytestmark = [pytest.mark.timeout(240)]
HANDSHAKES = Path(__file__).parents[2] / "benchmarks" / "data" / "mcp_handshakes.json"
WIRE_LOG = Path(__file__).with_name("wire_log.py")
DONE = {"steps": [], "final": "Done."}


def _claude(world: World, tmp_path: Path) -> None:
    claude = require_cli("anthropic-ai-claude-code-2.1.332", "claude")
    (world.home / ".claude").mkdir()
    install(world, "claude-code")
    env = {
        "HOME": str(world.home),
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:{port}",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        **CLAUDE_WAITS_FOR_MCP,
    }
    run_cli(
        tmp_path, api="anthropic", script=DONE, argv=[str(claude), "-p", PROMPT], cwd=world.project, env=env
    )


def _codex(world: World, tmp_path: Path) -> None:
    codex = require_cli("openai-codex-0.171.0", "codex")
    (world.home / ".codex").mkdir()
    (world.home / ".codex" / "config.toml").write_text('model = "gpt-5.1-codex"\n')
    install(world, "codex")
    provider = 'model_providers.stub={name="stub", base_url="http://127.0.0.1:{port}/v1", wire_api="responses", env_key="OPENAI_API_KEY"}'
    argv = [
        str(codex),
        "exec",
        "--skip-git-repo-check",
        *CODEX_WAITS_FOR_MCP,
        "-c",
        'model_provider="stub"',
        "-c",
        provider,
        PROMPT,
    ]
    env = {"HOME": str(world.home), "OPENAI_API_KEY": "sk-fake"}
    run_cli(tmp_path, api="openai", script=DONE, argv=argv, cwd=world.project, env=env)


def _qwen(world: World, tmp_path: Path) -> None:
    qwen = require_cli("qwen-code-qwen-code-0.24.4", "qwen")
    (world.home / ".qwen").mkdir()
    (world.home / ".qwen" / "settings.json").write_text(
        '{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, '
        '"general": {"disableAutoUpdate": true, "disableUpdateNag": true}}\n'
    )
    install(world, "qwen-code")
    env = {
        "HOME": str(world.home),
        "OPENAI_API_KEY": "sk-fake",
        "OPENAI_BASE_URL": "http://127.0.0.1:{port}/v1",
        "OPENAI_MODEL": "qwen3-coder-plus",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
    run_cli(tmp_path, api="openai", script=DONE, argv=[str(qwen), "-p", PROMPT], cwd=world.project, env=env)


AGENTS = {"claude-code 2.1.332": _claude, "codex 0.171.0": _codex, "qwen-code 0.24.4": _qwen}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_each_agent_opens_memd_mcp_with_the_recorded_lines(
    agent: str, world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "wire.jsonl"
    program = mcp_install.memd_program()
    monkeypatch.setattr(
        mcp_install, "memd_program", lambda: [sys.executable, str(WIRE_LOG), str(log), *program]
    )
    AGENTS[agent](world, tmp_path)
    assert log.exists(), f"{agent} never started memd's server"
    seen = opening(log)
    recorded: dict[str, Any] = json.loads(HANDSHAKES.read_text(encoding="utf-8"))
    if os.environ.get("MEMD_RECORD_OPENINGS") == "1":
        recorded["handshakes"][agent] = seen
        HANDSHAKES.write_text(json.dumps(recorded, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    # Which lines an agent sends depends on how fast answers came: Claude Code falls back to the 2025
    # handshake (`initialize`) when its 2026 probe is not answered in time, and numbers its requests
    # in the order it sent them. What an update changes is what it asks and says of itself: the
    # `tools/list` request (protocol version, client info, capabilities) without its id, and no
    # method the recording does not hold but that fallback.
    sent = [step["send"] for step in seen if "send" in step]
    held = [step["send"] for step in recorded["handshakes"][agent] if "send" in step]
    assert _shape(_tools_list(sent)) == _shape(_tools_list(held)), (
        f"{agent} opens memd mcp otherwise now: record it again (see this module's docstring)"
    )
    fallback = {"initialize", "notifications/initialized"}
    assert {_method(line) for line in sent} <= {_method(line) for line in held} | fallback, sent


def _method(line: str) -> str:
    return str(json.loads(line).get("method"))


def _tools_list(lines: list[str]) -> str:
    return next(line for line in lines if _method(line) == "tools/list")


def _shape(line: str) -> str:
    message = json.loads(line)
    message.pop("id", None)
    return json.dumps(message, sort_keys=True)
