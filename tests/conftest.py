"""Shared fixtures: an injected clock, a state store on SQLite and (when reachable) on PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import pytest
import structlog

from pipeline.clock import FakeClock
from pipeline.store import Store, open_store
from tests.fakes.fixtures import fake_api, llm_factory  # noqa: F401  (the loopback fake Messages API)

POSTGRES_URL = os.environ.get("MEMD_TEST_POSTGRES_URL")


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
            pytest.mark.skipif(not POSTGRES_URL, reason="MEMD_TEST_POSTGRES_URL is not set"),
        ],
    )
    return ["sqlite", pg]


@pytest.fixture(params=_backends())
async def store(request: pytest.FixtureRequest, tmp_path: os.PathLike[str]) -> AsyncIterator[Store]:
    """A migrated state store: a SQLite file in tmp_path, or a private schema in the PostgreSQL test database."""
    if request.param == "sqlite":
        s = await open_store(f"sqlite:///{tmp_path}/state.db")
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
