"""`memd mcp install|uninstall AGENT [--project DIR] [--dry-run]` from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from daemon.cli import cli
from daemon.cli.mcp_install import checkout_note, memd_program


def _memd(home: Path, *args: str, **env: str) -> Result:
    full_env = {"HOME": str(home), "MEMD_CONFIG": "", "XDG_CONFIG_HOME": str(home / ".config"), **env}
    return CliRunner().invoke(cli, ["mcp", *args], env=full_env)


def test_install_names_this_memd_by_absolute_path_without_a_folder(tmp_path: Path) -> None:
    result = _memd(tmp_path, "install", "claude-code")
    assert result.exit_code == 0, result.output
    entry = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["memd"]
    program = memd_program()
    assert entry == {"type": "stdio", "command": program[0], "args": [*program[1:], "mcp"], "env": {}}
    assert Path(entry["command"]).is_absolute()
    assert Path(entry["command"]).parent == Path(sys.executable).parent
    assert "--cwd" not in entry["args"]
    assert f"added memd's MCP server to Claude Code in {tmp_path / '.claude.json'}" in result.output

    again = _memd(tmp_path, "install", "claude-code")
    assert again.exit_code == 0
    assert "already in" in again.output


def test_a_named_config_file_goes_into_the_command(tmp_path: Path) -> None:
    config = tmp_path / "memd.toml"
    config.write_text("")
    result = CliRunner().invoke(
        cli,
        ["--config", str(config), "mcp", "install", "codex"],
        env={"HOME": str(tmp_path), "MEMD_CONFIG": "", "CODEX_HOME": str(tmp_path / "codex")},
    )
    assert result.exit_code == 0, result.output
    entry = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())["mcp_servers"]["memd"]
    assert entry["args"][-3:] == ["--config", str(config.resolve()), "mcp"]


def test_dry_run_prints_a_diff_and_writes_nothing(tmp_path: Path) -> None:
    result = _memd(tmp_path, "install", "opencode", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"--- {tmp_path / '.config' / 'opencode' / 'opencode.json'}")
    assert '+  "mcp": {' in result.output
    assert not (tmp_path / ".config" / "opencode").exists()
    removal = _memd(tmp_path, "uninstall", "opencode", "--dry-run")
    assert removal.exit_code == 0
    assert "would not change" in removal.output


def test_project_install_and_uninstall(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    (project / ".mcp.json").write_text('{\n  "mcpServers": {\n    "web": {"command": "w"}\n  }\n}\n')
    result = _memd(tmp_path, "install", "claude-code", "--project", str(project))
    assert result.exit_code == 0, result.output
    assert set(json.loads((project / ".mcp.json").read_text())["mcpServers"]) == {"web", "memd"}
    assert not (tmp_path / ".claude.json").exists()
    removed = _memd(tmp_path, "uninstall", "claude-code", "--project", str(project))
    assert removed.exit_code == 0
    assert "removed memd's MCP server" in removed.output
    assert (
        project / ".mcp.json"
    ).read_text() == '{\n  "mcpServers": {\n    "web": {"command": "w"}\n  }\n}\n'
    absent = _memd(tmp_path, "uninstall", "claude-code", "--project", str(project))
    assert absent.exit_code == 0
    assert "no memd MCP server" in absent.output


def test_a_project_uninstall_leaves_the_project_as_the_install_found_it(tmp_path: Path) -> None:
    """The install records what it made in memd's state directory (``[paths] state_dir``); the
    uninstall takes it all out again: the file, its folder, and nothing the user had."""
    project = tmp_path / "app"
    project.mkdir()
    (project / "README.md").write_text("mine\n")
    state = tmp_path / "state"
    env = {"MEMD_PATHS__STATE_DIR": str(state)}
    assert _memd(tmp_path, "install", "qwen-code", "--project", str(project), **env).exit_code == 0
    assert (project / ".qwen" / "settings.json").is_file()
    assert (state / "mcp_installs.json").is_file()
    removed = _memd(tmp_path, "uninstall", "qwen-code", "--project", str(project), **env)
    assert removed.exit_code == 0, removed.output
    assert "and the file, which memd had created" in removed.output
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]


def test_a_file_it_cannot_parse_fails_with_status_1_and_stays(tmp_path: Path) -> None:
    (tmp_path / ".copilot").mkdir()
    (tmp_path / ".copilot" / "mcp-config.json").write_text("{oops")
    result = _memd(tmp_path, "install", "copilot-cli")
    assert result.exit_code == 1
    assert "mcp-config.json" in result.output
    assert "memd will not change it" in result.output
    assert (tmp_path / ".copilot" / "mcp-config.json").read_text() == "{oops"


def test_an_unknown_agent_is_a_usage_error(tmp_path: Path) -> None:
    result = _memd(tmp_path, "install", "cursor")
    assert result.exit_code == 64


def test_without_a_memd_script_beside_python_the_entry_runs_python_without_the_folder_on_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python3"))
    assert memd_program() == [str(tmp_path / "bin" / "python3"), "-P", "-m", "daemon"]
    # The agent starts the server in the session's folder: a `daemon` package there is not memd.
    impostor = tmp_path / "project" / "daemon"
    impostor.mkdir(parents=True)
    (impostor / "__init__.py").write_text("")
    (impostor / "__main__.py").write_text("print('IMPOSTOR')\n")
    monkeypatch.undo()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "daemon", "--version"],
        cwd=impostor.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith("memd "), done.stdout + done.stderr


def test_a_project_install_says_what_the_agent_asks_first(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    result = _memd(tmp_path, "install", "codex", "--project", str(project))
    assert result.exit_code == 0, result.output
    assert "only once you trust the project" in result.output
    assert (project / ".codex" / "config.toml").is_file()


def test_a_symlinked_record_file_fails_with_a_message_and_leaves_the_agents_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "memd").mkdir(parents=True)
    (tmp_path / "elsewhere.json").write_text("{}\n")
    (state / "memd" / "mcp_installs.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / ".claude.json").write_text('{"numStartups": 3}\n')
    result = _memd(tmp_path, "install", "claude-code", XDG_STATE_HOME=str(state))
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "mcp_installs.json: is a symbolic link" in result.output
    assert (tmp_path / ".claude.json").read_text() == '{"numStartups": 3}\n'
    assert (tmp_path / "elsewhere.json").read_text() == "{}\n"


def _script(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_checkout_s_venv_is_not_written_when_a_memd_tool_is_on_the_path(tmp_path: Path) -> None:
    """Deleting the clone must not break the agents' configs: an editable install's script lives in
    the checkout, so the ``memd`` a tool install put on PATH (outside the checkout) is written."""
    checkout = tmp_path / "memd-clone"
    _script(checkout / ".venv" / "bin" / "memd")
    python = checkout / ".venv" / "bin" / "python3"
    tool = _script(tmp_path / "home" / ".local" / "bin" / "memd")
    path = os.pathsep.join([str(checkout / ".venv" / "bin"), str(tmp_path / "empty"), str(tool.parent)])
    assert memd_program(python, source=checkout, path=path) == [str(tool)]
    assert checkout_note([str(tool)], source=checkout) is None
    # No tool on PATH: the checkout's script stays, and the install says what breaks it.
    alone = memd_program(python, source=checkout, path=str(checkout / ".venv" / "bin"))
    assert alone == [str(checkout / ".venv" / "bin" / "memd")]
    note = checkout_note(alone, source=checkout)
    assert note is not None
    assert "pipx install" in note
    # An installed memd (its packages in site-packages, not in a checkout) is written as it is.
    installed = _script(tmp_path / "tools" / "memd" / "bin" / "memd")
    site = tmp_path / "tools" / "memd" / "lib" / "site-packages"
    assert memd_program(installed.with_name("python3"), source=site, path=str(tool.parent)) == [
        str(installed)
    ]
