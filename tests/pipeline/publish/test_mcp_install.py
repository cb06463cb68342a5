"""``memd mcp install`` on disk: the agent's file edited in place (every other byte kept), refused
when memd cannot parse or safely write it, nothing written in a dry run."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from pipeline.errors import PublishError
from pipeline.publish.mcp_clients import clients
from pipeline.publish.mcp_install import (
    RECORDS_FILE,
    McpInstalls,
    install,
    is_installed,
    read_records,
    uninstall,
)

COMMAND = ["/opt/memd/bin/memd", "mcp"]
CLAUDE = clients()["claude-code"]


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def _records(tmp_path: Path) -> Path:
    return tmp_path / "state" / RECORDS_FILE


def test_install_writes_the_users_file_keeping_the_rest_and_uninstall_restores_it(tmp_path: Path) -> None:
    user_file = tmp_path / ".claude.json"
    original = '{\n  "numStartups": 3,\n  "tipsHistory": {"x": 1}\n}\n'
    user_file.write_text(original)
    user_file.chmod(0o640)

    records = _records(tmp_path)
    change = install(CLAUDE, _env(tmp_path), COMMAND, records=records)
    assert change.action == "added"
    assert change.path == user_file
    data = json.loads(user_file.read_text())
    assert data["mcpServers"]["memd"]["command"] == COMMAND[0]
    assert stat.S_IMODE(user_file.stat().st_mode) == 0o640  # an existing file keeps its mode
    assert is_installed(CLAUDE, _env(tmp_path))
    assert install(CLAUDE, _env(tmp_path), COMMAND, records=records).action == "unchanged"
    assert install(CLAUDE, _env(tmp_path), ["/new/memd", "mcp"], records=records).action == "updated"

    assert uninstall(CLAUDE, _env(tmp_path), records=records).action == "removed"
    assert user_file.read_text() == original
    assert read_records(records) == {}
    assert uninstall(CLAUDE, _env(tmp_path), records=records).action == "absent"
    assert not is_installed(CLAUDE, _env(tmp_path))


def test_a_missing_file_and_folder_are_created_private(tmp_path: Path) -> None:
    change = install(clients()["codex"], {"HOME": str(tmp_path)}, COMMAND)
    path = tmp_path / ".codex" / "config.toml"
    assert change.path == path
    assert change.action == "added"
    assert path.read_text() == '[mcp_servers.memd]\ncommand = "/opt/memd/bin/memd"\nargs = ["mcp"]\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_dry_run_prints_the_change_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text('{\n  "ui": {"theme": "x"}\n}\n')
    change = install(clients()["gemini-cli"], _env(tmp_path), COMMAND, dry_run=True)
    assert path.read_text() == '{\n  "ui": {"theme": "x"}\n}\n'
    diff = change.diff()
    assert diff.startswith(f"--- {path}\n+++ {path}\n")
    assert '+  "mcpServers": {' in diff
    assert '-  "ui": {"theme": "x"}\n' in diff
    assert not (tmp_path / ".gemini" / ".settings.json").exists()


def test_a_file_it_cannot_parse_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    path.write_text('{"a": 1,,}')
    with pytest.raises(PublishError, match=r"\.claude\.json: .*memd will not change it"):
        install(CLAUDE, _env(tmp_path), COMMAND)
    with pytest.raises(PublishError):
        uninstall(CLAUDE, _env(tmp_path))
    assert path.read_text() == '{"a": 1,,}'
    assert not is_installed(CLAUDE, _env(tmp_path))


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".claude.json")
    with pytest.raises(PublishError, match="not a regular file"):
        install(CLAUDE, _env(tmp_path), COMMAND)


def test_a_users_file_may_link_to_a_regular_file_the_user_owns(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    real.write_text("{}\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").symlink_to(real)
    install(CLAUDE, _env(home), COMMAND)
    assert (home / ".claude.json").is_symlink()
    assert "memd" in json.loads(real.read_text())["mcpServers"]


def test_a_projects_file_is_written_in_the_project_and_never_through_a_link(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    change = install(CLAUDE, _env(tmp_path), COMMAND, project=project)
    assert change.path == project / ".mcp.json"
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["memd"]["args"] == ["mcp"]
    assert is_installed(CLAUDE, _env(tmp_path), project)
    assert not is_installed(CLAUDE, _env(tmp_path))
    assert McpInstalls(_env(tmp_path)).installed("claude_code", str(project))
    assert not McpInstalls(_env(tmp_path)).installed("claude_code", str(tmp_path))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".gemini").symlink_to(elsewhere)
    with pytest.raises(PublishError, match="symbolic link"):
        install(clients()["gemini-cli"], _env(tmp_path), COMMAND, project=project)
    assert list(elsewhere.iterdir()) == []

    (project / ".mcp.json").unlink()
    (project / ".mcp.json").symlink_to(elsewhere / "x.json")
    (elsewhere / "x.json").write_text("{}")
    with pytest.raises(PublishError, match="symbolic link"):
        install(CLAUDE, _env(tmp_path), COMMAND, project=project)
    assert (elsewhere / "x.json").read_text() == "{}"


# Files as users have them, each one of the cases the text alone cannot give back: an empty container
# of their own, a block comment after the last member, a last line without its newline.
BYTE_FOR_BYTE = {
    "claude-code": '{\n  "numStartups": 3,\n  "mcpServers": {}\n}\n',
    "copilot-cli": '{"mcpServers":{}}',
    "gemini-cli": '{\n  // mine\n  "mcpServers": {},\n}\n',
    "opencode": '{\n  "$schema": "https://opencode.ai/config.json",\n  "mcp": {} /* later */\n}\n',
    "qwen-code": '{\n    "general": {"disableAutoUpdate": true} /* c */\n}\n',
    "codex": '# mine\nmodel = "o3"',
    "cline": '{"mcpServers":{"web":{"transport":{"type":"stdio","command":"w"}}}}',
}


@pytest.mark.parametrize("name", sorted(BYTE_FOR_BYTE))
def test_uninstall_gives_back_the_file_the_install_found_byte_for_byte(name: str, tmp_path: Path) -> None:
    agent, env, records = (
        clients()[name],
        {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")},
        _records(tmp_path),
    )
    path = install(agent, env, COMMAND, dry_run=True).path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BYTE_FOR_BYTE[name])
    install(agent, env, COMMAND, records=records)
    assert is_installed(agent, env)
    assert uninstall(agent, env, records=records).action == "removed"
    assert path.read_text() == BYTE_FOR_BYTE[name]


def test_after_the_agent_rewrote_the_file_only_what_the_install_made_goes(tmp_path: Path) -> None:
    """Claude Code rewrites ``~/.claude.json``: the install's exact change cannot be undone, so memd's
    entry is taken out of the text as it is, with the container only when the install made it."""
    env, records = _env(tmp_path), _records(tmp_path)
    user_file = tmp_path / ".claude.json"
    user_file.write_text('{\n  "numStartups": 3,\n  "mcpServers": {}\n}\n')
    install(CLAUDE, env, COMMAND, records=records)
    data = json.loads(user_file.read_text())
    user_file.write_text(json.dumps({**data, "numStartups": 4}, indent=2))  # the agent's own rewrite
    uninstall(CLAUDE, env, records=records)
    assert json.loads(user_file.read_text()) == {"numStartups": 4, "mcpServers": {}}

    user_file.write_text('{\n  "numStartups": 3\n}\n')
    install(CLAUDE, env, COMMAND, records=records)
    user_file.write_text(json.dumps({**json.loads(user_file.read_text()), "numStartups": 5}, indent=2))
    uninstall(CLAUDE, env, records=records)
    assert json.loads(user_file.read_text()) == {"numStartups": 5}

    # Without a record (an install by an older memd), an empty container stays: harmless either way.
    user_file.write_text('{\n  "numStartups": 3\n}\n')
    install(CLAUDE, env, COMMAND)
    uninstall(CLAUDE, env, records=records)
    assert json.loads(user_file.read_text()) == {"numStartups": 3, "mcpServers": {}}


@pytest.mark.parametrize("name", sorted(n for n, c in clients().items() if c.project_file is not None))
def test_a_project_uninstall_removes_the_file_and_folders_the_install_created(
    name: str, tmp_path: Path
) -> None:
    agent, env, records = clients()[name], _env(tmp_path), _records(tmp_path)
    project = tmp_path / "app"
    project.mkdir()
    path = install(agent, env, COMMAND, project=project, records=records).path
    assert path.is_file()
    change = uninstall(agent, env, project=project, records=records)
    assert change.action == "removed"
    assert change.deleted
    assert list(project.iterdir()) == []  # the file, and .codex/ or .qwen/ ... it made, are gone


def test_a_file_the_install_created_stays_once_it_holds_more_than_memds_entry(tmp_path: Path) -> None:
    env, records = _env(tmp_path), _records(tmp_path)
    project = tmp_path / "app"
    project.mkdir()
    codex = clients()["codex"]
    path = install(codex, env, COMMAND, project=project, records=records).path
    path.write_text('model = "o3"\n\n' + path.read_text())  # the user added a setting since
    change = uninstall(codex, env, project=project, records=records)
    assert not change.deleted
    assert path.read_text() == 'model = "o3"\n'
    assert not uninstall(codex, env, project=project, records=records).deleted


def test_a_dry_run_uninstall_writes_and_forgets_nothing(tmp_path: Path) -> None:
    env, records = _env(tmp_path), _records(tmp_path)
    project = tmp_path / "app"
    project.mkdir()
    path = install(CLAUDE, env, COMMAND, project=project, records=records).path
    text = path.read_text()
    change = uninstall(CLAUDE, env, project=project, records=records, dry_run=True)
    assert change.deleted
    assert path.read_text() == text
    assert str(path) in read_records(records)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_record_file_memd_must_not_read_refuses_the_install_before_the_agents_file_changes(
    kind: str, tmp_path: Path
) -> None:
    env, records = _env(tmp_path), _records(tmp_path)
    records.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(records)  # read_text() would block on it forever
    else:
        (tmp_path / "elsewhere.json").write_text("{}\n")
        records.symlink_to(tmp_path / "elsewhere.json")
    user_file = tmp_path / ".claude.json"
    user_file.write_text('{"numStartups": 3}\n')
    with pytest.raises(PublishError, match=rf"{RECORDS_FILE}: .*nothing was changed"):
        install(CLAUDE, env, COMMAND, records=records)
    assert user_file.read_text() == '{"numStartups": 3}\n'
    with pytest.raises(PublishError, match="nothing was changed"):
        uninstall(CLAUDE, env, records=records)
    if kind == "symlink":
        assert (tmp_path / "elsewhere.json").read_text() == "{}\n"


def test_a_path_that_is_not_utf8_keeps_its_record_and_every_other(tmp_path: Path) -> None:
    env, records = _env(tmp_path), _records(tmp_path)
    (tmp_path / ".claude.json").write_text('{"numStartups": 3}\n')
    install(CLAUDE, env, COMMAND, records=records)
    project = Path(os.fsdecode(bytes(tmp_path) + b"/proj\xff"))
    project.mkdir()
    path = install(clients()["codex"], env, COMMAND, project=project, records=records).path
    assert records.read_bytes().isascii()
    assert set(read_records(records)) == {str(tmp_path / ".claude.json"), str(path)}
    change = uninstall(clients()["codex"], env, project=project, records=records)
    assert change.deleted
    assert list(project.iterdir()) == []  # .codex/, which the install made, went with the file
    assert set(read_records(records)) == {str(tmp_path / ".claude.json")}


def test_a_malformed_record_costs_only_itself(tmp_path: Path) -> None:
    env, records = _env(tmp_path), _records(tmp_path)
    (tmp_path / ".claude.json").write_text('{"numStartups": 3}\n')
    install(CLAUDE, env, COMMAND, records=records)
    good = json.loads(records.read_text())
    (good_path,) = good
    entry = good[good_path]
    bad = {
        "/a": {**entry, "unknown": 1},
        "/b": {**entry, "created_dirs": "/tmp"},
        "/c": {**entry, "at": "0"},
        "/d": [1, 2],
        "/e": {k: v for k, v in entry.items() if k != "replaced"},
    }
    records.write_text(json.dumps({**bad, **good}))
    assert set(read_records(records)) == {good_path}
    assert uninstall(CLAUDE, env, records=records).action == "removed"
    assert (tmp_path / ".claude.json").read_text() == '{"numStartups": 3}\n'


def test_uninstall_removes_only_the_config_files_own_folders_below_where_it_was_installed(
    tmp_path: Path,
) -> None:
    env, records = _env(tmp_path), _records(tmp_path)
    project = tmp_path / "app"
    project.mkdir()
    codex = clients()["codex"]
    path = install(codex, env, COMMAND, project=project, records=records).path
    victims = [tmp_path / "victim", project / "other", tmp_path / "relative"]
    for folder in victims:
        folder.mkdir()
    data = json.loads(records.read_text())
    data[str(path)]["created_dirs"] = [
        str(path.parent),
        str(project),
        str(tmp_path),
        "relative",
        *map(str, victims),
    ]
    records.write_text(json.dumps(data))
    assert uninstall(codex, env, project=project, records=records).deleted
    assert not path.parent.exists()
    assert project.is_dir()
    assert all(folder.is_dir() for folder in victims)


def test_an_agent_without_a_project_file_refuses_a_project_install_and_writes_nothing(tmp_path: Path) -> None:
    cline, env = clients()["cline"], _env(tmp_path)
    project = tmp_path / "app"
    project.mkdir()
    with pytest.raises(PublishError, match="user's file only"):
        install(cline, env, COMMAND, project=project, records=_records(tmp_path))
    with pytest.raises(PublishError, match="user's file only"):
        uninstall(cline, env, project=project, records=_records(tmp_path))
    assert list(project.iterdir()) == []
    assert not is_installed(cline, env, project)
    assert install(cline, env, COMMAND, records=_records(tmp_path)).path == (
        tmp_path / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    )
    assert is_installed(cline, env)
