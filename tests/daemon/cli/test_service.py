"""`memd service`: against a fake systemctl on PATH that records what it was asked (a whole process
for the install, memd's entry point in this process for the rest)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner, Result

from daemon.cli import cli
from daemon.exits import Exit
from tests.daemon.memd_inprocess import Ran, memd


def fake_systemctl(bin_dir: Path, log: Path, *, active: bool = True) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "systemctl"
    show = "ActiveState=active\\nSubState=running\\nMainPID=77\\n" if active else "ActiveState=inactive\\n"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{log}"\n'
        f'if [ "$2" = "show" ]; then printf "LoadState=loaded\\n{show}"; fi\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def _systemd_env(tmp_path: Path, *, active: bool) -> dict[str, str]:
    fake_systemctl(tmp_path / "bin", tmp_path / "systemctl.log", active=active)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_"))}
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "PATH": f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    return env


def process(tmp_path: Path, *args: str, active: bool = True) -> subprocess.CompletedProcess[str]:
    """`memd service ARGS --platform systemd` as a whole process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "daemon", "service", *args, "--platform", "systemd"],
        env=_systemd_env(tmp_path, active=active),
        capture_output=True,
        text=True,
        timeout=60,
    )


def run(tmp_path: Path, *args: str, active: bool = True) -> Ran:
    """The same through memd's entry point in this process (no process start per call)."""
    return memd(_systemd_env(tmp_path, active=active), "service", *args, "--platform", "systemd")


def test_install_writes_the_unit_enables_and_starts_it(tmp_path: Path) -> None:
    done = process(tmp_path, "install")
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "memd.service"
    text = unit.read_text()
    assert f"ExecStart={Path(sys.executable).parent / 'memd'} run" in text
    assert (tmp_path / "home" / ".local" / "share" / "memd" / "memory").is_dir()
    calls = (tmp_path / "systemctl.log").read_text().splitlines()
    assert calls == [
        "--user is-system-running",
        "--user daemon-reload",
        "--user enable memd.service",
        "--user restart memd.service",
    ]


def test_dry_run_prints_and_changes_nothing(tmp_path: Path) -> None:
    done = run(tmp_path, "install", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "Type=notify" in done.stdout
    assert "# would run: systemctl --user enable memd.service" in done.stdout
    assert not (tmp_path / "cfg").exists()
    assert not (tmp_path / "systemctl.log").exists()
    memory = tmp_path / "home" / ".local" / "share" / "memd" / "memory"
    assert f"# would create {memory}" in done.stdout
    memory.mkdir(parents=True)  # a folder that is there already is not one it would create
    again = run(tmp_path, "install", "--dry-run")
    assert f"# {memory} exists" in again.stdout
    assert f"would create {memory}" not in again.stdout


def test_status_reports_the_managers_view_and_uninstall_removes(tmp_path: Path) -> None:
    assert run(tmp_path, "install").returncode == 0
    status = run(tmp_path, "status")
    assert status.returncode == 0
    assert "ActiveState: active" in status.stdout
    assert "MainPID: 77" in status.stdout
    assert run(tmp_path, "status", active=False).returncode == 1
    done = run(tmp_path, "uninstall")
    assert done.returncode == 0
    assert not (tmp_path / "cfg" / "systemd" / "user" / "memd.service").exists()
    assert "--user disable --now memd.service" in (tmp_path / "systemctl.log").read_text()


def test_launchd_dry_run_shows_the_agent(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    done = memd(env, "service", "install", "--platform", "launchd", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "<string>dev.memd.agent</string>" in done.stdout
    assert "launchctl bootstrap gui/" in done.stdout


def fake_launchctl(bin_dir: Path, log: Path, *, running: bool) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "launchctl"
    printed = (
        "\\tstate = running\\n\\tpid = 88\\n"
        if running
        else "\\tstate = not running\\n\\tlast exit code = 1\\n"
    )
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{log}"\n'
        'if [ "$1" = "bootout" ]; then exit 3; fi\n'  # not loaded yet: memd must not mind
        f'if [ "$1" = "print" ]; then printf "gui/501/dev.memd.agent = {{\\n{printed}}}\\n"; fi\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_launchd_install_status_and_uninstall(tmp_path: Path) -> None:
    import plistlib

    log = tmp_path / "launchctl.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_"))}
    env.update(
        {"HOME": str(tmp_path / "home"), "PATH": f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    )

    def launchd(*args: str, running: bool = True) -> Ran:
        fake_launchctl(tmp_path / "bin", log, running=running)
        return memd(env, "service", *args, "--platform", "launchd")

    done = launchd("install")
    assert done.returncode == 0, done.stderr
    plist = tmp_path / "home" / "Library" / "LaunchAgents" / "dev.memd.agent.plist"
    agent = plistlib.loads(plist.read_bytes())
    assert agent["Label"] == "dev.memd.agent"
    assert agent["ProgramArguments"][:2] == [str(Path(sys.executable).parent / "memd"), "run"]
    assert (tmp_path / "home" / "Library" / "Logs" / "memd").is_dir()
    domain = f"gui/{os.getuid()}"
    assert log.read_text().splitlines() == [
        f"bootout {domain}/dev.memd.agent",
        f"bootstrap {domain} {plist}",
        f"enable {domain}/dev.memd.agent",
    ]

    status = launchd("status")
    assert status.returncode == 0, status.stdout
    assert "state: running" in status.stdout
    assert "pid: 88" in status.stdout
    stopped = launchd("status", running=False)
    assert stopped.returncode == 1
    assert "last exit code: 1" in stopped.stdout

    assert launchd("uninstall").returncode == 0
    assert not plist.exists()
    assert log.read_text().splitlines()[-1] == f"bootout {domain}/dev.memd.agent"


def no_bus_systemctl(bin_dir: Path, log: Path) -> None:
    """systemctl where no user manager runs: every --user call fails as the real one does."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "systemctl"
    script.write_text(
        f'#!/bin/sh\necho "$@" >> "{log}"\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def in_process(tmp_path: Path, *args: str, **extra: str) -> Result:
    """`memd service ARGS --platform systemd` in this process, with a home under ``tmp_path``."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("MEMD_", "XDG_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        **extra,
    )
    return CliRunner().invoke(cli, ["service", *args, "--platform", "systemd"], env=env)


def test_without_a_user_systemd_install_says_what_to_do_and_writes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "systemctl.log"
    no_bus_systemctl(tmp_path / "bin", log)
    done = in_process(tmp_path, "install")
    assert done.exit_code == Exit.FAILED
    message = " ".join(done.output.split())
    assert "no user systemd runs for you" in message
    assert "loginctl enable-linger $USER" in message
    assert "memd run" in message
    assert "nothing was written" in message
    assert not (tmp_path / "cfg" / "systemd" / "user" / "memd.service").exists()
    assert log.read_text().splitlines() == ["--user is-system-running"]


def test_install_opens_the_projects_the_store_knows_for_agents_md(tmp_path: Path) -> None:
    import asyncio

    from daemon.config import load_settings
    from pipeline.machine import machine_id
    from pipeline.store import open_store
    from tests.pipeline.publish.support import add_scope

    fake_systemctl(tmp_path / "bin", tmp_path / "systemctl.log")
    project = tmp_path / "home" / "src" / "app"
    project.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    settings = load_settings(None, env=env).settings

    async def record() -> None:
        store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
        try:
            await add_scope(store, str(project), datetime.now(UTC))
        finally:
            await store.close()

    asyncio.run(record())

    def writable(**extra: str) -> list[str]:
        done = in_process(tmp_path, "install", "--dry-run", **extra)
        assert done.exit_code == 0, done.output
        line = next(line for line in done.output.splitlines() if line.startswith("ReadWritePaths="))
        return line.removeprefix("ReadWritePaths=").split(" ")

    assert f"-{project}" not in writable()  # agents_md is off: the project stays read-only
    rw = writable(MEMD_PUBLISH__AGENTS_MD="true")
    assert f"-{project}" in rw
    assert f"-{tmp_path / 'home'}" not in rw
