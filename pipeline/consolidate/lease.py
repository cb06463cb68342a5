"""A scope's consolidation lease: taken before a run, renewed in the background, fenced at the end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import structlog

from pipeline.consolidate.context import Phase2Context
from pipeline.errors import LeaseLost, MemdError
from pipeline.proc import pid_alive
from pipeline.store import leases

log = structlog.get_logger(__name__)

LEASE_TTL = timedelta(minutes=10)
HEARTBEAT_S = 60.0


def holder_gone(ctx: Phase2Context) -> Callable[[leases.Holder], bool]:
    """Whether a lease's holder is a process of this machine that no longer exists (its lease is
    free). A holder on another machine sharing the store is never judged by its pid, which means
    nothing here: it keeps the scope until its lease expires (it renews every ``HEARTBEAT_S``)."""

    def gone(holder: leases.Holder) -> bool:
        if not holder.on_this_machine(ctx.store.machine) or holder.pid == ctx.pid:
            return False
        return not pid_alive(holder.pid)

    return gone


def lease_name(scope: str) -> str:
    """The name of ``scope``'s consolidation lease (a run, a forget's check, a person's change)."""
    return f"consolidate:{scope}"


async def acquire_scope(ctx: Phase2Context, scope: str, owner: str) -> leases.Holder | None:
    """Take ``scope``'s consolidation lease for ``owner``: None once taken, else who holds it."""
    got = await leases.acquire(
        ctx.store,
        lease_name(scope),
        owner=owner,
        host=ctx.host,
        pid=ctx.pid,
        now=ctx.clock.now(),
        ttl=LEASE_TTL,
        owner_gone=holder_gone(ctx),
    )
    return got if isinstance(got, leases.Holder) else None


class ScopeLease:
    """The scope's lease, renewed in the background; ``check()`` raises once it was lost."""

    def __init__(self, ctx: Phase2Context, name: str, owner: str) -> None:
        self.ctx, self.name, self.owner = ctx, name, owner
        self.lost: str | None = None
        self._task: asyncio.Task[None] | None = None

    async def renew(self) -> None:
        try:
            await leases.renew(
                self.ctx.store, self.name, owner=self.owner, now=self.ctx.clock.now(), ttl=LEASE_TTL
            )
        except LeaseLost as exc:
            self.lost = str(exc)
            raise

    async def _beat(self) -> None:
        while self.lost is None:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self.renew()
            except LeaseLost:
                log.warning("consolidation_lease_lost", lease=self.name)
            except MemdError as exc:
                log.warning("consolidation_heartbeat_failed", lease=self.name, error=str(exc)[:200])

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat(), name=f"heartbeat {self.name}")

    async def check(self, _turn: int = 0) -> None:
        if self.lost is not None:
            raise LeaseLost(self.lost)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        try:
            await leases.release(self.ctx.store, self.name, owner=self.owner)
        except MemdError as exc:
            log.warning("consolidation_lease_release_failed", lease=self.name, error=str(exc)[:200])
