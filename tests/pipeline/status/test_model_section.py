"""`memd status`'s model section: "local only" and what memd learned about each endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from daemon.cli.status import _model_rows
from pipeline.clock import FakeClock
from pipeline.llm import endpoint as endpoints
from pipeline.llm.endpoint import Endpoint
from pipeline.status import read as status_read
from pipeline.status.report import Model, as_json
from pipeline.store import Store
from pipeline.store.read import rows as status_rows
from tests.pipeline.status.test_read import current_schema, status_settings


async def sections(store: Store, clock: FakeClock, tmp_path: Path, *, local_only: bool) -> Any:
    # local only needs an endpoint on this machine (the settings refuse it otherwise)
    endpoint = {"provider": "openai", "base_url": "http://127.0.0.1:11434/v1"} if local_only else {}
    settings = status_settings(store.url, tmp_path, llm={"local_only": local_only, **endpoint})
    schema = await current_schema(store)

    def read() -> Any:
        rows = status_rows.open_rows(store.url, pg_schema=schema)
        try:
            return status_read.collect(rows, settings, now=clock.now(), pid_alive=lambda pid: True)
        finally:
            rows.close()

    return await asyncio.to_thread(read)


async def test_status_says_local_only_and_what_each_endpoint_refused(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    ollama = Endpoint("extract", "openai", "http://127.0.0.1:11434/v1", "")
    proxy = Endpoint("consolidation", "anthropic", "http://10.0.0.5:8080", "")
    await endpoints.learn(store, ollama, now=clock.now(), structured="json_object")
    await endpoints.learn(store, proxy, now=clock.now(), batches=False)
    await endpoints.learn(store, proxy, now=clock.now(), builtin_tools=False)

    found = await sections(store, clock, tmp_path, local_only=True)

    assert isinstance(found.model, Model)
    assert as_json(found)["model"] == {
        "local_only": True,
        "endpoints": {
            "openai http://127.0.0.1:11434/v1": "structured output: json_object",
            "anthropic http://10.0.0.5:8080": "no Message Batches, no built-in tool types",
        },
    }
    rows = _model_rows(found.model)
    assert rows[0][1].startswith("local only")
    assert ("endpoint", "anthropic http://10.0.0.5:8080: no Message Batches, no built-in tool types") in rows


async def test_no_local_only_line_when_it_is_off(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    found = await sections(store, clock, tmp_path, local_only=False)
    assert as_json(found)["model"] == {"local_only": False, "endpoints": {}}
    assert _model_rows(found.model) == []
