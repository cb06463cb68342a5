"""Team mode: a scope another machine consolidated is consolidated here only on top of that run.

Machines sharing a store share each scope's watermark and its last landed commit
(``scopes.last_commit``), so a scope is consolidated once for all of them; its result reaches the
other machines through the ``[sync]`` remote, never through the store. Until that commit has
arrived here (it is in this memory repository's branch), this machine does not consolidate the scope
again: it would build on an older memory and make the merge pay the model a second time. Without a
``[sync]`` remote nothing would ever arrive, so nothing waits (and `memd status` says memory does not
travel between the machines). Nor does a scope wait for ever: a run whose commit has not arrived
``patience`` after it landed (its machine lost it before pushing, or its pushes are refused) no longer
holds the scope, and this machine consolidates on what it has (the later merge, if it comes, is
consolidated again).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pipeline.gitrepo import remote
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store import consolidation as db


async def has_arrived(repo: MemoryRepo, commit: str) -> bool:
    """Whether ``commit`` is on this memory repository's branch."""
    if not (repo.path / ".git").is_dir():  # no memory repository yet: nothing has arrived
        return False
    head = await repo.head()
    if head is None or not await repo.has_commit(commit):
        return False
    return await remote.is_ancestor(repo, commit, head)


MIN_PATIENCE = timedelta(hours=1)
SYNCS_OF_PATIENCE = 4


def patience(settings: Settings) -> timedelta:
    """How long after it landed a run's commit may take to arrive before it stops holding its scope
    here: the scope's cooldown (no run sooner anyway), then four sync intervals, at least an hour."""
    cooldown = timedelta(minutes=settings.schedule.consolidate_cooldown_minutes)
    syncs = SYNCS_OF_PATIENCE * timedelta(minutes=settings.sync.interval_minutes)
    return cooldown + max(MIN_PATIENCE, syncs)


async def waiting_for(
    store: Store, settings: Settings, repo: MemoryRepo, scope: str, *, now: datetime
) -> str | None:
    """Why this machine may not consolidate ``scope`` now (None: it may): the last run another machine
    sharing the store landed for it has not arrived by sync yet."""
    if not store.shared or not settings.sync.enabled:
        return None
    state = await db.get_scope(store, scope)
    commit = state.last_commit if state is not None else None
    if state is None or not commit or await has_arrived(repo, commit):
        return None
    landed = state.last_success_at
    if landed is not None and now - landed > patience(settings):
        return None
    return (
        f"waits for commit {commit[:12]}, the last consolidation of this scope (by a machine sharing "
        "the state store), to arrive by sync from the [sync] remote"
    )
