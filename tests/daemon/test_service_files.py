"""The generated service files: the unit verified by systemd itself, the plist parsed and typed."""

from __future__ import annotations

import importlib.util
import os
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from daemon import service_files as sf
from daemon.config import load_settings
from pipeline.publish.plan import Homes
from pipeline.publish.targets import registry
from pipeline.settings import Settings

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
MEMD = (
    [str(Path(sys.executable).parent / "memd")]
    if (Path(sys.executable).parent / "memd").exists()
    else [sys.executable]
)


def settings_for(tmp_path: Path, **env: str) -> Settings:
    return load_settings(None, env={"HOME": str(tmp_path / "home"), **env}).settings


def analyze(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    assert SYSTEMD_ANALYZE is not None
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run([SYSTEMD_ANALYZE, *args], env=env, capture_output=True, text=True, timeout=120)


def write_unit(tmp_path: Path, settings: Settings, config: Path | None = None) -> Path:
    unit = tmp_path / "unit" / sf.UNIT_NAME
    unit.parent.mkdir(exist_ok=True)
    unit.write_text(
        sf.render_unit(settings, command=MEMD, config=config, env={"HOME": str(tmp_path / "home")})
    )
    return unit


@needs_systemd
def test_the_generated_unit_verifies_without_a_word(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, MEMD_SYNC__REMOTE="ssh://git@host/memory.git")  # waits for the network
    unit = write_unit(tmp_path, settings, config=tmp_path / "my config.toml")
    assert "After=network-online.target" in unit.read_text()
    done = analyze(tmp_path, "--user", "verify", str(unit))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # unknown keys and bad values are only warnings: any output fails
    assert done.stdout == ""


@needs_systemd
def test_the_generated_unit_rates_5_or_better(tmp_path: Path) -> None:
    unit = write_unit(tmp_path, settings_for(tmp_path))
    done = analyze(tmp_path, "security", "--offline=true", "--user", str(unit))
    match = re.search(r"Overall exposure level for memd\.service: (\d+\.\d+)", done.stdout + done.stderr)
    assert match, done.stdout[-2000:] + done.stderr
    assert float(match.group(1)) <= 5.0


@needs_systemd
def test_verify_would_catch_a_typo(tmp_path: Path) -> None:
    # The check above means something: systemd-analyze complains (on stderr, exit 0) about a bad key.
    unit = write_unit(tmp_path, settings_for(tmp_path))
    unit.write_text(unit.read_text().replace("NoNewPrivileges=", "NoNewPrivilegs="))
    done = analyze(tmp_path, "--user", "verify", str(unit))
    assert "NoNewPrivilegs" in done.stderr


def test_the_unit_runs_this_memd_under_watchdog_and_names_the_writable_paths(tmp_path: Path) -> None:
    # `memd service install` loads the settings from the environment it renders the unit with.
    settings = settings_for(tmp_path, MEMD_PUBLISH__CODEX="true", CODEX_HOME="/codex", QWEN_HOME="/qwen")
    text = sf.render_unit(
        settings,
        command=["/opt/memd 1/bin/memd"],
        config=Path("/etc/memd%.toml"),
        env={"HOME": str(tmp_path / "home"), "CODEX_HOME": "/codex", "QWEN_HOME": "/qwen"},
    )
    lines = text.splitlines()
    assert 'ExecStart="/opt/memd 1/bin/memd" --config /etc/memd%%.toml run' in lines
    for expected in (
        "Type=notify",
        "NotifyAccess=main",
        "Restart=on-failure",
        "PrivateTmp=yes",
        "NoNewPrivileges=yes",
    ):
        assert expected in lines
    assert any(line.startswith("WatchdogSec=") for line in lines)
    rw = next(line for line in lines if line.startswith("ReadWritePaths="))
    home = tmp_path / "home"
    for path in (
        settings.paths.memory_dir,
        settings.paths.state_dir,
        home / ".claude",
        home / ".gemini",
        Path("/codex"),
    ):
        assert f"-{path}" in rw
    assert "Environment=CODEX_HOME=/codex" in lines
    assert f"-{Path('/qwen')}" in rw  # Qwen Code's memory folders, where $QWEN_HOME puts them
    assert "Environment=QWEN_HOME=/qwen" in lines


def test_the_xdg_folders_of_the_installing_shell_reach_the_service(tmp_path: Path) -> None:
    # memd's own state and config, OpenCode's database and its AGENTS.md follow the XDG variables:
    # a service started without them would read another store than `memd status` in that shell.
    xdg = {
        "XDG_CONFIG_HOME": "/x/config",
        "XDG_STATE_HOME": "/x/state",
        "XDG_DATA_HOME": "/x/data",
    }
    settings = settings_for(tmp_path, MEMD_PUBLISH__OPENCODE_GLOBAL="true", **xdg)
    env = {"HOME": str(tmp_path / "home"), **xdg}
    lines = sf.render_unit(settings, command=["/opt/memd/bin/memd"], config=None, env=env).splitlines()
    for name, value in xdg.items():
        assert f"Environment={name}={value}" in lines
    assert settings.paths.state_dir == Path("/x/state/memd")
    rw = next(line for line in lines if line.startswith("ReadWritePaths="))
    assert "-/x/config/opencode" in rw


def _writable(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("ReadWritePaths="))
    return line.removeprefix("ReadWritePaths=").split(" ")


def test_the_sandbox_follows_moved_roots_to_where_publishing_writes(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    settings = settings_for(
        tmp_path,
        MEMD_SOURCES__CLAUDE_CODE__ROOT=str(tmp_path / "data/claude/projects"),
        MEMD_SOURCES__GEMINI_CLI__ROOT=str(tmp_path / "data/gemini/tmp"),
        MEMD_SOURCES__CODEX__ROOT=str(tmp_path / "data/codex/sessions"),
        MEMD_SOURCES__QWEN_CODE__ROOT=str(tmp_path / "data/qwen/projects"),
        MEMD_SOURCES__COPILOT_CLI__ROOT=str(tmp_path / "data/copilot/session-state"),
        MEMD_SOURCES__OPENHANDS__ROOT=str(tmp_path / "data/openhands/conversations"),
        MEMD_SOURCES__CLINE__ROOT=str(tmp_path / "data/cline/data/sessions"),
        MEMD_PUBLISH__CODEX_GLOBAL="true",
        MEMD_PUBLISH__COPILOT_GLOBAL="true",
    )
    rw = _writable(sf.render_unit(settings, command=MEMD, config=None, env=env))
    homes_names = (".claude", ".gemini", ".codex", ".qwen", ".copilot", ".openhands", ".cline")
    assert not any(name in p for p in rw for name in homes_names)
    # The folders are the ones publishing writes in: the same targets, from the same settings.
    homes = Homes.from_settings(settings, env)
    folders = [
        tmp_path / "data/claude/projects",
        tmp_path / "data/gemini/tmp",
        tmp_path / "data/codex",  # the global AGENTS.md is replaced in its folder
        tmp_path / "data/qwen/projects",
        tmp_path / "data/copilot",
        tmp_path / "home" / ".aider" / "memd",  # aider_global: memd's own file (on by default)
        tmp_path / "data/openhands/skills",  # memd's own skill file, in that folder only
        tmp_path / "data/cline/rules",  # Cline's user-wide rules folder, never its whole home
    ]
    # (in the order of the registry's agents: which folder comes first is no behaviour)
    assert sorted(registry.written_folders(homes, settings.publish)) == sorted(folders)
    assert sorted(rw[-len(folders) :]) == sorted(f"-{f}" for f in folders)


def test_only_the_targets_that_are_on_open_their_folders(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    off = settings_for(
        tmp_path,
        MEMD_PUBLISH__CLAUDE_CODE="false",
        MEMD_PUBLISH__GEMINI="false",
        MEMD_PUBLISH__QWEN_CODE="false",
        MEMD_PUBLISH__AIDER_GLOBAL="false",
        MEMD_PUBLISH__OPENHANDS_GLOBAL="false",
        MEMD_PUBLISH__CLINE_GLOBAL="false",
    )
    assert _writable(sf.render_unit(off, command=MEMD, config=None, env=env)) == [
        f"-{off.paths.memory_dir}",
        f"-{off.paths.state_dir}",
    ]


def test_the_sandbox_opens_no_agent_home_and_never_the_home_folder(tmp_path: Path) -> None:
    # Claude Code's settings and credentials stay read-only: only the folder of its projects'
    # folders (their memory/) opens. agents_md opens each project folder memd knows, not HOME.
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    known = [home / "src" / "app", home / "work" / "lib"]
    for project in known:
        project.mkdir(parents=True)
    settings = settings_for(tmp_path, MEMD_PUBLISH__AGENTS_MD="true")
    projects = [*map(str, known), str(home / "gone"), "relative/path"]
    rw = _writable(sf.render_unit(settings, command=MEMD, config=None, env=env, projects=projects))
    assert rw[:2] == [f"-{settings.paths.memory_dir}", f"-{settings.paths.state_dir}"]
    assert sorted(rw[2:]) == sorted(
        [
            f"-{home / '.claude' / 'projects'}",
            f"-{known[0]}",
            f"-{known[1]}",
            f"-{home / '.gemini' / 'tmp'}",
            f"-{home / '.qwen' / 'projects'}",
            f"-{home / '.aider' / 'memd'}",
            f"-{home / '.openhands' / 'skills'}",
            f"-{home / '.cline' / 'rules'}",
        ]
    )
    for whole in (
        home,
        home / ".claude",
        home / ".gemini",
        home / ".qwen",
        home / ".aider",
        home / ".openhands",
        home / ".cline",
    ):
        assert f"-{whole}" not in rw


def test_a_global_file_opens_its_own_folder_and_a_linked_one_the_folder_it_links_to(tmp_path: Path) -> None:
    # memd replaces a global CLAUDE.md by a rename in its folder: that folder, and only for that name.
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    settings = settings_for(tmp_path, MEMD_PUBLISH__CLAUDE_CODE_GLOBAL="true", MEMD_PUBLISH__GEMINI="false")
    assert f"-{home / '.claude'}" in _writable(sf.render_unit(settings, command=MEMD, config=None, env=env))
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "CLAUDE.md").write_text("mine\n")
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").symlink_to(dotfiles / "CLAUDE.md")
    rw = _writable(sf.render_unit(settings, command=MEMD, config=None, env=env))
    assert f"-{dotfiles}" in rw
    assert f"-{home / '.claude'}" not in rw


@pytest.mark.parametrize(
    ("remote", "opened"),
    [("/srv/memory.git", "/srv/memory.git"), ("file:///srv/m.git", "/srv/m.git"), ("https://h/m.git", None)],
)
def test_a_path_remote_is_writable_for_the_push(tmp_path: Path, remote: str, opened: str | None) -> None:
    # Under ProtectHome/ProtectSystem a push into a folder outside the sandbox would fail.
    settings = settings_for(tmp_path, MEMD_SYNC__REMOTE=remote)
    rw = _writable(sf.render_unit(settings, command=MEMD, config=None, env={"HOME": str(tmp_path / "home")}))
    assert rw[:2] == [f"-{settings.paths.memory_dir}", f"-{settings.paths.state_dir}"]
    assert rw[2:3] == ([f"-{opened}"] if opened else [f"-{tmp_path / 'home/.claude/projects'}"])


@pytest.mark.parametrize(
    ("extra", "waits"),
    [
        ({}, False),
        ({"MEMD_SYNC__REMOTE": "/srv/memory.git"}, False),
        ({"MEMD_SYNC__REMOTE": "file:///srv/memory.git"}, False),
        ({"MEMD_SYNC__REMOTE": "git@github.com:me/memory.git"}, True),
        ({"MEMD_SYNC__REMOTE": "ssh://git@host/memory.git"}, True),
        ({"MEMD_SYNC__REMOTE": "https://host/memory.git"}, True),
        ({"MEMD_PATHS__STATE_DB": "postgresql://memd@db.internal/memd"}, True),
    ],
)
def test_the_unit_waits_for_the_network_only_when_memd_needs_one(
    tmp_path: Path, extra: dict[str, str], waits: bool
) -> None:
    settings = settings_for(tmp_path, **extra)
    lines = sf.render_unit(settings, command=MEMD, config=None, env={"HOME": str(tmp_path)}).splitlines()
    unit_section = lines[lines.index("[Unit]") : lines.index("[Service]")]
    network = ["Wants=network-online.target", "After=network-online.target"]
    assert [line for line in unit_section if "network" in line] == (network if waits else [])


def test_the_plist_parses_with_the_right_key_types(tmp_path: Path) -> None:
    env = {"HOME": "/Users/ann", "MEMD_CONFIG": "/Users/ann/memd.toml"}
    data = plistlib.loads(sf.render_plist(command=["/usr/local/bin/memd"], config=None, env=env))
    assert sf.check_plist(data) == []
    assert data["Label"] == "dev.memd.agent"
    assert data["ProgramArguments"] == ["/usr/local/bin/memd", "run"]
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["ProcessType"] == "Background"
    assert data["LowPriorityIO"] is True
    assert isinstance(data["ThrottleInterval"], int)
    assert data["StandardErrorPath"] == "/Users/ann/Library/Logs/memd/memd.err.log"
    assert data["EnvironmentVariables"]["MEMD_CONFIG"] == "/Users/ann/memd.toml"
    assert plistlib.loads(plistlib.dumps(data)) == data


def test_the_type_table_catches_what_launchd_would_reject() -> None:
    assert sf.check_plist({"RunAtLoad": "yes", "Nice": "10", "ThrottleInterval": True, "Bogus": 1}) == [
        "RunAtLoad: expected bool, got str",
        "Nice: expected int, got str",
        "ThrottleInterval: expected int, got bool",
        "Bogus: not a key memd writes",
    ]
    assert sf.check_plist({"EnvironmentVariables": {"N": 1}}) == [
        "EnvironmentVariables: values must be strings"
    ]


def test_templates_are_found_in_a_checkout_and_in_a_wheel_layout(tmp_path: Path) -> None:
    assert sf.template_dir() == Path(sf.__file__).resolve().parents[1] / "systemd"
    # The wheel ships systemd/ as daemon/service_files/ (pyproject force-include).
    pkg = tmp_path / "site" / "daemon"
    shutil.copytree(sf.template_dir(), pkg / "service_files")
    shutil.copy(sf.__file__, pkg / "service_files.py")
    spec = importlib.util.spec_from_file_location("wheel_service_files", pkg / "service_files.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.template_dir() == pkg / "service_files"
    assert (module.template_dir() / sf.PLIST_NAME).is_file()


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"HOME": ""},
        {"HOME": "/h"},
        {"HOME": "/h", "XDG_CONFIG_HOME": "relative/cfg"},
        {"HOME": "/h", "XDG_CONFIG_HOME": "/x/cfg"},
        {"XDG_CONFIG_HOME": ""},
    ],
)
def test_every_home_and_xdg_folder_comes_from_the_one_resolution(env: dict[str, str]) -> None:
    # An empty or missing HOME, a relative XDG variable: the service files, the agents' homes and
    # memd's own folders all fall back the same way (``pipeline.defaults``), never to a relative path.
    from pipeline import defaults

    home, config_home = defaults.home(env), defaults.xdg(env, "XDG_CONFIG_HOME", ".config")
    assert home.is_absolute()
    assert sf.unit_path(env) == config_home / "systemd" / "user" / sf.UNIT_NAME
    assert sf.plist_path(env) == home / "Library" / "LaunchAgents" / sf.PLIST_NAME
    assert sf.log_dir(env) == home / "Library" / "Logs" / "memd"
    assert sf.env_file(env) == config_home / "memd" / "env"
    homes = Homes.from_settings(load_settings(None, env=env).settings, env)
    assert (homes.user, homes.config_home) == (home, config_home)
    assert defaults.config_path(env) == config_home / "memd" / "config.toml"
