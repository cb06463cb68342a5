from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import (
    Column,
    Connection,
    Index,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    delete,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from pipeline.errors import SchemaTooNew, StoreError
from pipeline.store import Store, kv, open_store, schema
from pipeline.store.engine import create_engine_for
from pipeline.store.migrations import LATEST, check_schema, operations, upgrade
from pipeline.store.schema import schema_version
from tests.conftest import as_machine


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


# Version 1 -> 2: team mode ------------------------------------------------------------------------

_CHANGED = {"transcripts", "jobs", "leases", "heartbeats", "publications", "batches"}


def _version_1(conn: Connection) -> None:
    """A store as memd's schema version 1 made it: transcripts unique by path alone, no machine
    anywhere, no machines table; and the scope snapshots team mode once kept (``_v4_team`` drops them)."""
    old = MetaData()
    for table in (
        schema.transcripts,
        schema.jobs,
        schema.leases,
        schema.heartbeats,
        schema.publications,
        schema.batches,
    ):
        columns = [
            Column("path", Text, nullable=False, unique=True)
            if c.name == "path" and table is schema.transcripts
            else c._copy()
            for c in table.columns
            if c.name != "machine"
        ]
        extra = [UniqueConstraint("kind", "key", name="uq_jobs_kind_key")] if table is schema.jobs else []
        Table(table.name, old, *columns, *extra)
    Table("scope_snapshots", old, Column("scope", Text, primary_key=True), Column("files", Text))
    t = old.tables["transcripts"]
    Index("ix_transcripts_updated", t.c.updated_at)
    Index("ix_transcripts_state", t.c.state, t.c.last_activity)
    Index("ix_transcripts_source_state", t.c.source, t.c.state)
    Index("ix_transcripts_session", t.c.source, t.c.session_id)
    old.create_all(conn)
    schema.metadata.create_all(
        conn,
        tables=[t for t in schema.metadata.sorted_tables if t.name not in _CHANGED | {"machines"}],
    )
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    conn.execute(insert(schema.schema_version).values(id=1, version=1, migrated_at=now, memd_version="0.old"))
    conn.execute(
        insert(old.tables["transcripts"]),
        [
            {"source": "claude_code", "path": "/home/dev/a.jsonl", "first_seen_at": now, "updated_at": now},
            {"source": "codex", "path": "/home/dev/b.jsonl", "first_seen_at": now, "updated_at": now},
        ],
    )
    conn.execute(
        insert(schema.stage1_outputs).values(
            transcript_id=1,
            source="claude_code",
            session_id="s1",
            scope="global",
            range_start=0,
            range_end=10,
            rollout_slug="x",
            rollout_summary="x",
            raw_memory="x",
            memories=[],
            model="m",
            usage={},
            created_at=now,
        )
    )
    conn.execute(
        insert(old.tables["jobs"]).values(
            kind="extract", key="2", state="pending", created_at=now, updated_at=now
        )
    )
    lease = {"owner": "o", "host": "h", "pid": 1, "acquired_at": now, "heartbeat_at": now, "expires_at": now}
    conn.execute(insert(old.tables["leases"]).values(name="instance", **lease))
    conn.execute(
        insert(old.tables["heartbeats"]).values(
            instance="o", host="h", pid=1, version="0.old", started_at=now, beat_at=now
        )
    )
    conn.execute(
        insert(old.tables["batches"]).values(
            batch_id="msgbatch_1", phase="phase1", custom_ids={}, state="submitted", submitted_at=now
        )
    )
    conn.execute(
        insert(old.tables["publications"]).values(
            target="claude_code", scope="global", path="/home/dev/.claude/CLAUDE.md", outcome="written"
        )
    )


async def test_a_version_1_store_migrates_its_rows_to_this_machine_and_keys_transcripts_by_machine(
    store: Store,
) -> None:
    # The fixture's store is migrated; empty it and build version 1 in its place.
    def reset(conn: Connection) -> None:
        schema.metadata.drop_all(conn)
        _version_1(conn)

    async with store.write() as conn:
        await conn.run_sync(reset)
    async with as_machine(store, "m-old") as migrated:
        assert await check_schema(migrated) == LATEST
        async with migrated.read() as conn:
            rows = (await conn.execute(select(schema.transcripts.c.id, schema.transcripts.c.machine))).all()
            assert sorted(tuple(r) for r in rows) == [(1, "m-old"), (2, "m-old")]
            assert (await conn.execute(select(func.count()).select_from(schema.stage1_outputs))).scalar() == 1
            assert (await conn.execute(select(schema.jobs.c.machine))).scalars().all() == ["m-old"]
            assert (await conn.execute(select(schema.heartbeats.c.machine))).scalars().all() == ["m-old"]
            assert (await conn.execute(select(schema.publications.c.machine))).scalars().all() == ["m-old"]
            assert (await conn.execute(select(schema.batches.c.machine))).scalars().all() == ["m-old"]
            lease = (await conn.execute(select(schema.leases.c.name, schema.leases.c.machine))).one()
            indexes = await conn.run_sync(
                lambda c: {
                    i["name"]
                    for i in inspect(c).get_indexes("transcripts")
                    if not i.get("duplicates_constraint")  # PostgreSQL's unique constraint
                }
            )
            snapshots = await conn.run_sync(lambda c: inspect(c).has_table("scope_snapshots"))
            keyed = await conn.run_sync(lambda c: inspect(c).has_table("machines"))
        # SQLite keeps one instance per store; on PostgreSQL each machine holds its own.
        expected = "instance" if store.dialect == "sqlite" else "instance:m-old"
        assert tuple(lease) == (expected, "m-old")
        assert indexes == {i.name for i in schema.transcripts.indexes}  # each as schema.py has it
        assert not snapshots  # memory travels through the [sync] remote only (_v4_team)
        assert keyed
        now = datetime(2026, 11, 2, tzinfo=UTC)
        row = {"source": "claude_code", "path": "/home/dev/a.jsonl", "first_seen_at": now, "updated_at": now}
        async with migrated.write() as conn:  # the same path on another machine is another row
            await conn.execute(insert(schema.transcripts).values(machine="m-new", **row))
            # ... and so is its publication of the same scope to the same target
            await conn.execute(
                insert(schema.publications).values(
                    machine="m-new", target="claude_code", scope="global", path="/x", outcome="written"
                )
            )
        with pytest.raises(IntegrityError):
            async with migrated.write() as conn:  # ... but one machine has one row per path
                await conn.execute(insert(schema.transcripts).values(machine="m-old", **row))
        async with migrated.write() as conn:  # the references into the rebuilt table still hold
            await conn.execute(delete(schema.transcripts).where(schema.transcripts.c.id == 1))
        async with migrated.read() as conn:
            assert (await conn.execute(select(func.count()).select_from(schema.stage1_outputs))).scalar() == 0
        assert await upgrade(migrated) == LATEST  # and once migrated, nothing more to do


# Version 2 -> 3: the indexes `memd status` reads by -----------------------------------------------

_STATUS_INDEXES = (
    ("memory_uses", "ix_memory_uses_scope_used"),
    ("transcripts", "ix_transcripts_project_activity"),
    ("transcripts", "ix_transcripts_machine_state_eligible"),
)


async def test_a_version_2_store_gets_the_indexes_status_reads_by(store: Store) -> None:
    async with store.write() as conn:
        for _, name in _STATUS_INDEXES:
            await conn.exec_driver_sql(f"DROP INDEX {name}")
        await conn.execute(update(schema_version).values(version=2))
    assert await upgrade(store) == LATEST
    async with store.read() as conn:
        for table, name in _STATUS_INDEXES:
            found = await conn.run_sync(lambda c, t=table: {i["name"] for i in inspect(c).get_indexes(t)})
            assert name in found, table
