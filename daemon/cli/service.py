"""`memd service install|uninstall|status`: run memd as a systemd user service or a launchd agent.

``install`` writes the platform's file with this installation's memd path, creates the
directories memd writes, then enables and starts it; ``--dry-run`` prints the file and the
commands instead. Where no user systemd answers (no user bus: no login session, no lingering),
it writes nothing and says what to do instead. ``status`` reports what the service manager says (exit 0 when it runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from daemon.cli.context import CliContext, fail, pass_ctx
from daemon.exits import Exit

if TYPE_CHECKING:
    from pipeline.settings import Settings

PLATFORMS = ("auto", "systemd", "launchd")
COMMAND_TIMEOUT_S = 60
NO_USER_BUS = ("Failed to connect to bus", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
"""How ``systemctl --user`` says there is no user service manager to talk to."""
NO_USER_SYSTEMD = (
    "no user systemd runs for you (systemctl --user cannot reach its bus: {why}); nothing was written. "
    "Either enable lingering (`loginctl enable-linger $USER`), log in again and run "
    "`memd service install` again, or run `memd run` under another supervisor "
    "(`memd service install --dry-run` prints the unit)"
)


def _platform(choice: str) -> str:
    if choice != "auto":
        return choice
    return "launchd" if sys.platform == "darwin" else "systemd"


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        fail(f"{argv[0]} not found: is this a {'macOS' if argv[0] == 'launchctl' else 'systemd'} machine?")
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(argv)} did not answer within {COMMAND_TIMEOUT_S} s")
    if check and done.returncode != 0:
        fail(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}")
    return done


def _check_user_systemd() -> None:
    """Fail, before anything is written, when no user service manager answers ``systemctl --user``."""
    done = _run(["systemctl", "--user", "is-system-running"], check=False)
    said = (done.stderr or "").strip()
    if done.returncode != 0 and (
        any(sign in said for sign in NO_USER_BUS) or done.stdout.strip() == "offline"
    ):
        fail(NO_USER_SYSTEMD.format(why=said.splitlines()[0] if said else "offline"))


def _known_projects(settings: Settings) -> list[str]:
    """The project folders the state store knows, for ``agents_md``'s part of the sandbox (none
    while it is off, or before the store exists: installing creates no store)."""
    if not settings.publish.agents_md:
        return []
    import asyncio

    from daemon.runtime import Runtime
    from pipeline.errors import MemdError
    from pipeline.store.publications import known_projects
    from pipeline.store_url import sqlite_path

    db = sqlite_path(settings.paths.state_db)
    if db is not None and not db.is_file():
        return []

    async def read() -> list[str]:
        async with Runtime.open(settings) as rt:
            return await known_projects(rt.store)

    try:
        return asyncio.run(read())
    except MemdError as exc:
        click.echo(
            f"note: the projects memd knows cannot be read ({exc}): agents_md writes in none of them",
            err=True,
        )
        return []


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(content)
    tmp.replace(path)


@click.group("service")
def service_group() -> None:
    """Install, remove or check memd as a background service (systemd user unit or launchd agent)."""


platform_option = click.option(
    "--platform", type=click.Choice(PLATFORMS), default="auto", show_default=True, help="Service manager."
)
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Print what would be written and run; change nothing."
)


@service_group.command("install")
@platform_option
@dry_run_option
@pass_ctx
def install(ctx: CliContext, platform: str, dry_run: bool) -> None:
    """Write the service file for this memd, enable it and start it."""
    from daemon import service_files as sf

    settings = ctx.loaded().settings
    env = dict(os.environ)
    config = ctx.config_path.resolve() if ctx.config_path is not None else None
    command = sf.memd_command()
    if _platform(platform) == "systemd":
        path = sf.unit_path(env)
        projects = _known_projects(settings)
        content = sf.render_unit(
            settings, command=command, config=config, env=env, projects=projects
        ).encode()
        dirs = [settings.paths.memory_dir, settings.paths.state_dir]
        commands = [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", sf.UNIT_NAME],
            ["systemctl", "--user", "restart", sf.UNIT_NAME],
        ]
        notes = [
            f"put the API key in {sf.env_file(env)} (mode 600) as {settings.llm.api_key_env}=...",
            "to keep memd running without a login session: loginctl enable-linger",
        ]
    else:
        path = sf.plist_path(env)
        content = sf.render_plist(command=command, config=config, env=env)
        dirs = [settings.paths.memory_dir, settings.paths.state_dir, sf.log_dir(env)]
        domain = f"gui/{os.getuid()}"
        commands = [
            ["launchctl", "bootout", f"{domain}/{sf.LAUNCHD_LABEL}"],
            ["launchctl", "bootstrap", domain, str(path)],
            ["launchctl", "enable", f"{domain}/{sf.LAUNCHD_LABEL}"],
        ]
        notes = [
            f"launchd agents do not read your shell profile: make {settings.llm.api_key_env} available to it"
        ]
    if dry_run:
        click.echo(f"# would write {path}:")
        click.echo(content.decode())
        for d in dirs:
            click.echo(f"# {d} exists" if d.is_dir() else f"# would create {d}")
        for argv in commands:
            click.echo("# would run: " + " ".join(argv))
        return
    if _platform(platform) == "systemd":
        _check_user_systemd()
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write(path, content)
    click.echo(f"wrote {path}")
    for argv in commands:
        _run(argv, check=argv[1] != "bootout")  # bootout of an agent that is not loaded fails: fine
    click.echo("memd service installed and started")
    for note in notes:
        click.echo(f"note: {note}")


@service_group.command("uninstall")
@platform_option
@dry_run_option
def uninstall(platform: str, dry_run: bool) -> None:
    """Stop and disable the service and remove its file."""
    from daemon import service_files as sf

    env = dict(os.environ)
    if _platform(platform) == "systemd":
        path = sf.unit_path(env)
        commands = [["systemctl", "--user", "disable", "--now", sf.UNIT_NAME]]
        after = [["systemctl", "--user", "daemon-reload"]]
    else:
        path = sf.plist_path(env)
        commands = [["launchctl", "bootout", f"gui/{os.getuid()}/{sf.LAUNCHD_LABEL}"]]
        after = []
    if dry_run:
        for argv in commands:
            click.echo("# would run: " + " ".join(argv))
        click.echo(f"# would remove {path}")
        for argv in after:
            click.echo("# would run: " + " ".join(argv))
        return
    for argv in commands:
        _run(argv, check=False)
    path.unlink(missing_ok=True)
    for argv in after:
        _run(argv, check=False)
    click.echo(f"removed {path}")


@service_group.command("status")
@platform_option
def status(platform: str) -> None:
    """What the service manager says about memd (exit 0 when it runs)."""
    from daemon import service_files as sf

    env = dict(os.environ)
    if _platform(platform) == "systemd":
        path = sf.unit_path(env)
        props = "LoadState,UnitFileState,ActiveState,SubState,MainPID,ExecMainStatus,StatusText"
        done = _run(["systemctl", "--user", "show", sf.UNIT_NAME, f"--property={props}"], check=False)
        values = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
        click.echo(f"unit file: {path}{'' if path.exists() else ' (not installed)'}")
        for key in props.split(","):
            if values.get(key):
                click.echo(f"{key}: {values[key]}")
        running = values.get("ActiveState") == "active"
    else:
        path = sf.plist_path(env)
        done = _run(["launchctl", "print", f"gui/{os.getuid()}/{sf.LAUNCHD_LABEL}"], check=False)
        fields = {}
        for line in done.stdout.splitlines():
            key, sep, value = line.strip().partition(" = ")
            if sep and key in ("state", "pid", "last exit code"):
                fields[key] = value
        click.echo(f"agent file: {path}{'' if path.exists() else ' (not installed)'}")
        click.echo(f"state: {fields.get('state', 'not loaded')}")
        for key in ("pid", "last exit code"):
            if key in fields:
                click.echo(f"{key}: {fields[key]}")
        running = fields.get("state") == "running"
    sys.exit(Exit.OK if running else Exit.FAILED)
