"""Syncing with ``[sync] remote`` as a person asks for it: `memd sync`, and the push after every change
they make (accept, forget, steer, consolidate now)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from pipeline.publish.run import PublishReport
    from pipeline.sync.run import SyncReport


@dataclass(frozen=True)
class Synced:
    report: SyncReport
    published: PublishReport | None
    """What publishing did when the merge changed the memory (None: it did not)."""


async def sync_now(rt: Runtime) -> Synced:
    """Fetch, check, merge, consolidate again what both sides changed (with a model), push; then
    publish when the merge changed the memory."""
    from pipeline.publish.run import publish_all  # lazy: daemon.usecases
    from pipeline.sync.now import sync_memory  # lazy: daemon.usecases

    settings = rt.settings()
    report = await sync_memory(
        rt.store, settings, rt.memory_repo(), rt.clock, rt.redactor(), model=rt.llm_or_none
    )
    published = await publish_all(rt.store, settings, rt.clock) if report.changed else None
    return Synced(report, published)


async def push_after(rt: Runtime) -> SyncReport | None:
    """After a change a person asked for: sync with ``[sync] remote`` (None without one). The scopes a
    merge combines are consolidated again by the daemon (no model call here)."""
    settings = rt.settings()
    if not settings.sync.enabled:
        return None
    from pipeline.sync.now import sync_memory  # lazy: daemon.usecases

    return await sync_memory(rt.store, settings, rt.memory_repo(), rt.clock, rt.redactor())
