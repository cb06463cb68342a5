"""A config file for a test: every path memd writes under the test's own folder."""

from __future__ import annotations

from pathlib import Path


def write_config(tmp_path: Path, extra: str = "", *, state_db: Path | None = None) -> Path:
    """``tmp_path/memd.toml`` with ``[paths]`` under ``tmp_path`` (the store at ``state_db``, default
    ``tmp_path/state.db``), then the TOML ``extra``."""
    config = tmp_path / "memd.toml"
    config.write_text(
        "[paths]\n"
        f'memory_dir = "{tmp_path / "memory"}"\n'
        f'state_db = "sqlite:///{state_db or tmp_path / "state.db"}"\n'
        f'state_dir = "{tmp_path / "state"}"\n' + extra
    )
    return config
