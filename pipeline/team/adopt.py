"""Team mode: machines sharing one PostgreSQL store share their scopes, so each scope is
consolidated once (by whichever machine holds its lease) and every machine's memory repository
takes over what the others landed.

After a run lands (or an inbox run is accepted) the scope's folder is recorded in the store
(``pipeline.store.snapshots``). Another machine takes it over before it consolidates the scope
itself (under the scope's lease, so its own run builds on the other's memory) and at the end of
each phase 2 (so it publishes the same memory): the folder is written in a scratch copy, passes the
same validation as a consolidation of its own (the secret gate, the frontmatter, the caps, safe
paths), and lands as one commit naming the run and the machine it came from
(``Memd-Adopted: <run id>``). A folder that fails validation is refused with the reason (logged and
kept, so it is not tried again until that scope lands anew); local work goes on.
"""

from __future__ import annotations

import asyncio
import shutil
from datetime import datetime
from pathlib import Path
from typing import Protocol

import structlog

from pipeline.clock import Clock
from pipeline.errors import MemdError
from pipeline.memory.layout import Caps, check_file
from pipeline.memory.repository import MemoryRepo
from pipeline.memory.validate import SecretFinder, list_scope, validate_scope
from pipeline.store import Store, snapshots

log = structlog.get_logger(__name__)


class TeamContext(Protocol):
    """What taking over another machine's scope needs (phase 2's context gives it)."""

    @property
    def store(self) -> Store: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def repo(self) -> MemoryRepo: ...
    @property
    def scratch_parent(self) -> Path: ...
    @property
    def finder(self) -> SecretFinder | None: ...
    @property
    def caps(self) -> Caps: ...


ADOPTED_TRAILER = "Memd-Adopted"
"""The commit trailer naming the other machine's run a commit took over."""


def read_scope(scope_dir: Path) -> dict[str, str]:
    """Every regular file of a scope folder, by its path relative to it (none when it is gone)."""
    if not scope_dir.is_dir():
        return {}
    listing = list_scope(scope_dir)
    return {rel: (scope_dir / rel).read_text(encoding="utf-8") for rel in sorted(listing.files)}


async def record_landed(
    store: Store, scope: str, *, run_id: str, scope_dir: Path, host: str, now: datetime
) -> None:
    """Record the folder a run of this machine just landed (or a person accepted), for the machines
    sharing the store."""
    files = await asyncio.to_thread(read_scope, scope_dir)
    await snapshots.save(store, scope, run_id=run_id, host=host, files=files, now=now)


def _write(scope_dir: Path, files: dict[str, str]) -> None:
    shutil.rmtree(scope_dir, ignore_errors=True)
    for rel, text in files.items():
        path = scope_dir / check_file(rel)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(text, encoding="utf-8")


async def adopt(ctx: TeamContext, scope: str) -> bool:
    """Take over the folder another machine's run last landed for ``scope``, when this machine has
    not yet; True when it changed the repository. Raises ``MemdError`` when it could not try."""
    snap = await snapshots.get(ctx.store, scope)
    if snap is None or snap.machine == ctx.store.machine:
        return False
    done = (await snapshots.adopted(ctx.store)).get(scope)
    if done is not None and done.run_id == snap.run_id:
        return False
    repo = ctx.repo
    await repo.ensure()
    dirty = await repo.dirty_paths(scope)
    if dirty:
        raise MemdError(
            f"{scope} has uncommitted changes in {repo.path} (e.g. {dirty[0]}): the memory {snap.host} "
            "consolidated waits until they are committed or discarded"
        )
    base = await repo.head()
    assert base is not None
    now = ctx.clock.now()
    async with repo.scratch(ctx.scratch_parent, owner=f"run-adopt-{snap.run_id}", paths=[scope]) as clone:
        scope_dir = clone.path / scope
        try:
            await asyncio.to_thread(_write, scope_dir, snap.files)
            findings = validate_scope(scope_dir, ctx.caps, ctx.finder) if snap.files else []
        except (ValueError, OSError) as exc:
            findings = [str(exc)]
        if findings:
            reason = f"refused the memory of run {snap.run_id} from {snap.host}: " + "; ".join(findings[:5])
            await snapshots.record_adopted(ctx.store, scope, snap.run_id, now=now, refused=reason)
            log.warning("team_adoption_refused", scope=scope, run_id=snap.run_id, reason=reason[:500])
            return False
        await clone.stage(scope)
        changed = bool(await clone.staged_changes(scope))
        if changed:
            message = (
                f"memd: {scope}: take over run {snap.run_id} from {snap.host}\n\n"
                f"{ADOPTED_TRAILER}: {snap.run_id}\nMemd-Machine: {snap.machine}\n"
            )
            await clone.commit_staged(message)
            await repo.land(clone, base=base)
    await snapshots.record_adopted(ctx.store, scope, snap.run_id, now=now)
    log.info("team_adopted", scope=scope, run_id=snap.run_id, machine=snap.machine, changed=changed)
    return changed


async def adopt_all(ctx: TeamContext) -> list[str]:
    """Take over every scope another machine landed since this one last looked; the scopes changed.
    A scope that cannot be taken over now is logged and tried again next time."""
    changed = []
    for scope in await snapshots.to_adopt(ctx.store):
        try:
            if await adopt(ctx, scope):
                changed.append(scope)
        except (MemdError, OSError) as exc:
            log.warning("team_adoption_failed", scope=scope, error=str(exc)[:300])
    return changed
