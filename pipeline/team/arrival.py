"""Team mode: a scope another machine consolidated is consolidated here only on top of that run.

Machines sharing a store share each scope's watermark and its last landed commit
(``scopes.last_commit``), so a scope is consolidated once for all of them; its result reaches the
other machines through the ``[sync]`` remote, never through the store. Until that commit has
arrived here (it is in this memory repository's branch), this machine does not consolidate the scope
again: it would build on an older memory and make the merge pay the model a second time. Without a
``[sync]`` remote nothing would ever arrive, so nothing waits (and `memd status` says memory does not
travel between the machines).
"""

from __future__ import annotations

from pipeline.memory import remote
from pipeline.memory.repository import MemoryRepo
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store import consolidation as db


async def has_arrived(repo: MemoryRepo, commit: str) -> bool:
    """Whether ``commit`` is on this memory repository's branch."""
    head = await repo.head()
    if head is None or not await repo.has_commit(commit):
        return False
    return await remote.is_ancestor(repo, commit, head)


async def waiting_for(store: Store, settings: Settings, repo: MemoryRepo, scope: str) -> str | None:
    """Why this machine may not consolidate ``scope`` now (None: it may): the last run another machine
    sharing the store landed for it has not arrived by sync yet."""
    if not store.shared or not settings.sync.enabled:
        return None
    state = await db.get_scope(store, scope)
    commit = state.last_commit if state is not None else None
    if not commit or await has_arrived(repo, commit):
        return None
    return (
        f"waits for commit {commit[:12]}, the last consolidation of this scope (by a machine sharing "
        "the state store), to arrive by sync from the [sync] remote"
    )
