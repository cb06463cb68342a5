"""The few settings the read side needs (`memd status`, `memd scan`'s quick check, `memd recall`,
the page, `memd mcp`), taken from the one settings loader (``daemon.config``): the settings table
is standard library only, so the fast paths read exactly what the daemon reads, with no second reader.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.config_layers import ConfigError
from pipeline import defaults, roster

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
    local_only: bool = False
    """``llm.local_only`` (`memd status` and the page say "local only")."""
    publish_targets: tuple[tuple[str, bool], ...] | None = None
    """Each ``[publish]`` key that turns a publish target on, and its value (`memd status` and the
    page list every agent's targets on or off); None: the defaults."""
    source_roots: tuple[tuple[str, Path], ...] = ()
    """``[sources.<name>] root`` of each agent: an agent whose own folder is absent but whose
    configured root is there is installed (moved)."""

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
            local_only=settings.llm.local_only,
            publish_targets=tuple(
                (name, settings.publish.on(name))
                for name in dict.fromkeys(k for agent in roster.agents() for k in agent.target_keys())
            ),
            source_roots=tuple((name, Path(settings.sources[name].root)) for name in roster.names()),
        )

    def publish_on(self) -> dict[str, bool]:
        """Each publish target key -> whether it is on (the defaults when the settings did not say)."""
        if self.publish_targets is not None:
            return dict(self.publish_targets)
        out = {k.name: k.default for k in roster.publish_keys() if isinstance(k.default, bool)}
        return {**out, roster.AGENTS_MD_KEY: False}


def read_settings(explicit: Path | None, env: Mapping[str, str] | None = None) -> LeanSettings:
    """The settings the daemon would use; ``ConfigError`` (naming file or variable and key) when
    they are refused."""
    from daemon.config import load_settings

    loaded = load_settings(explicit, os.environ if env is None else env)
    return LeanSettings.of(
        loaded.settings,
        config_path=loaded.path,
        config_exists=loaded.file_exists,
        inputs_key=loaded.inputs_key,
    )


def read_lean(explicit: Path | None, env: Mapping[str, str] | None = None) -> LeanSettings | None:
    """The settings, or None when they are refused (the caller's full path says why)."""
    try:
        return read_settings(explicit, env)
    except ConfigError:
        return None
