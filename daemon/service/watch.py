"""File events on the transcript roots (watchfiles): a hint that brings the next scan forward.

Events are never the source of truth (an inotify queue overflows, a network file system sends
nothing); the periodic scan is. So anything that goes wrong here degrades to periodic scans only:
a root that does not exist is not watched (and is picked up by ``refresh()`` once it appears), and
a watcher that fails is logged and given up until the roots change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import structlog

log = structlog.get_logger(__name__)

WatchMode = Literal["events", "off"]


class SourceWatcher:
    def __init__(
        self,
        roots: Sequence[Path],
        on_change: Callable[[], None],
        *,
        debounce_ms: int = 2_000,
        step_ms: int = 500,
        force_polling: bool | None = None,
    ) -> None:
        self._roots = list(roots)
        self._on_change = on_change
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._force_polling = force_polling
        self._stopped = False
        self._restart = asyncio.Event()
        self._round_stop = asyncio.Event()
        self._failed_for: frozenset[Path] | None = None
        self.watched: frozenset[Path] = frozenset()
        self.mode: WatchMode = "off"
        self.started = asyncio.Event()
        """Set once the first round has decided what to watch (tests wait on it)."""

    def set_roots(self, roots: Sequence[Path]) -> None:
        self._roots = list(roots)
        self.refresh()

    def existing_roots(self) -> frozenset[Path]:
        return frozenset(r for r in self._roots if r.is_dir())

    def refresh(self) -> None:
        """Start watching again if the set of existing roots changed (a new agent installed, say)."""
        if self.existing_roots() != self.watched:
            self._restart.set()
            self._round_stop.set()

    def stop(self) -> None:
        self._stopped = True
        self._restart.set()
        self._round_stop.set()

    async def run(self) -> None:
        """Watch until ``stop()``; each round watches the roots that exist when it starts."""
        while not self._stopped:
            self._restart.clear()
            self._round_stop = asyncio.Event()
            roots = self.existing_roots()
            self.watched = roots
            if not roots or roots == self._failed_for:
                self.mode = "off"
                log.info("watch_off", reason="no source root exists" if not roots else "watching failed")
                self.started.set()
                await self._restart.wait()
                continue
            self.mode = "events"
            self.started.set()
            try:
                await self._watch(roots)
            except Exception as exc:  # inotify limits, permissions, a root removed under us
                self.mode = "off"
                self._failed_for = roots
                log.warning("watch_failed", error=f"{type(exc).__name__}: {exc}", fallback="periodic scans")
        self.mode = "off"

    async def _watch(self, roots: frozenset[Path]) -> None:
        from watchfiles import awatch

        log.info("watch_started", roots=sorted(str(r) for r in roots))
        async for _changes in awatch(
            *sorted(roots),
            stop_event=self._round_stop,
            debounce=self._debounce_ms,
            step=self._step_ms,
            force_polling=self._force_polling,
            ignore_permission_denied=True,
        ):
            if self._stopped:
                return
            self._on_change()
