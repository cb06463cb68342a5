"""The settings the fast read side needs (`memd status`, `memd scan`'s quick check, `memd recall`,
the page), read without pydantic when that is sure to give what the full loader would.

``read_lean`` reads the same file and the same ``MEMD_<SECTION>__<KEY>`` overrides as the full loader
(``daemon.config_layers``, which both call) and checks every value against the table of every key
(``daemon.lean.keys``). It returns None whenever it is not sure the full loader accepts the whole
configuration as it read it. ``read_settings`` then runs the full loader, which either accepts
(its settings are used) or raises ``ConfigError`` naming the file or variable and the key. So the
fast side never reads a store, a memory folder or a budget the daemon would not use, and never
accepts a configuration the daemon refuses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from daemon.config_layers import ConfigError, read_layers
from daemon.lean import keys
from pipeline import defaults

if TYPE_CHECKING:
    from pipeline.settings import Settings

__all__ = ["ConfigError", "LeanSettings", "read_lean", "read_settings"]


@dataclass(frozen=True)
class LeanSettings:
    config_path: Path
    config_exists: bool
    state_db: str
    state_dir: Path
    memory_dir: Path
    daily_token_budget: int | None = defaults.DAILY_TOKEN_BUDGET
    daily_budget_usd: float | None = defaults.DAILY_BUDGET_USD
    """0 or None: no dollar budget."""
    min_rate_limit_remaining_percent: float = defaults.MIN_RATE_LIMIT_REMAINING_PERCENT
    sync_remote: str = ""
    """``sync.remote`` (empty: no sync)."""
    sync_branch: str = defaults.SYNC_BRANCH
    inputs_key: str = ""
    """``daemon.config_layers.inputs_key`` of what these settings were read from."""
    remember_per_hour: int = defaults.REMEMBER_PER_HOUR
    """``notes.remember_per_hour`` (`memd mcp`'s ``memory_remember``)."""

    @classmethod
    def of(
        cls, settings: Settings, *, config_path: Path, config_exists: bool, inputs_key: str = ""
    ) -> LeanSettings:
        """The same keys, taken from the full settings."""
        return cls(
            config_path=config_path,
            config_exists=config_exists,
            state_db=settings.paths.state_db,
            state_dir=settings.paths.state_dir,
            memory_dir=settings.paths.memory_dir,
            daily_token_budget=settings.llm.daily_token_budget,
            daily_budget_usd=settings.llm.daily_budget_usd,
            min_rate_limit_remaining_percent=settings.memories.min_rate_limit_remaining_percent,
            sync_remote=settings.sync.remote,
            sync_branch=settings.sync.branch,
            inputs_key=inputs_key,
            remember_per_hour=settings.notes.remember_per_hour,
        )


def read_settings(explicit: Path | None, env: Mapping[str, str] | None = None) -> LeanSettings:
    """The settings the full loader would give; ``ConfigError`` (naming file or variable and key)
    when it refuses them."""
    env = os.environ if env is None else env
    lean = read_lean(explicit, env)
    if lean is not None:
        return lean
    from daemon.config import load_settings

    loaded = load_settings(explicit, env)
    return LeanSettings.of(
        loaded.settings,
        config_path=loaded.path,
        config_exists=loaded.file_exists,
        inputs_key=loaded.inputs_key,
    )


def read_lean(explicit: Path | None, env: Mapping[str, str] | None = None) -> LeanSettings | None:
    """The settings, or None when only the full loader can tell (whether they are valid, or what
    is wrong with them)."""
    env = os.environ if env is None else env
    try:
        layers = read_layers(explicit, env)
        given = keys.check(layers.file) | keys.check(layers.env)
        keys.check_related(given)
    except (ConfigError, keys.Unsure):
        return None

    def value(section: str, key: str, default: Any) -> Any:
        return given.get((section, key), default)

    return LeanSettings(
        config_path=layers.path,
        config_exists=layers.raw is not None,
        state_db=value("paths", "state_db", defaults.state_db(env)),
        state_dir=value("paths", "state_dir", defaults.state_dir(env)),
        memory_dir=value("paths", "memory_dir", defaults.memory_dir(env)),
        daily_token_budget=value("llm", "daily_token_budget", defaults.DAILY_TOKEN_BUDGET),
        daily_budget_usd=value("llm", "daily_budget_usd", defaults.DAILY_BUDGET_USD),
        min_rate_limit_remaining_percent=value(
            "memories", "min_rate_limit_remaining_percent", defaults.MIN_RATE_LIMIT_REMAINING_PERCENT
        ),
        sync_remote=value("sync", "remote", ""),
        sync_branch=value("sync", "branch", defaults.SYNC_BRANCH),
        inputs_key=layers.inputs_key,
        remember_per_hour=value("notes", "remember_per_hour", defaults.REMEMBER_PER_HOUR),
    )
