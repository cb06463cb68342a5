"""Uses of topics in the state store: how often each was used lately (search ranks by it), and
each topic a tool handed an agent, recorded as a use the way the hit rate records a session's
reads (``pipeline.store.hits.record_uses``, which also bumps the extracts behind the topic).

The store is never created or migrated here: a SQLite store that does not exist yet is left alone
(nothing is recorded, and every topic counts as unused), and a store whose schema is not this
memd's is not written. Recording runs on a thread of its own, so an answer never waits for the
store; ``close`` gives it a bounded time to finish.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import structlog

from pipeline.clock import Clock
from pipeline.hits.rate import WINDOW_DAYS
from pipeline.search.corpus import Topic
from pipeline.store_url import backend, sqlite_path

if TYPE_CHECKING:
    from pipeline.store.engine import Store

log = structlog.get_logger(__name__)

REFRESH_S = 60.0
"""How long the use counts are kept before they are read again."""
CLOSE_WAIT_S = 3.0
RECORD_TIMEOUT_S = 10.0
QUEUE_MAX = 1_000


class Uses:
    def __init__(self, state_db: str, clock: Clock) -> None:
        self.state_db = state_db
        self.clock = clock
        self._counts: dict[str, int] = {}
        self._read_at: float | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[datetime, tuple[Topic, ...]] | None] = queue.Queue(QUEUE_MAX)
        self._thread: threading.Thread | None = None
        self.recorded = 0
        """Uses written so far (tests and the benchmark read it)."""
        self.failed: str | None = None
        """Why recording stopped, when it did."""

    def _store_exists(self) -> bool:
        if backend(self.state_db) != "sqlite":
            return True
        path = sqlite_path(self.state_db)
        return path is not None and path.is_file()

    def counts(self) -> dict[str, int]:
        """Each topic id's uses in the hit rate's window (empty when the store cannot be read)."""
        with self._lock:
            now = time.monotonic()
            if self._read_at is not None and now - self._read_at < REFRESH_S:
                return self._counts
            self._read_at = now
            self._counts = self._read()
            return self._counts

    def _read(self) -> dict[str, int]:
        if not self._store_exists():
            return {}
        from pipeline.projects.scopes import topic_id_text
        from pipeline.store.read.rows import StoreUnavailable, open_rows
        from pipeline.store.read.uses import topic_uses

        try:
            rows = open_rows(self.state_db)
        except StoreUnavailable:
            return {}
        try:
            found = topic_uses(rows, self.clock.now() - timedelta(days=WINDOW_DAYS))
        except Exception as exc:  # a store of another version, a locked file: rank without uses
            log.warning(
                "mcp_uses_unreadable", reason=str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            )
            return {}
        finally:
            rows.close()
        return {topic_id_text(scope, file): uses for scope, file, uses in found}

    def record(self, topics: Sequence[Topic]) -> None:
        """Count each of ``topics`` as used now (in the background; dropped when the queue is full)."""
        if not topics or self.failed is not None or not self._store_exists():
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="memd-mcp-uses", daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait((self.clock.now(), tuple(topics)))
        except queue.Full:
            log.warning("mcp_uses_dropped", topics=len(topics), reason="the store is not keeping up")

    def close(self, timeout_s: float = CLOSE_WAIT_S) -> None:
        thread = self._thread
        if thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout_s)
        except queue.Full:
            return
        thread.join(timeout_s)

    def _run(self) -> None:
        """The recording thread: one event loop for its whole life (the store stays open on it)."""
        import asyncio

        store: Store | None = None
        with asyncio.Runner() as runner:
            try:
                while (item := self._queue.get()) is not None:
                    store = runner.run(self._record(store, *item))
            except Exception as exc:
                self.failed = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                log.warning("mcp_uses_not_recorded", reason=self.failed)
            finally:
                if store is not None:
                    runner.run(store.close())

    async def _record(self, store: Store | None, when: datetime, topics: tuple[Topic, ...]) -> Store:
        import asyncio

        from pipeline.store.hits import Use, record_uses

        if store is None:
            from daemon.runtime import open_store_reading

            store = await open_store_reading(self.state_db, timeout_s=RECORD_TIMEOUT_S)
        uses = [Use(scope=t.scope, file=t.file, used_at=when, sources=t.sources) for t in topics]
        self.recorded += await asyncio.wait_for(record_uses(store, None, uses), RECORD_TIMEOUT_S)
        return store
