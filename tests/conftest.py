"""Shared fixtures: an injected clock, a state store on SQLite and (when reachable) on PostgreSQL."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import structlog
from hypothesis import settings as hypothesis_settings

from pipeline.clock import FakeClock
from pipeline.sources import registry
from pipeline.store import Store, open_store
from tests.fakes.fixtures import fake_api, llm_factory  # noqa: F401  (the loopback fake Messages API)


def _isolate_home() -> None:
    """Run the whole suite, and every process it starts, in a throwaway home.

    memd publishes by default into the agents' folders it finds under ``HOME`` (Qwen Code's
    ``~/.qwen``...), so a test that runs memd with the developer's own home would write test memory
    into a real agent's memory. The agent homes memd reads from the environment are unset, the
    installed agent CLIs are still found where ``tests/agents_cli/install.sh`` put them, and git gets
    an identity for the commits tests make themselves."""
    real = os.environ.get("HOME") or os.path.expanduser("~")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(real, ".cache")
    os.environ.setdefault("MEMD_AGENT_CLIS", os.path.join(cache, "memd", "agent-clis"))
    base = tempfile.mkdtemp(prefix="memd-tests-home-")
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    os.environ["HOME"] = os.path.join(base, "home")
    os.mkdir(os.environ["HOME"], 0o700)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "MEMD_CONFIG"):
        os.environ.pop(var, None)
    for var in registry.default_env():
        os.environ.pop(var, None)
    for var in [v for v in os.environ if v.startswith("MEMD_") and "__" in v]:
        os.environ.pop(var)  # a developer's own settings overrides (MEMD_<SECTION>__<KEY>)
    for var in ("GIT_AUTHOR", "GIT_COMMITTER"):
        os.environ.setdefault(f"{var}_NAME", "memd tests")
        os.environ.setdefault(f"{var}_EMAIL", "tests@memd.invalid")


_isolate_home()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core. About a third of the suite's time is spent waiting on other
    processes (git, whole daemons, the agent CLIs, chromium), so one worker per core leaves the cores
    idle that long; two fill it (on two cores: 4 min instead of 5 min 40 s, and no gain past two).
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still overrides this."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return 2 * cores


# CI (``.ci/run`` sets CI=1) replays a fixed set of examples so a run is reproducible; a developer's
# run explores new ones. A failure either way is a bug, to be pinned as an explicit example.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

_DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _postgres_url() -> str | None:
    """MEMD_TEST_POSTGRES_URL (empty disables), else the local test database when it answers."""
    url = os.environ.get("MEMD_TEST_POSTGRES_URL")
    if url is not None:
        return url or None
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=0.5).close()
    except OSError:
        return None
    return _DEFAULT_POSTGRES_URL


POSTGRES_URL = _postgres_url()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is alive once the tests are collected (every module they import) lives for the whole run:
    keep it out of every later garbage collection, which then looks only at what the tests made
    (the fake API collects after each test that used it)."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the ``git daemon`` the sync tests of this process shared, if any ran here."""
    support = sys.modules.get("tests.pipeline.sync.support")
    if support is not None:
        support.stop_template()


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 11, 1, 12, 0, tzinfo=UTC))


def _backends() -> list[object]:
    pg = pytest.param(
        "postgresql",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(
                not POSTGRES_URL, reason="no PostgreSQL on 127.0.0.1:5432 and MEMD_TEST_POSTGRES_URL unset"
            ),
        ],
    )
    return ["sqlite", pg]


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite state store file migrated once for the session, copied by the store fixtures (opening
    a copy is a tenth of migrating a new file; tests/pipeline/store/test_migrations.py migrates its own)."""
    path = tmp_path_factory.mktemp("migrated") / "state.db"

    async def migrate() -> None:
        await (await open_store(f"sqlite:///{path}")).close()

    asyncio.run(migrate())
    return path


async def _open_sqlite_copy(template: Path, tmp_path: os.PathLike[str]) -> Store:
    db = Path(tmp_path) / "state.db"
    shutil.copyfile(template, db)
    return await open_store(f"sqlite:///{db}")


@pytest.fixture
async def sqlite_store(tmp_path: os.PathLike[str], migrated_sqlite: Path) -> AsyncIterator[Store]:
    """A state store at ``tmp_path/state.db`` only: for what reads the SQLite file itself."""
    s = await _open_sqlite_copy(migrated_sqlite, tmp_path)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(params=_backends())
async def store(
    request: pytest.FixtureRequest, tmp_path: os.PathLike[str], migrated_sqlite: Path
) -> AsyncIterator[Store]:
    """A migrated state store: a SQLite file in tmp_path, or a private schema in the PostgreSQL test database."""
    if request.param == "sqlite":
        s = await _open_sqlite_copy(migrated_sqlite, tmp_path)
        try:
            yield s
        finally:
            await s.close()
        return
    assert POSTGRES_URL
    schema = f"t_{uuid.uuid4().hex[:12]}"
    from sqlalchemy import text

    from pipeline.store.engine import create_engine_for

    engine = create_engine_for(POSTGRES_URL)
    async with engine.begin() as conn:
        await conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    s = await open_store(POSTGRES_URL, pg_schema=schema)
    try:
        yield s
    finally:
        await s.close()
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        await engine.dispose()


@contextlib.asynccontextmanager
async def as_machine(store: Store, machine: str) -> AsyncIterator[Store]:
    """The same state store (its SQLite file, or its PostgreSQL schema) opened by another machine."""
    schema = None
    if store.dialect == "postgresql":
        from sqlalchemy import text

        async with store.read() as conn:
            schema = str((await conn.execute(text("SELECT current_schema()"))).scalar_one())
    other = await open_store(store.url, machine=machine, pg_schema=schema)
    try:
        yield other
    finally:
        await other.close()


postgres_only = pytest.mark.parametrize("store", _backends()[1:], indirect=True)
"""A test of the ``store`` fixture on PostgreSQL alone (what only a shared store does); it skips
only where no PostgreSQL answers."""

sqlite_only = pytest.mark.parametrize("store", _backends()[:1], indirect=True)
"""A test of the ``store`` fixture on SQLite alone: behaviour above the store (what the model's
answers, a hostile file or an agent's folder make memd do). Every test whose subject is the store
(its records, claims, leases, machines) runs on both backends; a module or test marked so uses the
store only as the place its behaviour records to."""
