"""One memd per machine and state store: an instance lease in the store plus a lock file here.

Starting takes, in order:

1. an exclusive ``flock`` on ``<state_dir>/instance-<store digest>.lock`` (the kernel drops it
   when the process dies, however it dies), then
2. the instance lease in the state store (``instance_lease``): on SQLite one for the store, which
   a second state directory pointed at the same file cannot take either; on PostgreSQL one per
   machine (``instance:<machine id>``, ``pipeline.machine``), so machines sharing the store (team
   mode) each run one daemon, and share the scopes through the scopes' own leases.

A lease whose holder is gone is taken over at once: a holder on this machine whose process is dead,
whose pid is ours (a restarted container), or whose owner token is the one recorded in the lock
file we now hold (its lock is free, so it is gone). A holder on another machine keeps the lease
until it expires. Whoever is refused gets the holder's host, pid and start time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from pipeline.clock import Clock, parse_time
from pipeline.errors import InstanceBusy
from pipeline.proc import pid_alive
from pipeline.store import Store, heartbeats, jobs, leases
from pipeline.vocabulary import DaemonState

log = structlog.get_logger(__name__)

INSTANCE_LEASE = "instance"
"""The instance lease of a SQLite store, and the prefix of each machine's on PostgreSQL."""
LEASE_TTL = timedelta(seconds=120)
"""How long the instance lease lasts without renewal; the daemon renews it with every heartbeat."""


def instance_lease(store: Store) -> str:
    """The instance lease ``store.machine`` takes: the store's own on SQLite (a file on one
    machine), the machine's on PostgreSQL (which machines may share)."""
    return f"{INSTANCE_LEASE}:{store.machine}" if store.shared else INSTANCE_LEASE


def lock_path(state_dir: Path, store_url: str) -> Path:
    """The lock file of one state store (two stores may share a state directory)."""
    digest = hashlib.sha256(store_url.encode()).hexdigest()[:12]
    return state_dir / f"instance-{digest}.lock"


@dataclass(frozen=True)
class Predecessor:
    """The holder a start took the lease over from."""

    owner: str
    host: str
    pid: int


class InstanceGuard:
    """Holds the instance lock and lease for one daemon or one ``memd run --once``."""

    def __init__(
        self,
        store: Store,
        *,
        state_dir: Path,
        clock: Clock,
        owner: str,
        host: str,
        pid: int,
        ttl: timedelta = LEASE_TTL,
    ) -> None:
        self._store = store
        self.path = lock_path(state_dir, store.url)
        self._clock = clock
        self.owner = owner
        self.host = host
        self.pid = pid
        self.ttl = ttl
        self.lease = instance_lease(store)
        self._fd: int | None = None
        self.since: datetime | None = None

    async def acquire(self) -> Predecessor | None:
        """Take the lock and the lease; returns whom it took them over from. Raises ``InstanceBusy``."""
        self._lock_file()
        try:
            previous = self._read_lock_record()
            now = self._clock.now()

            def gone(holder: leases.Holder) -> bool:
                if not holder.on_this_machine(self._store.machine):
                    return False
                return holder.pid == self.pid or holder.owner == previous or not pid_alive(holder.pid)

            got = await leases.acquire(
                self._store,
                self.lease,
                owner=self.owner,
                host=self.host,
                pid=self.pid,
                now=now,
                ttl=self.ttl,
                owner_gone=gone,
            )
            if isinstance(got, leases.Holder):
                raise InstanceBusy(host=got.host, pid=got.pid, since=got.acquired_at)
            self.since = now
            self._write_lock_record(now)
        except BaseException:
            self._unlock_file()
            raise
        if got.took_over is None:
            return None
        taken = got.took_over
        log.warning("instance_taken_over", previous_host=taken.host, previous_pid=taken.pid)
        return Predecessor(owner=taken.owner, host=taken.host, pid=taken.pid)

    async def take(self) -> None:
        """``acquire``, then hand back at once what a dead predecessor held (its jobs, its leases),
        so nothing it left behind delays this start. Raises ``InstanceBusy``."""
        gone = await self.acquire()
        if gone is None:
            return
        now = self._clock.now()
        handed_back = await jobs.release_owner(self._store, gone.owner, now=now)
        released = await leases.release_all(self._store, owner=gone.owner)
        await heartbeats.stopped(
            self._store, instance=gone.owner, now=now, status={"state": DaemonState.CRASHED}
        )
        log.info("predecessor_cleaned_up", jobs_handed_back=handed_back, leases_released=released)

    async def give_back(self) -> None:
        """At a stop: hand back the jobs claimed under this owner, release every lease it holds,
        record the stop, drop the lock. A failing store is logged, not raised."""
        if self.since is not None:
            now = self._clock.now()
            try:
                handed_back = await jobs.release_owner(self._store, self.owner, now=now)
                await leases.release_all(self._store, owner=self.owner)
                await heartbeats.stopped(
                    self._store, instance=self.owner, now=now, status={"state": DaemonState.STOPPED}
                )
                log.info("released", jobs_handed_back=handed_back)
            except Exception as exc:
                log.error("release_failed", error=str(exc))
        try:
            await self.release()
        except Exception as exc:
            log.error("release_failed", error=str(exc))

    async def renew(self) -> None:
        """Extend the lease; raises ``LeaseLost`` when someone else has taken it."""
        await leases.renew(self._store, self.lease, owner=self.owner, now=self._clock.now(), ttl=self.ttl)

    async def release(self) -> None:
        """Give the lease back and drop the lock; safe to call when acquire failed or ran twice."""
        try:
            if self.since is not None:
                await leases.release(self._store, self.lease, owner=self.owner)
        finally:
            self.since = None
            self._unlock_file()

    # The lock file -------------------------------------------------------------------------------

    def _lock_file(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            record = _parse_record(_read_all(fd))
            os.close(fd)
            raise InstanceBusy(
                host=str(record.get("host", self.host)),
                pid=int(record.get("pid", 0) or 0),
                since=parse_time(record.get("since")),
                where=f": its lock is {self.path}",
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _unlock_file(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def _read_lock_record(self) -> str | None:
        """The owner token the last holder of this lock wrote, if any."""
        assert self._fd is not None
        owner = _parse_record(_read_all(self._fd)).get("owner")
        return owner if isinstance(owner, str) else None

    def _write_lock_record(self, since: datetime) -> None:
        assert self._fd is not None
        record = {"owner": self.owner, "host": self.host, "pid": self.pid, "since": since.isoformat()}
        data = json.dumps(record).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)


def _read_all(fd: int) -> bytes:
    return os.pread(fd, 4096, 0)


def _parse_record(data: bytes) -> dict[str, Any]:
    try:
        record = json.loads(data.decode() or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}
