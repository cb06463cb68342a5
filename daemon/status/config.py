"""The few settings `memd status` (and `memd scan`'s quick check) need, read without pydantic
(which costs more than the rest of either).

It reads the same file the full loader would (``--config``, ``$MEMD_CONFIG``, the XDG default:
``config_path``, which the full loader calls too), the same ``MEMD_<SECTION>__<KEY>`` overrides and
the same defaults (``pipeline.defaults``, which ``pipeline.settings`` uses), for these keys only:
``paths.state_db``, ``paths.state_dir``, ``paths.memory_dir``, ``llm.daily_token_budget``,
``memories.min_rate_limit_remaining_percent``, ``sync.remote``, ``sync.branch``. Anything it does not understand (a TOML error, a
value of the wrong type) makes it give up and return None; the caller then runs the full loader,
which says precisely what is wrong. A test checks it agrees with the full loader.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline import __version__, defaults
from pipeline.store_url import backend

if TYPE_CHECKING:
    from pipeline.settings import Settings

ENV_PREFIX = "MEMD_"
ENV_CONFIG = "MEMD_CONFIG"


@dataclass(frozen=True)
class StatusSettings:
    config_path: Path
    config_exists: bool
    state_db: str
    state_dir: Path
    memory_dir: Path
    daily_token_budget: int | None = defaults.DAILY_TOKEN_BUDGET
    min_rate_limit_remaining_percent: float = defaults.MIN_RATE_LIMIT_REMAINING_PERCENT
    sync_remote: str = ""
    """``sync.remote`` (empty: no sync)."""
    sync_branch: str = defaults.SYNC_BRANCH
    inputs_key: str = ""
    """``inputs_key`` of what these settings were read from."""

    @classmethod
    def of(cls, settings: Settings, *, config_path: Path, config_exists: bool) -> StatusSettings:
        """The same keys, taken from the full settings (the caller has loaded them anyway)."""
        return cls(
            config_path=config_path,
            config_exists=config_exists,
            state_db=settings.paths.state_db,
            state_dir=settings.paths.state_dir,
            memory_dir=settings.paths.memory_dir,
            daily_token_budget=settings.llm.daily_token_budget,
            min_rate_limit_remaining_percent=settings.memories.min_rate_limit_remaining_percent,
            sync_remote=settings.sync.remote,
            sync_branch=settings.sync.branch,
        )


def inputs_key(path: Path, raw: bytes | None, env: Mapping[str, str]) -> str:
    """Names everything the settings are made from: memd's version, the config file (its path
    and bytes, or its absence) and the environment they read. Two loads with the same key give the
    same settings, so a cache written under one key (the scan index) can be trusted by a process
    that has not loaded the settings model at all."""
    from pipeline.sources.registry import default_env

    key_env = {*defaults.ENV_INPUTS, *default_env()}
    h = hashlib.sha256(f"{__version__}\0{path}\0".encode())
    h.update(b"\1" if raw is None else b"\2" + raw)
    for name in sorted(env):
        if name.startswith(ENV_PREFIX) or name in key_env:
            h.update(f"\0{name}={env[name]}".encode())
    return h.hexdigest()[:32]


def config_path(explicit: Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file to read, and whether the user named it (a named file must exist)."""
    if explicit is not None:
        return explicit, True
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]), True
    return defaults.config_path(env), False


_KEYS = {
    ("paths", "state_db"): str,
    ("paths", "state_dir"): str,
    ("paths", "memory_dir"): str,
    ("llm", "daily_token_budget"): int,
    ("memories", "min_rate_limit_remaining_percent"): float,
    ("sync", "remote"): str,
    ("sync", "branch"): str,
}


def load_status_settings(
    explicit: Path | None, env: Mapping[str, str] | None = None
) -> StatusSettings | None:
    """The settings status needs, or None when only the full loader can tell what is wrong."""
    env = os.environ if env is None else env
    path, named = config_path(explicit, env)
    raw: bytes | None = None
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if named:
            return None
        data: dict[str, Any] = {}
    except OSError:
        return None
    else:
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None

    values: dict[tuple[str, str], Any] = {}
    for section, key in _KEYS:
        table = data.get(section, {})
        if not isinstance(table, dict):
            return None
        if key in table:
            values[(section, key)] = table[key]
        name = f"{ENV_PREFIX}{section.upper()}__{key.upper()}"
        if name in env:
            values[(section, key)] = env[name]
    try:
        checked = {k: _coerce(v, _KEYS[k]) for k, v in values.items()}
    except ValueError:
        return None

    state_dir = _user_path(checked.get(("paths", "state_dir"))) or defaults.state_dir(env)
    memory_dir = _user_path(checked.get(("paths", "memory_dir"))) or defaults.memory_dir(env)
    state_db = checked.get(("paths", "state_db")) or defaults.state_db(env)
    if backend(state_db) is None:
        return None
    budget = checked.get(("llm", "daily_token_budget"), defaults.DAILY_TOKEN_BUDGET)
    share = checked.get(
        ("memories", "min_rate_limit_remaining_percent"), defaults.MIN_RATE_LIMIT_REMAINING_PERCENT
    )
    return StatusSettings(
        config_path=path,
        config_exists=path.exists(),
        state_db=state_db,
        state_dir=state_dir,
        memory_dir=memory_dir,
        daily_token_budget=budget,
        min_rate_limit_remaining_percent=share,
        sync_remote=str(checked.get(("sync", "remote"), "")).strip(),
        sync_branch=checked.get(("sync", "branch"), defaults.SYNC_BRANCH),
        inputs_key=inputs_key(path, raw, env),
    )


def _coerce(value: Any, kind: type) -> Any:
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(value)
        return value
    if isinstance(value, bool):
        raise ValueError(value)
    if kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("+").isdigit():
            return int(value)
        raise ValueError(value)
    return float(value)


def _user_path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None
