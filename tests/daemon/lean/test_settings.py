"""The lean settings agree with the full loader on the keys the fast side reads; the defaults come from one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import load_settings
from daemon.lean.settings import LeanSettings, read_lean
from pipeline import defaults
from pipeline.settings import LLMSettings, MemoriesSettings, SyncSettings

EVERY_KEY = (
    "[paths]\n"
    'state_db = "sqlite:////elsewhere/s.db"\n'
    'state_dir = "~/st"\n'
    'memory_dir = "/mem"\n'
    "[llm]\n"
    "daily_token_budget = 1234\n"
    "[memories]\n"
    "min_rate_limit_remaining_percent = 40.5\n"
    "[sync]\n"
    'remote = "git@github.com:me/memory.git"\n'
    'branch = "memory"\n'
)
EVERY_ENV = {
    "MEMD_PATHS__STATE_DB": "postgresql://u@h/db",
    "MEMD_PATHS__STATE_DIR": "/s",
    "MEMD_PATHS__MEMORY_DIR": "/m",
    "MEMD_LLM__DAILY_TOKEN_BUDGET": "99",
    "MEMD_MEMORIES__MIN_RATE_LIMIT_REMAINING_PERCENT": "10",
    "MEMD_SYNC__REMOTE": "https://git.example/me/memory",
    "MEMD_SYNC__BRANCH": "main2",
}


@pytest.mark.parametrize(
    ("file_text", "env"),
    [
        ("", {}),
        ("", {"XDG_STATE_HOME": "/xdg/state", "XDG_DATA_HOME": "/xdg/data"}),
        (EVERY_KEY, {}),
        ("", EVERY_ENV),
        (EVERY_KEY, EVERY_ENV),
    ],
    ids=["empty", "xdg", "every-key-in-the-file", "every-key-in-the-env", "both"],
)
def test_the_lean_settings_equal_the_full_loaders(
    tmp_path: Path, file_text: str, env: dict[str, str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(file_text)
    full_env = {"HOME": str(tmp_path), **env}
    full = load_settings(config, env=full_env)
    lean = read_lean(config, env=full_env)
    assert lean is not None
    expected = {
        "config_path": full.path,
        "config_exists": full.file_exists,
        "state_db": full.settings.paths.state_db,
        "state_dir": full.settings.paths.state_dir,
        "memory_dir": full.settings.paths.memory_dir,
        "daily_token_budget": full.settings.llm.daily_token_budget,
        "min_rate_limit_remaining_percent": full.settings.memories.min_rate_limit_remaining_percent,
        "sync_remote": full.settings.sync.remote,
        "sync_branch": full.settings.sync.branch,
        "inputs_key": full.inputs_key,
        "source_roots": tuple((name, full.settings.sources[name].root) for name in full.settings.sources),
    }
    assert {name: getattr(lean, name) for name in expected} == expected


def test_the_defaults_come_from_one_place() -> None:
    fields = LeanSettings.__dataclass_fields__
    assert (
        fields["min_rate_limit_remaining_percent"].default
        == MemoriesSettings().min_rate_limit_remaining_percent
        == defaults.MIN_RATE_LIMIT_REMAINING_PERCENT
    )
    assert (
        fields["daily_token_budget"].default
        == LLMSettings().daily_token_budget
        == defaults.DAILY_TOKEN_BUDGET
    )
    assert fields["sync_branch"].default == SyncSettings().branch == defaults.SYNC_BRANCH
    assert fields["sync_remote"].default == SyncSettings().remote == ""
