"""What every handler of the page needs: ``UIContext`` (the settings, the store, the guard, the clock)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from daemon.status.config import StatusSettings
from daemon.ui.security import Guard
from pipeline.gcpause import gc_paused

if TYPE_CHECKING:
    from daemon.status.rows import Rows
    from pipeline.clock import Clock
    from pipeline.settings import Settings
    from pipeline.store import Store

T = TypeVar("T")


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

    @property
    def db(self) -> Store:
        assert self.store is not None, "the store opens with the app"
        return self.store

    def status_settings(self) -> StatusSettings:
        return StatusSettings.of(
            self.settings(), config_path=self.config_path, config_exists=self.config_exists
        )

    async def read(self, work: Callable[[Rows], T]) -> T:
        """``work`` on a fresh read-only reader of the store, in a worker thread."""
        from daemon.status.rows import open_rows

        url = self.settings().paths.state_db

        def run() -> T:
            # Thousands of small acyclic rows: the cyclic collector would only walk them (pipeline.gcpause).
            with gc_paused():
                rows = open_rows(url)
                try:
                    return work(rows)
                finally:
                    rows.close()

        return await asyncio.to_thread(run)
