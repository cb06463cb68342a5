"""Which host each machine id is on, and whose person each machine is (team mode).

An installation names itself by the id in its state directory (``pipeline.machine``), which a copy
of that directory carries along. So the store keeps the host's own identity beside it
(``pipeline.machine.host_id``) and gives each pair a *machine key*, the name everything that is a
machine's own is kept under (its transcripts, extract jobs, instance lease, heartbeat, Message
Batches, publications; ``Store.machine``):

- the first host seen with an id keys by the id itself (every store made before keeps its rows);
- another host found with the same id while something runs under it there (an unexpired lease: its
  daemon, a run) is a second machine: its key is the id and its host's, and it starts from a copy of
  what the first had recorded of its transcripts (what the copied files held is the first's to
  extract, so nothing is extracted twice; neither marks the other's files gone nor takes over the
  other's leases);
- another host found with the id while nothing runs under it is where the installation moved (a
  restored backup, a state directory moved or restored in place): it takes the id's key over, with
  everything recorded under it, and nothing is extracted again or left behind.

`memd status` says when two hosts share an id (``shared_id``). ``person`` is the ``[team] person``
the machine last started with: a person's ``global/`` is built from the extracts of that person's
machines only (``pipeline.store.consolidation``), those bound to the person by their signing keys
(``Store.person_bound``, ``pipeline.team.people``): the name alone is a claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, literal, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from pipeline.store.engine import Store
from pipeline.store.read.keys import this_machine_key
from pipeline.store.read.rows import on_store
from pipeline.store.schema import leases, machines
from pipeline.store.schema import transcripts as t
from pipeline.vocabulary import TranscriptState


@dataclass(frozen=True)
class MachineRow:
    key: str
    machine_id: str
    host_id: str
    hostname: str
    person: str | None
    first_seen_at: datetime
    seen_at: datetime


def _row(r: object) -> MachineRow:
    return MachineRow(
        r.key,  # type: ignore[attr-defined]
        r.machine_id,  # type: ignore[attr-defined]
        r.host_id,  # type: ignore[attr-defined]
        r.hostname,  # type: ignore[attr-defined]
        r.person,  # type: ignore[attr-defined]
        r.first_seen_at,  # type: ignore[attr-defined]
        r.seen_at,  # type: ignore[attr-defined]
    )


IDENTIFY_LOCK = 7438202
"""The PostgreSQL advisory lock ``identify`` holds for its transaction (the migrations hold 7438201)."""


def second_key(machine_id: str, host: str) -> str:
    """The key of a host found second with ``machine_id``."""
    return f"{machine_id}-{host}"


async def identify(
    store: Store, *, machine_id: str, host: str, hostname: str, person: str | None, now: datetime
) -> str:
    """This installation's machine key (see the module docstring); sets ``store.machine``,
    ``store.host`` and ``store.person`` to it."""
    async with store.write() as conn:
        if store.dialect == "postgresql":  # two starts at once agree (SQLite's write lock does the same)
            await conn.execute(text(f"SELECT pg_advisory_xact_lock({IDENTIFY_LOCK})"))
        found = [
            _row(r)
            for r in (
                await conn.execute(
                    select(machines).where(machines.c.machine_id == machine_id).with_for_update()
                )
            ).all()
        ]
        mine = next((r for r in found if r.host_id == host), None)
        if mine is not None:
            key = mine.key
            await conn.execute(
                update(machines)
                .where(machines.c.key == key)
                .values(hostname=hostname, person=person, seen_at=now)
            )
        elif (
            first := next((r for r in found if r.key == machine_id), None)
        ) is not None and not await _alive(conn, machine_id, now):
            # Nothing runs under the id where it was: the installation moved here (a restored backup,
            # a renamed state directory), and keeps its key and everything recorded under it.
            key = machine_id
            await conn.execute(
                update(machines)
                .where(machines.c.key == key)
                .values(host_id=host, hostname=hostname, person=person, seen_at=now)
            )
        else:
            key = machine_id if first is None else second_key(machine_id, host)
            values = {
                "key": key,
                "machine_id": machine_id,
                "host_id": host,
                "hostname": hostname,
                "person": person,
                "first_seen_at": now,
                "seen_at": now,
            }
            await conn.execute(insert(machines).values(**values))
            if first is not None:
                await _fork_transcripts(conn, source=machine_id, into=key)
    store.machine, store.host, store.person = key, host, person
    return key


async def recognize(store: Store, *, machine_id: str, host: str | None) -> str:
    """This installation's machine key as recorded, changing nothing (a dry run): the key of the id on
    this host, else the id. Sets ``store.machine``."""
    store.machine = await on_store(store, lambda rows: this_machine_key(rows, machine_id, host))
    return store.machine


async def _alive(conn: AsyncConnection, key: str, now: datetime) -> bool:
    """Whether something runs under ``key``: a lease of it (its daemon's, a run's) not expired yet."""
    stmt = select(leases.c.name).where(leases.c.machine == key, leases.c.expires_at > now).limit(1)
    return (await conn.execute(stmt)).first() is not None


COPIED_REASON = "extracted by the machine this installation is a copy of (same machine id, another host)"


async def _fork_transcripts(conn: AsyncConnection, *, source: str, into: str) -> None:
    """What ``source`` recorded of its transcripts, as ``into``'s own: a copy starts where its
    original was, and what its files held at the copy is the original's to extract (a session ready
    for extraction there is extracted there); only what they grow by after it is this machine's."""
    columns = [c for c in t.columns if c.name not in ("id", "machine")]
    chosen = select(*columns, literal(into).label("machine")).where(t.c.machine == source)
    await conn.execute(insert(t).from_select([*(c.name for c in columns), "machine"], chosen))
    await conn.execute(update(t).where(t.c.machine == into).values(extracted_offset=t.c.parsed_offset))
    await conn.execute(
        update(t)
        .where(t.c.machine == into, t.c.state == TranscriptState.ELIGIBLE)
        .values(state=TranscriptState.EXTRACTED, reason=COPIED_REASON, eligible_at=None)
    )


async def shared_id(store: Store) -> list[MachineRow]:
    """The other hosts found with this installation's machine id (empty: none)."""
    async with store.read() as conn:
        rows = (await conn.execute(select(machines))).all()
    every = [_row(r) for r in rows]
    mine = next((r for r in every if r.key == store.machine), None)
    if mine is None:
        return []
    return [r for r in every if r.machine_id == mine.machine_id and r.key != mine.key]


async def person_machines(store: Store) -> set[str]:
    """The keys of the machines of this installation's person (this machine's at least)."""
    if store.person is None:
        return {store.machine}
    async with store.read() as conn:
        keys = (await conn.execute(select(machines.c.key).where(machines.c.person == store.person))).scalars()
        bound = store.person_bound or frozenset()  # a name is a claim: only machines bound by their keys
        return {store.machine, *(key for key in keys if key in bound)}


async def claimants(store: Store, person: str) -> list[MachineRow]:
    """The machines that started with ``[team] person`` = ``person`` (a claim, not a proof)."""
    async with store.read() as conn:
        rows = (await conn.execute(select(machines).where(machines.c.person == person))).all()
    return [_row(r) for r in rows]
