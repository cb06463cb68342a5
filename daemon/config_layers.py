"""Where memd's settings come from: the file, its TOML, the environment.

The file is ``--config PATH``, else ``$MEMD_CONFIG``, else ``$XDG_CONFIG_HOME/memd/config.toml``
(``config_path``: a missing default file is fine, a missing named file is an error). The overrides
are ``MEMD_<SECTION>__<KEY>`` variables, section and key in any case (``env_overrides``). Layers merge key
by key (``merge``), each value remembering its origin; the loader (``daemon.config``) checks the
result against the one settings table. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline import __version__, defaults
from pipeline.frozen import frozen_by_position

ENV_PREFIX = "MEMD_"
ENV_CONFIG = "MEMD_CONFIG"


class ConfigError(Exception):
    """A configuration problem a user can fix; the message names the file or variable and the key."""


@frozen_by_position
class Layers:
    """What the user said: the file (None: no file) and the environment's overrides, not yet merged."""

    path: Path
    raw: bytes | None
    file: dict[str, Any]
    env: dict[str, Any]
    env_names: dict[str, str]
    """Dotted key -> the variable that set it."""
    inputs_key: str


def read_layers(explicit: Path | None, env: Mapping[str, str]) -> Layers:
    """The config file and the environment's overrides; ``ConfigError`` names what is unreadable."""
    path, named = config_path(explicit, env)
    raw = _read_bytes(path, named)
    file_data = {} if raw is None else _parse_toml(path, raw)
    env_data, env_names = env_overrides(env)
    return Layers(path, raw, file_data, env_data, env_names, inputs_key(path, raw, env))


def config_path(explicit: Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file to read, and whether the user named it (a named file must exist)."""
    if explicit is not None:
        return explicit, True
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]), True
    return defaults.config_path(env), False


def inputs_key(path: Path, raw: bytes | None, env: Mapping[str, str]) -> str:
    """Names everything the settings are made from: memd's version, the config file (its path
    and bytes, or its absence) and the environment they read. Two loads with the same key give the
    same settings, so a cache written under one key (the scan index) can be trusted by a process
    that has not loaded the settings model at all."""
    from pipeline.roster import default_env

    key_env = {*defaults.ENV_INPUTS, *default_env()}
    h = hashlib.sha256(f"{__version__}\0{path}\0".encode())
    h.update(b"\1" if raw is None else b"\2" + raw)
    for name in sorted(env):
        if name.startswith(ENV_PREFIX) or name in key_env:
            h.update(f"\0{name}={env[name]}".encode())
    return h.hexdigest()[:32]


def _read_bytes(path: Path, named: bool) -> bytes | None:
    """The config file's bytes; None for a missing default file."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        if named:
            raise ConfigError(f"{path}: no such config file") from None
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def _parse_toml(path: Path, raw: bytes) -> dict[str, Any]:
    import tomllib  # with its patterns and ``string``: only when there is a file to read

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _is_override(name: str) -> bool:
    """``MEMD_<SECTION>__<KEY>``, the section and key in any case."""
    return name.startswith(ENV_PREFIX) and "__" in name


def env_overrides(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``MEMD_MEMORIES__MIN_USER_MESSAGES=2`` (or ``MEMD_memories__min_user_messages=2``) ->
    ``{"memories": {"min_user_messages": "2"}}``, and the dotted key's variable name."""
    data: dict[str, Any] = {}
    names: dict[str, str] = {}
    for name in sorted(env):
        if not _is_override(name):
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if not all(parts):
            raise ConfigError(f"environment {name}: malformed name (expected MEMD_<SECTION>__<KEY>)")
        dotted = ".".join(parts)
        if dotted in names:
            raise ConfigError(f"environment {name}: sets {dotted} as {names[dotted]} does")
        node = data
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"environment {name}: conflicts with another MEMD_ variable")
            node = child
        if isinstance(node.get(parts[-1]), dict):
            raise ConfigError(f"environment {name}: conflicts with another MEMD_ variable")
        node[parts[-1]] = _env_value(env[name])
        names[dotted] = name
    return data, names


def _env_value(value: str) -> Any:
    """Lists and tables come as JSON, ``true`` and ``false`` as TOML's; everything else stays a string
    for validation to coerce (a yes/no key takes nothing else)."""
    stripped = value.strip()
    if stripped in ("true", "false"):
        return stripped == "true"
    if stripped.startswith(("[", "{")):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return value
    return value


def merge(
    into: dict[str, Any], layer: Mapping[str, Any], origins: dict[str, str], origin: str, prefix: str = ""
) -> None:
    """``layer`` over ``into``, table by table; each value set records ``origin`` under its dotted key."""
    for key, value in layer.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            merge(into[key], value, origins, origin, f"{dotted}.")
        elif isinstance(value, Mapping):
            into[key] = {}
            merge(into[key], value, origins, origin, f"{dotted}.")
        else:
            into[key] = value
            origins[dotted] = origin
