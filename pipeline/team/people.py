"""Team mode: a person is their keys. ``[team] person`` is a name any machine can write; what makes a
machine one of that person's is its signing key (``pipeline.gitrepo.signing``), bound to the person.

Each machine roots the binding in its own key: the person's keys, as this machine sees them, are its
own and every key one of them vouched for (``vouch``: `memd team add-machine LINE`, run on a machine
of the person for another of theirs; a signed record in the shared store). Each machine also records
a signed claim (``claim``: its person and its machine key in the store, signed with its key). A
machine counts as the person's here only when its claim is signed by a key bound to the person;
every other machine that starts with the same name is refused: its extracts never feed this
machine's ``global/``, nor this machine's its (``Store.person_bound``, read by
``pipeline.store.machines.person_machines``), and `memd status` says so (``PERSON_VERDICT_KEY``).

The records are in the shared store, which a teammate can write: a forged or copied record fails its
signature check (the machine key is in the signed text), and a deleted one only unbinds.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipeline.errors import MemdError
from pipeline.gitrepo.signing import Signer, sign_text, verify_text
from pipeline.store import Store, kv
from pipeline.store.machines import claimants
from pipeline.store.read.keys import PERSON_VERDICT_KEY

CLAIM_KEY = "team.person-claim:"
"""+ machine key: ``{"person", "key", "signature"}``."""
VOUCH_KEY = "team.person-vouch:"
"""+ person + ``:`` + a hash of the key vouched for: ``{"key", "by", "signature"}``."""
NAMESPACE = "memd-person"
MAX_RECORDS = 500


class NotAKeyLine(MemdError):
    """A `memd sync key` line was expected."""


def _claim_text(person: str, machine: str) -> bytes:
    return f"memd-person-claim 1\nperson {person}\nmachine {machine}\n".encode()


def _vouch_text(person: str, key: str) -> bytes:
    return f"memd-person-vouch 1\nperson {person}\nkey {key}\n".encode()


def key_of_line(line: str) -> str:
    """``<type> <base64>`` of a `memd sync key` line."""
    words = line.split()
    if len(words) < 2 or not words[-2].startswith(("ssh-", "ecdsa-")) or not words[-1].startswith("AAAA"):
        raise NotAKeyLine("not a `memd sync key` line (<principal> <key type> <key>)")
    return f"{words[-2]} {words[-1]}"


@dataclass
class Binding:
    person: str
    keys: set[str] = field(default_factory=set)
    machines: set[str] = field(default_factory=set)
    """Machine keys bound to the person (this one's included)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Machine key -> hostname of the machines that claim the person's name without a bound key."""

    def note(self) -> str | None:
        """What `memd status` says (None: no machine claims the name without the key)."""
        if not self.refused:
            return None
        who = ", ".join(f"{host} ({key[:12]})" for key, host in sorted(self.refused.items()))
        return (
            f"[team] person {self.person!r} is claimed by {len(self.refused)} machine(s) whose signing key is "
            f"not bound to it: {who}; refused: their extracts never build this machine's global/ memory, "
            "nor this machine's theirs. If one is yours, run `memd team add-machine LINE` here with its "
            "`memd sync key` line"
        )


async def vouch(store: Store, signer: Signer, person: str, line: str, *, now: datetime) -> str:
    """Bind the machine of ``line`` to ``person`` (this machine's own person), signed with this
    machine's key; returns the key bound."""
    key = key_of_line(line)
    signature = await asyncio.to_thread(sign_text, signer.key(), NAMESPACE, _vouch_text(person, key))
    by = await asyncio.to_thread(signer.public_key)
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    record = {"key": key, "by": by, "signature": signature}
    await kv.put(store, f"{VOUCH_KEY}{person}:{name}", record, now=now)
    return key


async def bind(store: Store, signer: Signer, person: str, *, now: datetime) -> Binding:
    """Record this machine's signed claim to ``person``, then find which machines claiming it are
    bound to it by their keys; sets ``store.person_bound`` and records the verdict for `memd status`."""
    own = await asyncio.to_thread(signer.public_key)
    signature = await asyncio.to_thread(
        sign_text, signer.key(), NAMESPACE, _claim_text(person, store.machine)
    )
    await kv.put(
        store, CLAIM_KEY + store.machine, {"person": person, "key": own, "signature": signature}, now=now
    )
    found = Binding(person, keys={own}, machines={store.machine})
    vouches = list((await kv.with_prefix(store, f"{VOUCH_KEY}{person}:", limit=MAX_RECORDS)).values())
    grew = True
    while grew:
        grew = False
        for v in vouches:
            if (
                not _record(v, "key", "by", "signature")
                or v["key"] in found.keys
                or v["by"] not in found.keys
            ):
                continue
            if await asyncio.to_thread(
                verify_text, v["by"], NAMESPACE, _vouch_text(person, v["key"]), v["signature"]
            ):
                found.keys.add(v["key"])
                grew = True
    claims = await kv.with_prefix(store, CLAIM_KEY, limit=MAX_RECORDS)
    for row in await claimants(store, person):
        if row.key == store.machine:
            continue
        claim: Any = claims.get(CLAIM_KEY + row.key)
        if (
            _record(claim, "person", "key", "signature")
            and claim["person"] == person
            and claim["key"] in found.keys
            and await asyncio.to_thread(
                verify_text, claim["key"], NAMESPACE, _claim_text(person, row.key), claim["signature"]
            )
        ):
            found.machines.add(row.key)
        else:
            found.refused[row.key] = row.hostname
    store.person_bound = frozenset(found.machines)
    verdict = {"person": person, "machines": len(found.machines), "note": found.note()}
    await kv.put(store, PERSON_VERDICT_KEY + store.machine, verdict, now=now)
    return found


def _record(value: Any, *fields: str) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(f), str) for f in fields)
