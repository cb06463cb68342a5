"""Review mode: runs that committed to ``inbox/<run>`` wait here to be accepted or rejected.

Accepting lands the branch on the repository's branch (replayed onto it when other scopes moved
it meanwhile) and records the run's inputs as consumed; rejecting deletes the branch and also
records its inputs as consumed, so the same proposal is not made again until new input arrives
(the next run then sees the rejected sessions again in its workspace diff, beside the new ones).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.clock import Clock
from pipeline.consolidate.run import SCRATCH_USER
from pipeline.errors import MemdError
from pipeline.gitrepo.repository import MemoryRepo, scratch_parent
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store import consolidation as db
from pipeline.vocabulary import RunOutcome


@dataclass(frozen=True)
class InboxEntry:
    run: db.RunRow
    branch_exists: bool


async def pending(store: Store, repo: MemoryRepo) -> list[InboxEntry]:
    runs = await db.list_runs(store, outcomes=[RunOutcome.PENDING_REVIEW], limit=1000)
    branches = set(await repo.inbox_branches()) if (repo.path / ".git").is_dir() else set()
    return [InboxEntry(r, r.branch in branches) for r in sorted(runs, key=lambda r: r.started_at)]


async def find(store: Store, repo: MemoryRepo, run_id: str) -> InboxEntry:
    """The pending run ``run_id`` (a unique prefix is enough)."""
    matches = [e for e in await pending(store, repo) if e.run.run_id.startswith(run_id)]
    if not matches:
        raise MemdError(f"no pending run {run_id!r}: see `memd inbox`")
    if len(matches) > 1:
        raise MemdError(f"{run_id!r} matches {len(matches)} pending runs: give more of the run id")
    return matches[0]


async def show(store: Store, repo: MemoryRepo, run_id: str) -> tuple[InboxEntry, str]:
    """The run and its change as a patch (the commit message, then the diff)."""
    entry = await find(store, repo, run_id)
    if not entry.branch_exists or entry.run.branch is None:
        raise MemdError(f"the branch of run {entry.run.run_id} is gone from the memory repository")
    return entry, await repo.branch_patch(entry.run.branch)


async def accept(store: Store, settings: Settings, repo: MemoryRepo, clock: Clock, run_id: str) -> str:
    """Land the run; returns the repository's new HEAD."""
    entry = await find(store, repo, run_id)
    run = entry.run
    if not entry.branch_exists or run.branch is None:
        raise MemdError(f"the branch of run {run.run_id} is gone from the memory repository: reject it")
    head = await repo.accept(run.branch, scratch_parent(settings.paths.state_dir, SCRATCH_USER))
    now = clock.now()
    await db.finish_run(
        store, run.run_id, outcome=RunOutcome.ACCEPTED, now=now, commit=head, reason=run.reason
    )
    project = run.inputs.get("project")
    await db.save_success(
        store,
        run.scope,
        inputs=run.inputs.get("ids", []),
        consumed=run.inputs.get("consumed"),
        commit=head,
        project=project,
        now=now,
    )
    return head


async def reject(store: Store, repo: MemoryRepo, clock: Clock, run_id: str) -> db.RunRow:
    entry = await find(store, repo, run_id)
    run = entry.run
    if entry.branch_exists and run.branch is not None:
        await repo.reject(run.branch)
    now = clock.now()
    await db.finish_run(store, run.run_id, outcome=RunOutcome.REJECTED, now=now, reason=run.reason)
    await db.save_watermark(store, run.scope, inputs=run.inputs.get("ids", []), now=now)
    return run


async def drop_pending(store: Store, repo: MemoryRepo, clock: Clock, scope: str) -> list[str]:
    """Reject every pending run of ``scope`` without recording its inputs (``memd forget`` does this)."""
    dropped = []
    for entry in await pending(store, repo):
        if entry.run.scope != scope:
            continue
        if entry.branch_exists and entry.run.branch is not None:
            await repo.reject(entry.run.branch)
        await db.finish_run(
            store,
            entry.run.run_id,
            outcome=RunOutcome.REJECTED,
            now=clock.now(),
            reason="dropped by memd forget",
        )
        dropped.append(entry.run.run_id)
    return dropped
