"""memd hooks install claude-code: merged into settings.json, nothing lost, idempotent, dry-run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from pipeline.errors import PublishError
from pipeline.publish.hooks import install_claude_hook, recall_command, uninstall_claude_hook
from tests.pipeline.publish.support import HOSTILE, Env, make_hostile

COMMAND = recall_command("/usr/bin/python3")

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(make:*)"], "deny": []},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
    },
    "unknownFutureKey": {"nested": [1, 2, {"x": None}]},
}


def test_install_merges_and_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(EXISTING, indent=4))
    change = install_claude_hook(path, COMMAND)
    assert change.action == "added"
    data = json.loads(path.read_text())
    expected = json.loads(json.dumps(EXISTING))
    expected["hooks"]["SessionStart"].append(
        {"hooks": [{"type": "command", "command": COMMAND, "timeout": 10}]}
    )
    assert data == expected
    assert COMMAND == "/usr/bin/python3 -P -m daemon.cli.recall --format claude-hook"

    # Idempotent: the second install changes nothing, not even the bytes.
    before = path.read_bytes()
    assert install_claude_hook(path, COMMAND).action == "unchanged"
    assert path.read_bytes() == before

    # A moved memd updates the one entry instead of adding a second.
    moved = recall_command("/opt/memd/bin/python", Path("/etc/memd.toml"))
    assert install_claude_hook(path, moved).action == "updated"
    groups = json.loads(path.read_text())["hooks"]["SessionStart"]
    commands = [h["command"] for g in groups for h in g["hooks"]]
    assert commands == [
        "echo hi",
        "/opt/memd/bin/python -P -m daemon.cli.recall --config /etc/memd.toml --format claude-hook",
    ]

    # Uninstall takes out only memd's entry.
    assert uninstall_claude_hook(path).action == "removed"
    assert json.loads(path.read_text()) == EXISTING
    assert uninstall_claude_hook(path).action == "absent"


def test_uninstall_leaves_no_empty_list_or_object_behind(tmp_path: Path) -> None:
    # What only memd's hook filled goes with it: the file is as it was before the install.
    path = tmp_path / "settings.json"
    original = json.dumps({"model": "opus", "env": {}}, indent=2) + "\n"
    path.write_text(original)
    install_claude_hook(path, COMMAND)
    assert uninstall_claude_hook(path).action == "removed"
    assert path.read_text() == original
    # Another event's hooks stay; only the emptied SessionStart goes.
    other = {"hooks": {"PreToolUse": EXISTING["hooks"]["PreToolUse"]}}
    path.write_text(json.dumps(other, indent=2) + "\n")
    install_claude_hook(path, COMMAND)
    uninstall_claude_hook(path)
    assert json.loads(path.read_text()) == other
    # An empty list the user wrote is the user's: memd removes only what its removal emptied.
    mine = {"hooks": {"SessionStart": [], "Stop": []}}
    path.write_text(json.dumps(mine, indent=2) + "\n")
    assert uninstall_claude_hook(path).action == "absent"
    assert json.loads(path.read_text()) == mine


def test_install_creates_the_file_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    change = install_claude_hook(path, COMMAND, dry_run=True)
    assert change.action == "added"
    assert not path.exists()
    assert json.loads(change.text)["hooks"]["SessionStart"][0]["hooks"][0]["command"] == COMMAND
    install_claude_hook(path, COMMAND)
    assert json.loads(path.read_text()) == json.loads(change.text)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"SessionStart": {}}}'])
def test_an_unusable_settings_file_is_refused_and_left_alone(tmp_path: Path, text: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(PublishError, match=str(path)):
        install_claude_hook(path, COMMAND)
    assert path.read_text() == text


def test_cli_install_into_the_claude_home_from_settings(env: Env) -> None:
    config = env.tmp / "memd.toml"
    config.write_text(f'[sources.claude_code]\nroot = "{env.claude_home / "projects"}"\n')
    settings = env.claude_home / "settings.json"
    settings.write_text(json.dumps({"theme": "dark"}))
    runner = CliRunner()

    result = runner.invoke(cli, ["--config", str(config), "hooks", "install", "claude-code", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert json.loads(settings.read_text()) == {"theme": "dark"}
    assert "would be (added)" in result.output

    result = runner.invoke(cli, ["--config", str(config), "hooks", "install", "claude-code"])
    assert result.exit_code == 0, result.output
    data = json.loads(settings.read_text())
    assert data["theme"] == "dark"
    (hook,) = data["hooks"]["SessionStart"][0]["hooks"]
    assert hook["command"].endswith(
        f"-P -m daemon.cli.recall --config {config.resolve()} --format claude-hook"
    )
    assert hook["timeout"] == 10
    result = runner.invoke(cli, ["--config", str(config), "hooks", "install", "claude-code"])
    assert "already" in result.output

    settings.write_text("{broken")
    result = runner.invoke(cli, ["--config", str(config), "hooks", "install", "claude-code"])
    assert result.exit_code == 1
    assert "not valid JSON" in result.output
    assert settings.read_text() == "{broken"


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_settings_file_is_refused_promptly(tmp_path: Path, kind: str) -> None:
    path = make_hostile(tmp_path / "settings.json", kind)
    for run in (lambda: install_claude_hook(path, COMMAND), lambda: uninstall_claude_hook(path)):
        with pytest.raises(PublishError, match="not a regular file"):
            run()


def test_a_settings_file_linked_to_the_users_own_file_is_updated_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    install_claude_hook(link, COMMAND)
    assert link.is_symlink()
    assert COMMAND in real.read_text()


def test_a_project_with_its_own_daemon_package_cannot_stand_in_for_memds_hook(tmp_path: Path) -> None:
    """Claude Code runs the SessionStart hook in the session's folder: a cloned repository holding a
    ``daemon/cli/recall.py`` of its own must not run instead of memd's."""
    project = tmp_path / "cloned"
    (project / "daemon" / "cli").mkdir(parents=True)
    marker = tmp_path / "hijacked"
    (project / "daemon" / "__init__.py").write_text("")
    (project / "daemon" / "cli" / "__init__.py").write_text("")
    (project / "daemon" / "cli" / "recall.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    command = recall_command(sys.executable, tmp_path / "none.toml")
    env = {**os.environ, "HOME": str(tmp_path)}
    subprocess.run(
        command, shell=True, cwd=project, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert not marker.exists()
