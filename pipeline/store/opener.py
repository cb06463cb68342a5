"""Opening the state store: the engine (``pipeline.store.engine``), then its schema brought up to
date or checked (``pipeline.store.migrations``)."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, OperationalError

from pipeline.errors import StoreError
from pipeline.machine import UNNAMED as UNNAMED_MACHINE
from pipeline.store.engine import Store, create_engine_for
from pipeline.store.migrations import check_schema, upgrade
from pipeline.store_url import describe


async def open_store(
    url: str, *, machine: str = UNNAMED_MACHINE, migrate: bool = True, pg_schema: str | None = None
) -> Store:
    """Open the store on ``machine`` (``pipeline.machine.machine_id``); with ``migrate`` bring its
    schema up to date (refusing a newer one)."""
    try:
        engine = create_engine_for(url, pg_schema=pg_schema)
    except OSError as exc:
        raise StoreError(f"cannot open the state store {describe(url)}: {exc.strerror or exc}") from None
    store = Store(engine, url, machine=machine)
    try:
        if migrate:
            await upgrade(store)
        else:
            await check_schema(store)
    except (OperationalError, DBAPIError, OSError) as exc:
        await engine.dispose()
        raise StoreError(f"cannot open the state store {describe(url)}: {_short(exc)}") from None
    except BaseException:
        await engine.dispose()
        raise
    return store


def _short(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc)
    return text.splitlines()[0] if text else type(exc).__name__
