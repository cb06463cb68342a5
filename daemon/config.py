"""Load the one settings object: defaults, then the TOML file, then ``MEMD_<SECTION>__<KEY>`` variables.

This is the only module that reads memd's configuration from the environment. The file is found
as ``--config PATH``, else ``$MEMD_CONFIG``, else ``$XDG_CONFIG_HOME/memd/config.toml`` (a missing
default file is fine; a missing named file is an error). Every value remembers where it came from,
so ``memd config show`` can say so and an error can name the file or variable and the key.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from daemon.status.config import ENV_PREFIX, config_path, inputs_key
from pipeline.settings import Settings, default_values

SECRET_KEYS = frozenset({"sync.remote", "paths.state_db"})
"""Keys whose value may carry a credential: a refusal names the key, never the value."""


class ConfigError(Exception):
    """A configuration problem a user can fix; the message names the file or variable and the key."""


@dataclass(frozen=True)
class LoadedSettings:
    settings: Settings
    path: Path
    file_exists: bool
    origins: Mapping[str, str] = field(default_factory=dict)
    """Dotted key -> "default", "file PATH" or "env NAME", for every key that was given a value."""
    inputs_key: str = ""
    """What the settings were made from (``daemon.status.config.inputs_key``)."""

    def origin(self, dotted_key: str) -> str:
        return self.origins.get(dotted_key, "default")


def resolve_config_path(explicit: Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file to read, and whether the user named it (a named file must exist)."""
    return config_path(explicit, env)


def load_settings(explicit: Path | None = None, env: Mapping[str, str] | None = None) -> LoadedSettings:
    env = dict(os.environ if env is None else env)
    path, named = resolve_config_path(explicit, env)
    raw = _read_bytes(path, named)
    file_data = {} if raw is None else _parse_toml(path, raw)
    env_data, env_names = _env_overrides(env)

    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    _merge(merged, default_values(env), origins, "default")
    _merge(merged, file_data, origins, f"file {path}")
    _merge(merged, env_data, origins, "env")
    for dotted, name in env_names.items():
        origins[dotted] = f"env {name}"

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path, origins)) from None
    return LoadedSettings(
        settings=settings,
        path=path,
        file_exists=raw is not None,
        origins=origins,
        inputs_key=inputs_key(path, raw, env),
    )


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
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _env_overrides(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``MEMD_MEMORIES__MIN_USER_MESSAGES=2`` -> ``{"memories": {"min_user_messages": "2"}}``."""
    data: dict[str, Any] = {}
    names: dict[str, str] = {}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if not all(parts):
            raise ConfigError(f"environment {name}: malformed name (expected MEMD_<SECTION>__<KEY>)")
        node = data
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"environment {name}: conflicts with another MEMD_ variable")
            node = child
        node[parts[-1]] = _env_value(value)
        names[".".join(parts)] = name
    return data, names


def _env_value(value: str) -> Any:
    """Lists and tables come as JSON; everything else stays a string for validation to coerce."""
    stripped = value.strip()
    if stripped.startswith(("[", "{")):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return value
    return value


def _merge(
    into: dict[str, Any], layer: Mapping[str, Any], origins: dict[str, str], origin: str, prefix: str = ""
) -> None:
    for key, value in layer.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value, origins, origin, f"{dotted}.")
        elif isinstance(value, Mapping):
            into[key] = {}
            _merge(into[key], value, origins, origin, f"{dotted}.")
        else:
            into[key] = value
            origins[dotted] = origin


def _describe(exc: ValidationError, path: Path, origins: Mapping[str, str]) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        dotted = ".".join(loc)
        origin = origins.get(dotted) or _nearest_origin(loc, origins)
        where = origin.removeprefix("file ") if origin.startswith("file ") else origin
        if origin == "default":
            where = str(path)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        got = error.get("input")
        secret = dotted in SECRET_KEYS  # a URL that may carry a credential is never echoed
        shown = not isinstance(got, dict) and error["type"] != "missing" and not secret
        detail = f" (got {got!r})" if shown else ""
        lines.append(f"{where}: {dotted}: {message}{detail}")
    return "\n".join(lines)


def _nearest_origin(loc: list[str], origins: Mapping[str, str]) -> str:
    """The origin of a section-level error: the origin of any key inside that section (``memorie``
    is not inside ``memories``)."""
    prefix = ".".join(loc) + "."
    for key, origin in origins.items():
        if key.startswith(prefix) and origin != "default":
            return origin
    return "default"
