"""The page reads the store through one reader for the whole process, which sees what is written
after it opened, and is opened again after a read that failed or after the page stopped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.ui.context import PageReader
from pipeline.store import Store, kv
from pipeline.store.read.keys import KV_SQL
from pipeline.store.read.rows import Rows
from pipeline.store.read.values import json_value


def value(rows: Rows) -> object:
    found = rows.all(KV_SQL, {"key": "k"})
    return json_value(found[0]["value"]) if found else None


async def test_every_page_read_goes_through_one_reader(sqlite_store: Store, tmp_path: object) -> None:
    reader = PageReader(lambda: f"sqlite:///{tmp_path}/state.db")
    try:
        first = await reader.read(lambda rows: rows)
        assert await reader.read(value) is None
        await kv.put(sqlite_store, "k", 1, now=datetime.now(UTC))
        assert await reader.read(value) == 1
        assert await reader.read(lambda rows: rows) is first
    finally:
        await reader.close()


async def test_a_failed_read_and_a_stop_open_a_new_reader(sqlite_store: Store, tmp_path: object) -> None:
    reader = PageReader(lambda: f"sqlite:///{tmp_path}/state.db")
    first = await reader.read(lambda rows: rows)

    def broken(rows: Rows) -> None:
        rows.all("SELECT no_such_column FROM kv")

    with pytest.raises(Exception, match="no_such_column"):
        await reader.read(broken)
    second = await reader.read(lambda rows: rows)
    assert second is not first
    await reader.close()
    third = await reader.read(lambda rows: rows)
    assert third is not second
    assert await reader.read(value) is None
    await reader.close()
