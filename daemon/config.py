"""Load the one settings object: defaults, then the TOML file, then ``MEMD_<SECTION>__<KEY>`` variables.

The file and the variables are read by ``daemon.config_layers``; the one settings table
(``pipeline.settings``, standard library only) checks them, for the daemon and every fast path alike: ``--config PATH``, else ``$MEMD_CONFIG``, else
``$XDG_CONFIG_HOME/memd/config.toml`` (a missing default file is fine; a missing named file is an
error). Every value remembers where it came from, so ``memd config show`` can say so and an error
can name the file or variable and the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from daemon.config_layers import ConfigError, config_path, merge, read_layers
from pipeline.frozen import frozen_by_position
from pipeline.settings import Settings, SettingsError, default_values, from_environment

SECRET_KEYS = frozenset({"sync.remote", "paths.state_db"})
"""Keys whose value may carry a credential: a refusal names the key, never the value."""

__all__ = ["ConfigError", "LoadedSettings", "load_settings", "resolve_config_path"]


@frozen_by_position
class LoadedSettings:
    settings: Settings
    path: Path
    file_exists: bool
    origins: Mapping[str, str] = field(default_factory=dict)
    """Dotted key -> "default", "file PATH" or "env NAME", for every key that was given a value."""
    inputs_key: str = ""
    """What the settings were made from (``daemon.config_layers.inputs_key``)."""

    def origin(self, dotted_key: str) -> str:
        return self.origins.get(dotted_key, "default")


def resolve_config_path(explicit: Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file to read, and whether the user named it (a named file must exist)."""
    return config_path(explicit, env)


def load_settings(explicit: Path | None = None, env: Mapping[str, str] | None = None) -> LoadedSettings:
    env = dict(os.environ if env is None else env)
    layers = read_layers(explicit, env)
    path = layers.path

    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    merge(merged, default_values(env), origins, "default")
    merge(merged, layers.file, origins, f"file {path}")
    merge(merged, from_environment(layers.env), origins, "env")
    for dotted, name in layers.env_names.items():
        origins[dotted] = f"env {name}"

    try:
        settings = Settings.model_validate(merged)
    except SettingsError as exc:
        raise ConfigError(_describe(exc, path, origins)) from None
    return LoadedSettings(
        settings=settings,
        path=path,
        file_exists=layers.raw is not None,
        origins=origins,
        inputs_key=layers.inputs_key,
    )


def _describe(exc: SettingsError, path: Path, origins: Mapping[str, str]) -> str:
    lines = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        dotted = ".".join(loc)
        origin = origins.get(dotted) or _nearest_origin(loc, origins)
        where = origin.removeprefix("file ") if origin.startswith("file ") else origin
        if origin == "default":
            where = str(path)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = _unknown(loc)
        got = error.get("input")
        secret = dotted in SECRET_KEYS  # a URL that may carry a credential is never echoed
        shown = not isinstance(got, dict) and error["type"] != "missing" and not secret
        detail = f" (got {got!r})" if shown else ""
        named = f"[{dotted}]" if error["type"] == "extra_forbidden" and len(loc) == 1 else dotted
        lines.append(f"{where}: {named}: {message}{detail}")
    return "\n".join(lines)


def _unknown(loc: list[str]) -> str:
    """What an unknown key or table is, with the known name nearest to it when one is close."""
    from pipeline.settings import source_keys, tables

    names = [name for name, _doc, _keys in tables()]
    if len(loc) == 1:
        known = [n for n in names if "." not in n]
    elif loc[0] == "sources":
        known = [k.name for k in source_keys()] if len(loc) == 3 else []
    else:
        table = ".".join(loc[:-1])
        known = [k.name for name, _doc, keys in tables() if name == table for k in keys or ()]
        known += [
            n.rsplit(".", 1)[1] for n in names if n.startswith(table + ".") and n.count(".") == len(loc) - 1
        ]
    what = "unknown section" if len(loc) == 1 else "unknown key"
    import difflib  # only when a key is refused as unknown

    near = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.75)
    if not near:
        return what
    return f"{what} (did you mean [{near[0]}]?)" if len(loc) == 1 else f"{what} (did you mean {near[0]}?)"


def _nearest_origin(loc: list[str], origins: Mapping[str, str]) -> str:
    """The origin of a section-level error: the origin of any key inside that section (``memorie``
    is not inside ``memories``)."""
    prefix = ".".join(loc) + "."
    for key, origin in origins.items():
        if key.startswith(prefix) and origin != "default":
            return origin
    return "default"
