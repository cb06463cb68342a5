"""The service definitions, rendered for this installation: a systemd user unit, a launchd agent.

The templates live in ``systemd/`` in a checkout and ship in the wheel as
``daemon/service_files/`` (pyproject's force-include); ``template_dir()`` finds either. Each
template is a working file on its own; rendering replaces what depends on the installation:
the memd command, the config file, the directories memd may write and whether it waits for the
network (systemd), the log paths (launchd).

The sandbox opens exactly what memd writes: its memory repository and state, a path sync remote,
and the folders of the publish targets that are on, each as narrow as that target allows (the
folder of an agent's per-project folders, not the agent's home; each project folder memd knows for
``agents_md``, never the home folder). The unit is written from what memd knows when it is
installed: a project memd first sees later is opened by installing again.
"""

from __future__ import annotations

import plistlib
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline import defaults
from pipeline.publish.plan import Homes
from pipeline.publish.targets import registry
from pipeline.settings import Settings
from pipeline.sources import registry as sources
from pipeline.store_url import backend, sqlite_path

UNIT_NAME = "memd.service"
LAUNCHD_LABEL = "dev.memd.agent"
PLIST_NAME = f"{LAUNCHD_LABEL}.plist"
PASS_THROUGH_ENV = (
    *(name for name in defaults.ENV_INPUTS if name != "HOME"),
    *sources.default_env(),
    "MEMD_CONFIG",
)
"""Variables that change where memd reads or writes (the XDG folders of memd's own state and of
OpenCode; the agents' homes: ``CODEX_HOME``, ``COPILOT_HOME``...; the config file): carried into
the service when set, so the service reads the store `memd status` reads in the installing shell."""


def template_dir() -> Path:
    """``daemon/service_files`` in an installed wheel, ``systemd/`` beside ``daemon/`` in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "service_files", here.parent / "systemd"):
        if (candidate / UNIT_NAME).is_file():
            return candidate
    raise FileNotFoundError(f"memd's service templates are missing (looked in {here / 'service_files'})")


def memd_command() -> list[str]:
    """How the service should start this memd: the console script beside this interpreter, else
    the one on PATH, else ``python -P -m daemon`` with this interpreter (``-P``: a ``daemon`` folder
    where the service starts cannot stand in for memd's)."""
    beside = Path(sys.executable).parent / "memd"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("memd")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-P", "-m", "daemon"]


def run_args(command: Sequence[str], config: Path | None) -> list[str]:
    args = list(command)
    if config is not None:
        args += ["--config", str(config)]
    return [*args, "run"]


# systemd ---------------------------------------------------------------------------------------


def unit_path(env: Mapping[str, str]) -> Path:
    return defaults.config_home(env) / "systemd" / "user" / UNIT_NAME


def env_file(env: Mapping[str, str]) -> Path:
    """Where the service reads its environment (the API key) from."""
    return defaults.env_file(env)


def target_folders(settings: Settings, env: Mapping[str, str], projects: Sequence[str] = ()) -> list[Path]:
    """The folders the publish targets that are on write in, worked out by those targets from the
    same settings as publishing (a moved transcript root or ``CODEX_HOME`` moves both);
    ``projects``: the project folders memd knows (``agents_md`` writes in each)."""
    return registry.written_folders(Homes.from_settings(settings, env), settings.publish, projects)


def remote_path(settings: Settings) -> Path | None:
    """The repository ``[sync] remote`` names when it is a folder on this machine (a path or a
    ``file://`` URL), which a push writes in; None for a network remote or none."""
    url = settings.sync.remote
    if not url or is_network_remote(url):
        return None
    path = Path(url.removeprefix("file://")).expanduser()
    return path if path.is_absolute() else settings.paths.memory_dir / path  # git runs in memory_dir


def is_network_remote(url: str) -> bool:
    """``ssh://``, ``git://``, ``https://``... or scp-like ``host:path``: anything but a path or ``file://``."""
    if url.startswith("file://"):
        return False
    if "://" in url:
        return True
    head = url.split("/", 1)[0]
    return ":" in head  # git's own rule: a colon before the first slash is scp-like host:path


def needs_network(settings: Settings) -> bool:
    """memd reaches another machine: a PostgreSQL store or a network ``[sync] remote``."""
    remote = settings.sync.remote
    return backend(settings.paths.state_db) != "sqlite" or bool(remote and is_network_remote(remote))


def writable_paths(settings: Settings, env: Mapping[str, str], projects: Sequence[str] = ()) -> list[Path]:
    """What memd writes: its memory repository and state, the SQLite file's folder, a path
    ``[sync] remote``, and the folders of the publish targets that are on (``target_folders``)."""
    paths = [settings.paths.memory_dir, settings.paths.state_dir]
    db = sqlite_path(settings.paths.state_db)
    if db is not None:
        paths.append(db.parent)
    if (remote := remote_path(settings)) is not None:
        paths.append(remote)
    paths += target_folders(settings, env, projects)
    unique: list[Path] = []
    for p in paths:
        if p not in unique:
            unique.append(p)
    return unique


def _unit_quote(value: str) -> str:
    """One word of a unit file: specifiers escaped, quoted when it holds spaces or quotes."""
    value = value.replace("%", "%%")
    if any(c in value for c in ' \t"\\'):
        value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


NETWORK_TARGET = "network-online.target"


def render_unit(
    settings: Settings,
    *,
    command: Sequence[str],
    config: Path | None,
    env: Mapping[str, str],
    projects: Sequence[str] = (),
) -> str:
    """The unit for this installation; ``projects``: the project folders memd knows (see
    ``writable_paths``). It waits for the network only when memd needs one (``needs_network``)."""
    exec_start = " ".join(_unit_quote(a) for a in run_args(command, config))
    rw = " ".join(_unit_quote(f"-{p}") for p in writable_paths(settings, env, projects))
    extra_env = [f"Environment={_unit_quote(f'{k}={env[k]}')}" for k in PASS_THROUGH_ENV if env.get(k)]
    out: list[str] = []
    for line in (template_dir() / UNIT_NAME).read_text(encoding="utf-8").splitlines():
        if line.startswith("Description=") and needs_network(settings):
            out.extend([line, f"Wants={NETWORK_TARGET}", f"After={NETWORK_TARGET}"])
        elif line.startswith("ExecStart="):
            out.append(f"ExecStart={exec_start}")
        elif line.startswith("ReadWritePaths="):
            out.append(f"ReadWritePaths={rw}")
        elif line.startswith("EnvironmentFile="):
            # One path, taken as is (no quotes): only a specifier's % is escaped.
            out.extend([f"EnvironmentFile=-{str(env_file(env)).replace('%', '%%')}", *extra_env])
        else:
            out.append(line)
    return "\n".join(out) + "\n"


# launchd ---------------------------------------------------------------------------------------


def plist_path(env: Mapping[str, str]) -> Path:
    return defaults.home(env) / "Library" / "LaunchAgents" / PLIST_NAME


def log_dir(env: Mapping[str, str]) -> Path:
    return defaults.home(env) / "Library" / "Logs" / "memd"


PLIST_TYPES: dict[str, type | tuple[type, ...]] = {
    "Label": str,
    "ProgramArguments": list,
    "RunAtLoad": bool,
    "KeepAlive": (bool, dict),
    "ThrottleInterval": int,
    "ExitTimeOut": int,
    "ProcessType": str,
    "LowPriorityIO": bool,
    "LowPriorityBackgroundIO": bool,
    "Nice": int,
    "Umask": int,
    "EnvironmentVariables": dict,
    "StandardOutPath": str,
    "StandardErrorPath": str,
    "WorkingDirectory": str,
}
"""launchd's key -> value type for every key memd writes (bool is checked before int: True is an int)."""


def check_plist(data: Mapping[str, Any]) -> list[str]:
    """Problems launchd would have with ``data``: unknown keys, wrong types, non-string env values."""
    problems = []
    for key, value in data.items():
        expected = PLIST_TYPES.get(key)
        if expected is None:
            problems.append(f"{key}: not a key memd writes")
            continue
        kinds = expected if isinstance(expected, tuple) else (expected,)
        if not any(isinstance(value, k) and not (k is int and isinstance(value, bool)) for k in kinds):
            problems.append(
                f"{key}: expected {' or '.join(k.__name__ for k in kinds)}, got {type(value).__name__}"
            )
    if not all(isinstance(a, str) for a in data.get("ProgramArguments", [])):
        problems.append("ProgramArguments: every argument must be a string")
    if not all(isinstance(v, str) for v in dict(data.get("EnvironmentVariables", {})).values()):
        problems.append("EnvironmentVariables: values must be strings")
    return problems


def render_plist(*, command: Sequence[str], config: Path | None, env: Mapping[str, str]) -> bytes:
    with (template_dir() / PLIST_NAME).open("rb") as f:
        data: dict[str, Any] = plistlib.load(f)
    data["ProgramArguments"] = run_args(command, config)
    logs = log_dir(env)
    data["StandardOutPath"] = str(logs / "memd.out.log")
    data["StandardErrorPath"] = str(logs / "memd.err.log")
    data["WorkingDirectory"] = str(defaults.home(env))
    environment = dict(data.get("EnvironmentVariables", {}))
    environment.update({k: env[k] for k in PASS_THROUGH_ENV if env.get(k)})
    data["EnvironmentVariables"] = environment
    problems = check_plist(data)
    if problems:
        raise ValueError("; ".join(problems))
    return plistlib.dumps(data, fmt=plistlib.FMT_XML)
