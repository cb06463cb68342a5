"""What every handler of the page needs: ``UIContext`` (the settings, the store, the guard, the clock)
and the one reader of the state store the page's views read through."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from daemon.ui.security import Guard
from pipeline.gcpause import gc_paused

if TYPE_CHECKING:
    from pipeline.clock import Clock
    from pipeline.settings import Settings
    from pipeline.store import Store
    from pipeline.store.read.rows import OpenRows, Rows

T = TypeVar("T")


class PageReader:
    """One read-only reader of the store for the whole process, opened on first use and used from
    one worker thread (``sqlite3`` connections and the PostgreSQL reader's event loop stay on the
    thread that made them). A read that fails for a reason other than the store's own answer
    drops the reader; the next read opens a new one."""

    def __init__(self, url: Callable[[], str]) -> None:
        self._url = url
        self._rows: OpenRows | None = None
        self._thread: ThreadPoolExecutor | None = None

    async def read(self, work: Callable[[Rows], T]) -> T:
        """``work`` on the reader, in its thread."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memd-page-reader")
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._run, work)

    def _run(self, work: Callable[[Rows], T]) -> T:
        from pipeline.store.read.rows import open_rows

        # Thousands of small acyclic rows: the cyclic collector would only walk them (pipeline.gcpause).
        with gc_paused():
            if self._rows is None:
                self._rows = open_rows(self._url())
            try:
                return work(self._rows)
            except Exception:
                self._drop()
                raise

    def _drop(self) -> None:
        rows, self._rows = self._rows, None
        if rows is not None:
            rows.close()

    async def close(self) -> None:
        """Close the reader (in its thread) and stop the thread; a later read starts both again."""
        thread, self._thread = self._thread, None
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(thread, self._drop)
            thread.shutdown(wait=False)


@dataclass
class UIContext:
    settings: Callable[[], Settings]
    store: Store | None
    """The open store the changes go through; None: the app opens it on startup (and closes it)."""
    guard: Guard
    clock: Clock
    config_path: Path
    config_exists: bool
    env: Mapping[str, str]
    changing: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One change at a time: two clicks never accept, reject or forget at once."""
    reader: PageReader = field(init=False)
    """The page's one reader of the store (``read``)."""

    def __post_init__(self) -> None:
        self.reader = PageReader(lambda: self.settings().paths.state_db)

    @property
    def db(self) -> Store:
        assert self.store is not None, "the store opens with the app"
        return self.store

    async def read(self, work: Callable[[Rows], T]) -> T:
        """``work`` on the page's reader of the store, in its worker thread."""
        return await self.reader.read(work)
