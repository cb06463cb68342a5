"""A sync as memd runs it (`memd sync`, the daemon's ``sync`` step, after a forget or an accept): the
memory repository checked writable, the scope keys brought up to date (``rekey``), then ``pipeline.sync.run`` with the scopes a merge
combined consolidated again at once when a model client is at hand (else at the next
consolidation: the store marks them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pipeline.clock import Clock
from pipeline.consolidate.run import context
from pipeline.consolidate.scope_run import consolidate_scope
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.llm.protocol import ModelClient
from pipeline.projects.rekey import rekey
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.sync.run import SyncReport, sync
from pipeline.vocabulary import SyncOutcome

ModelSource = Callable[[], Awaitable[ModelClient | None]]
"""Gives the model client when a merge needs a consolidation (None: none now); called only then."""


async def sync_memory(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    redactor: SecretFinder | None,
    *,
    model: ModelSource | None = None,
    push: bool = True,
) -> SyncReport:
    if not settings.sync.enabled:
        return SyncReport(SyncOutcome.SKIPPED, reason="no [sync] remote is configured")

    async def again(scopes: list[str]) -> list[str]:
        llm = await model() if model is not None else None
        if llm is None:
            return [
                f"{scope}: consolidated again at the next consolidation (no model client now)"
                for scope in scopes
            ]
        ctx = context(store, settings, repo, clock, llm, redactor)
        lines = []
        for scope in scopes:
            result = await consolidate_scope(ctx, scope, force=True, rebuild=True)
            why = f" ({result.reason.splitlines()[0]})" if result.reason else ""
            lines.append(f"{scope}: consolidated again on top of the remote's topics: {result.outcome}{why}")
        return lines

    async def prepare() -> None:
        await rekey(store, settings, repo, clock)

    return await sync(
        store,
        settings,
        repo,
        clock,
        redactor,
        reconsolidate=again if model is not None else None,
        prepare=prepare,
        push=push,
    )
