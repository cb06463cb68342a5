from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.store_url import backend, describe, sqlite_path


def test_sqlite_path() -> None:
    assert sqlite_path("sqlite:////var/x/state.db") == Path("/var/x/state.db")
    assert sqlite_path("sqlite+aiosqlite:///rel.db?timeout=3") == Path("rel.db")
    assert sqlite_path("sqlite:///~/state.db") == Path.home() / "state.db"
    assert sqlite_path("sqlite:///:memory:") is None
    assert sqlite_path("sqlite://") is None
    assert sqlite_path("postgresql://u@h/db") is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////x/state.db", "sqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite"),
        ("postgresql://u@h/db", "postgresql"),
        ("postgresql+asyncpg://u@h/db", "postgresql"),
        ("postgres://u@h/db", "postgresql"),
        ("mysql://u@h/db", None),
        ("sqlite:x.db", None),
        ("state.db", None),
    ],
)
def test_backend(url: str, expected: str | None) -> None:
    assert backend(url) == expected


def test_describe_hides_the_password() -> None:
    assert describe("postgresql://memd:s3cret@db/memd") == "postgresql://memd:***@db/memd"
    assert describe("postgresql://memd@db/memd") == "postgresql://memd@db/memd"
    assert describe("sqlite:////x/state.db") == "sqlite:////x/state.db"


def test_describe_hides_a_password_given_as_a_parameter() -> None:
    """The one describer of the store URL (the engine kept a second one): a ``password=``
    parameter is hidden too."""
    assert describe("postgresql://memd@db/memd?password=s3cret&sslmode=require") == (
        "postgresql://memd@db/memd?password=***&sslmode=require"
    )
    assert (
        describe("postgresql:///memd?host=/run/pg&PASSWORD=x")
        == "postgresql:///memd?host=/run/pg&PASSWORD=***"
    )
    assert describe("postgresql://memd:p@ss@db/memd") == "postgresql://memd:***@db/memd"


@pytest.mark.parametrize("url", ["mysql://u@h/db", "sqlite:x.db", "postgresql://u@h/db", "sqlite:////x.db"])
def test_the_settings_accept_the_urls_memd_can_open(tmp_path: Path, url: str) -> None:
    from daemon.config import ConfigError, load_settings

    config = tmp_path / "config.toml"
    config.write_text(f'[paths]\nstate_db = "{url}"\n')
    env = {"HOME": str(tmp_path)}
    try:
        load_settings(config, env=env)
        full_ok = True
    except ConfigError:
        full_ok = False
    assert full_ok is (backend(url) is not None)
