from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Column, Connection, Text, inspect, update

from pipeline.errors import SchemaTooNew, StoreError
from pipeline.store import Store, kv, open_store
from pipeline.store.engine import create_engine_for
from pipeline.store.migrations import LATEST, check_schema, operations, upgrade
from pipeline.store.schema import schema_version


async def test_upgrade_is_idempotent_and_records_the_version(store: Store) -> None:
    assert await upgrade(store) == LATEST
    assert await check_schema(store) == LATEST


async def test_a_migration_that_alters_a_table_gets_alembics_operations(store: Store) -> None:
    def add_note(conn: Connection) -> set[str]:
        operations(conn).add_column("kv", Column("note", Text, nullable=True))
        return {c["name"] for c in inspect(conn).get_columns("kv")}

    async with store.write() as conn:
        assert "note" in await conn.run_sync(add_note)


async def test_a_newer_schema_is_refused_with_a_clear_message(store: Store) -> None:
    async with store.write() as conn:
        await conn.execute(update(schema_version).values(version=LATEST + 1))
    with pytest.raises(SchemaTooNew, match="upgrade memd"):
        await upgrade(store)
    with pytest.raises(SchemaTooNew):
        await check_schema(store)


async def test_datetimes_round_trip_as_aware_utc_and_compare_across_offsets(store: Store) -> None:
    plus2 = timezone(timedelta(hours=2))
    await kv.put(store, "k", {"v": 1}, now=datetime(2026, 1, 1, 12, 0, tzinfo=plus2))
    got = await kv.get_with_time(store, "k")
    assert got is not None
    assert got[1] == datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert got[1].tzinfo is not None


async def test_naive_datetimes_are_refused(store: Store) -> None:
    with pytest.raises(Exception, match="naive datetime"):
        await kv.put(store, "k", 1, now=datetime(2026, 1, 1))


async def test_an_unreachable_store_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot open the state store"):
        await open_store(f"sqlite:///{blocker}/sub/state.db")


async def test_an_empty_store_is_reported_by_the_read_only_check(tmp_path: Path) -> None:
    raw = Store(create_engine_for(f"sqlite:///{tmp_path}/empty.db"), "x")
    try:
        with pytest.raises(StoreError, match="empty"):
            await check_schema(raw)
    finally:
        await raw.close()
