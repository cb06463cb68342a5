"""Each agent's MCP configuration, as memd writes it: its own file, format and entry shape, with
everything else in the file kept byte for byte."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pipeline.publish.jsonedit import loads
from pipeline.publish.mcp_clients import (
    ConfigError,
    NoProjectFile,
    client,
    clients,
    config_file,
    created_containers,
    entry_in,
    install_text,
    installed_in,
    leftover,
    server_command,
    uninstall_text,
)

COMMAND = ["/home/u/.venv/bin/memd", "mcp"]

# A file as each agent's user really keeps one, with settings memd must not touch.
EXISTING = {
    "claude-code": (
        '{\n  "numStartups": 41,\n  "projects": {\n    "/w/app": {\n      "allowedTools": []\n    }\n  },\n'
        '  "mcpServers": {\n    "github": {\n      "type": "http",\n      "url": "https://api.example/mcp"\n    }\n'
        '  },\n  "userID": "abc"\n}\n'
    ),
    "codex": (
        '# ~/.codex/config.toml\nmodel = "gpt-5.1-codex"\napproval_policy = "on-request"\n\n'
        '[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs-mcp"]\n\n[tui]\nnotifications = true\n'
    ),
    "gemini-cli": (
        '{\n  // theme first\n  "ui": { "theme": "GitHub" },\n  "mcpServers": {\n    "web": { "command": "w" },\n  },\n}\n'
    ),
    "opencode": (
        '{\n  "$schema": "https://opencode.ai/config.json",\n  // my model\n  "model": "anthropic/claude-sonnet-4",\n'
        '  "mcp": {\n    "jira": { "type": "remote", "url": "https://jira.example/mcp" }\n  }\n}\n'
    ),
    "copilot-cli": '{\n  "mcpServers": {\n    "playwright": {"type": "local", "command": "npx", "tools": ["*"]}\n  }\n}\n',
    "pi": '{\n  "mcpServers": {\n    "exa": {"command": "npx", "args": ["exa-mcp"], "exposure": "codemode"}\n  }\n}\n',
    "qwen-code": '{\n  "$version": 4,\n  "general": {\n    "disableAutoUpdate": true\n  }\n}\n',
    "openhands": '{"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "enabled": false}}}',
    "cline": '{\n  "mcpServers": {\n    "web": {\n      "transport": {"type": "stdio", "command": "w", "args": []}\n    }\n  }\n}',
}


def _read(name: str, text: str) -> object:
    agent = clients()[name]
    if agent.format == "toml":
        return tomllib.loads(text)
    if agent.format == "json":
        return json.loads(text)
    return loads(text, jsonc=True)


def _servers(name: str, text: str) -> dict[str, object]:
    data = _read(name, text)
    assert isinstance(data, dict)
    servers = data[clients()[name].container[0]]
    assert isinstance(servers, dict)
    return servers


def test_every_agent_memd_reads_or_publishes_to_is_there() -> None:
    assert set(clients()) == {
        "claude-code",
        "codex",
        "gemini-cli",
        "opencode",
        "copilot-cli",
        "qwen-code",
        "pi",
        "openhands",
        "cline",
    }
    assert client("claude_code") is clients()["claude-code"]
    with pytest.raises(KeyError):
        client("no-such-agent")


@pytest.mark.parametrize("name", sorted(EXISTING))
def test_install_adds_memd_in_the_agents_own_shape_and_uninstall_gives_the_file_back(name: str) -> None:
    before = EXISTING[name]
    after = install_text(clients()[name], before, COMMAND)
    servers = _servers(name, after)
    entry = servers["memd"]
    expected = {
        "claude-code": {"type": "stdio", "command": COMMAND[0], "args": ["mcp"], "env": {}},
        "codex": {"command": COMMAND[0], "args": ["mcp"]},
        "gemini-cli": {"command": COMMAND[0], "args": ["mcp"]},
        "qwen-code": {"command": COMMAND[0], "args": ["mcp"]},
        "pi": {"command": COMMAND[0], "args": ["mcp"], "exposure": "direct"},
        "openhands": {"command": COMMAND[0], "args": ["mcp"]},
        "copilot-cli": {"type": "local", "command": COMMAND[0], "args": ["mcp"], "tools": ["*"]},
        "opencode": {"type": "local", "command": COMMAND, "enabled": True},
        "cline": {"transport": {"type": "stdio", "command": COMMAND[0], "args": ["mcp"]}, "timeout": 60},
    }[name]
    assert entry == expected
    assert installed_in(clients()[name], after)
    assert not installed_in(clients()[name], before)
    assert entry_in(clients()[name], after) == expected
    made = created_containers(clients()[name], before)
    assert uninstall_text(clients()[name], after, drop_containers=made) == before
    # The other servers and settings are still there, as they were.
    old = _read(name, before)
    new = _read(name, after)
    assert isinstance(old, dict)
    assert isinstance(new, dict)
    assert {k: v for k, v in new.items() if k != clients()[name].container[0]} == {
        k: v for k, v in old.items() if k != clients()[name].container[0]
    }


def test_a_container_goes_with_memds_entry_only_when_its_install_made_it() -> None:
    """The text alone cannot tell an empty container the user wrote from one memd made: the install
    says how many it made (``created_containers``, kept in its record) and the uninstall takes out
    only those."""
    agent = clients()["copilot-cli"]
    had = '{\n  "mcpServers": {}\n}\n'
    assert created_containers(agent, had) == 0
    after = install_text(agent, had, COMMAND)
    assert uninstall_text(agent, after, drop_containers=0) == had
    assert created_containers(agent, "{}\n") == 1
    assert uninstall_text(agent, install_text(agent, "{}\n", COMMAND), drop_containers=1) == "{}\n"
    assert leftover(agent) == "{}\n"
    assert leftover(clients()["codex"]) == ""


def test_claude_code_names_its_tools_after_the_server() -> None:
    """Claude Code calls a server's tools ``mcp__<server>__<tool>``: the entry is named ``memd``."""
    after = install_text(clients()["claude-code"], "", COMMAND)
    assert list(json.loads(after)["mcpServers"]) == ["memd"]


def test_a_disabled_entry_is_not_installed() -> None:
    text = '{"mcp": {"memd": {"type": "local", "command": ["x"], "enabled": false}}}'
    assert not installed_in(clients()["opencode"], text)
    assert not installed_in(clients()["opencode"], "{ not json")


def test_a_file_it_cannot_parse_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="line 1"):
        install_text(clients()["claude-code"], '{"a": 1 // no comments in .claude.json\n}', COMMAND)
    with pytest.raises(ConfigError, match="not valid TOML"):
        install_text(clients()["codex"], "model = \n", COMMAND)
    with pytest.raises(ConfigError, match="does not hold a JSON object"):
        uninstall_text(clients()["gemini-cli"], "[]")


def test_each_agent_has_its_user_file_and_project_file(tmp_path: Path) -> None:
    env = {"HOME": "/h"}
    project = Path("/w/app")
    assert [str(config_file(c, env)) for c in clients().values()] == [
        "/h/.claude.json",
        "/h/.codex/config.toml",
        "/h/.gemini/settings.json",
        "/h/.pi/agent/mcp.json",
        "/h/.config/opencode/opencode.json",
        "/h/.copilot/mcp-config.json",
        "/h/.qwen/settings.json",
        "/h/.openhands/mcp.json",
        "/h/.cline/data/settings/cline_mcp_settings.json",
    ]
    assert [str(config_file(c, env, project)) for c in clients().values() if c.project_file is not None] == [
        "/w/app/.mcp.json",
        "/w/app/.codex/config.toml",
        "/w/app/.gemini/settings.json",
        "/w/app/.pi/mcp.json",
        "/w/app/opencode.json",
        "/w/app/.github/mcp.json",
        "/w/app/.qwen/settings.json",
        "/w/app/.openhands/mcp.json",
    ]
    moved = {
        "HOME": "/h",
        "CLAUDE_CONFIG_DIR": "/c",
        "CODEX_HOME": "/x",
        "COPILOT_HOME": "/p",
        "QWEN_HOME": "/q",
        "PI_CODING_AGENT_DIR": "/pi",
        "XDG_CONFIG_HOME": "/cfg",
    }
    assert str(config_file(clients()["claude-code"], moved)) == "/c/.claude.json"
    assert str(config_file(clients()["codex"], moved)) == "/x/config.toml"
    assert str(config_file(clients()["copilot-cli"], moved)) == "/p/mcp-config.json"
    assert str(config_file(clients()["qwen-code"], moved)) == "/q/settings.json"
    assert str(config_file(clients()["pi"], moved)) == "/pi/mcp.json"
    oh = {"HOME": "/h", "OPENHANDS_PERSISTENCE_DIR": "/oh"}
    assert str(config_file(clients()["openhands"], oh)) == "/oh/mcp.json"
    assert str(config_file(clients()["opencode"], moved)) == "/cfg/opencode/opencode.json"
    cline = clients()["cline"]
    assert (
        str(config_file(cline, {**moved, "CLINE_DIR": "/cl"})) == "/cl/data/settings/cline_mcp_settings.json"
    )
    assert str(config_file(cline, {**moved, "CLINE_DIR": "/cl", "CLINE_DATA_DIR": "/cd"})) == (
        "/cd/settings/cline_mcp_settings.json"
    )
    assert str(config_file(cline, {**moved, "CLINE_MCP_SETTINGS_PATH": "/m.json"})) == "/m.json"
    with pytest.raises(NoProjectFile, match="user's file only"):  # Cline reads no project's file
        config_file(cline, env, project)
    (tmp_path / "opencode").mkdir()
    (tmp_path / "opencode" / "opencode.jsonc").write_text("{}")
    jsonc = config_file(clients()["opencode"], {"HOME": "/h", "XDG_CONFIG_HOME": str(tmp_path)})
    assert jsonc == tmp_path / "opencode" / "opencode.jsonc"


def test_the_server_command_names_the_config_and_never_a_folder() -> None:
    assert server_command(["/v/bin/memd"]) == ["/v/bin/memd", "mcp"]
    assert server_command(["/v/bin/python", "-P", "-m", "daemon"], Path("/c/memd.toml")) == [
        "/v/bin/python",
        "-P",
        "-m",
        "daemon",
        "--config",
        "/c/memd.toml",
        "mcp",
    ]
