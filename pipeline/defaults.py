"""The defaults other modules name besides the settings table (``pipeline.settings`` declares each
key with the constant here), and the one resolution of the home and XDG folders every other module
uses. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

ENV_INPUTS = ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")
"""The environment variables (besides ``MEMD_*``) the defaults below derive from; the sources' default
roots add their own (``pipeline.roster.default_env()``)."""

MIN_ROLLOUT_IDLE_HOURS = 6.0
"""``memories.min_rollout_idle_hours``."""
MAX_ROLLOUT_AGE_DAYS = 30.0
"""``memories.max_rollout_age_days``."""
MIN_RATE_LIMIT_REMAINING_PERCENT = 25.0
"""``memories.min_rate_limit_remaining_percent``."""
DAILY_TOKEN_BUDGET: int | None = None
DAILY_BUDGET_USD = 5.0
"""``llm.daily_budget_usd``: five dollars a UTC day. A day of ordinary use costs well under one
(docs/costs.md: cents a session, tens of cents a scope's run); the first cycle on a machine with a
month of sessions, or a loop, is what it stops: it spreads over days instead of one large bill.
0 means no budget (TOML has no way to unset a key)."""
REMEMBER_PER_HOUR = 10
"""``[notes] remember_per_hour``: notes one `memd mcp` session may hand memd in an hour."""
"""``llm.daily_token_budget``: no budget."""
UI_HOST = "127.0.0.1"
"""``ui.host``: the loopback address only (another address must be asked for)."""
UI_PORT = 8377
"""``ui.port``."""
SYNC_BRANCH = "main"
"""``sync.branch``: the remote branch the memory repository's branch syncs with."""
SYNC_INTERVAL_MINUTES = 15.0
"""``sync.interval_minutes``."""
SYNC_TIMEOUT_S = 120.0
"""``sync.timeout_s``: the most one git call against the remote (a fetch, a push) may take."""


def home(env: Mapping[str, str]) -> Path:
    """The user's home folder: ``$HOME``, else (unset or empty) the password database's."""
    return Path(env.get("HOME") or Path.home())


def xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    """An XDG base directory: ``$var`` when it is absolute, else ``~/fallback``."""
    value = env.get(var)
    if value and Path(value).is_absolute():
        return Path(value)
    return home(env) / fallback


def config_home(env: Mapping[str, str]) -> Path:
    """The user's configuration folder: ``$XDG_CONFIG_HOME``, else ``~/.config``."""
    return xdg(env, "XDG_CONFIG_HOME", ".config")


def config_path(env: Mapping[str, str]) -> Path:
    return config_home(env) / "memd" / "config.toml"


def env_file(env: Mapping[str, str]) -> Path:
    """The service's environment file (the API key), beside the config file."""
    return config_home(env) / "memd" / "env"


def state_dir(env: Mapping[str, str]) -> Path:
    """``paths.state_dir``."""
    return xdg(env, "XDG_STATE_HOME", ".local/state") / "memd"


def data_dir(env: Mapping[str, str]) -> Path:
    return xdg(env, "XDG_DATA_HOME", ".local/share") / "memd"


def memory_dir(env: Mapping[str, str]) -> Path:
    """``paths.memory_dir``."""
    return data_dir(env) / "memory"


def state_db(env: Mapping[str, str]) -> str:
    """``paths.state_db``: a SQLite file in the default state directory (whatever ``state_dir`` is set to)."""
    return f"sqlite:///{state_dir(env) / 'state.db'}"
