"""What the last sync did, kept in the state store (``kv["sync.state:<machine>"]``: each machine has its
own memory repository, even on a shared store) for `memd status`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from pipeline.store import Store, kv
from pipeline.store.readmodel import SYNC_STATE_KEY, machine_key
from pipeline.sync.urls import scrubbed, shown_url

__all__ = ["STATE_KEY", "SyncState", "load", "save", "scrub", "shown_url"]

STATE_KEY = SYNC_STATE_KEY


@dataclass
class SyncState:
    remote: str = ""
    branch: str = ""
    outcome: str = ""
    reason: str | None = None
    at: str | None = None
    last_fetch_at: str | None = None
    last_push_at: str | None = None
    last_merge_at: str | None = None
    remote_head: str | None = None
    local_head: str | None = None
    ahead: int | None = None
    behind: int | None = None
    last_error: str | None = None
    last_error_at: str | None = None
    trust: str | None = None
    """Whether the remote trusts this machine, and which machines may sign (``pipeline.sync.trust``)."""
    refused: str | None = None
    """What the last refused sync refused and why (content no trusted machine wrote, a cap)."""
    refused_at: str | None = None


def scrub(state: SyncState, url: str) -> SyncState:
    """``state`` with no credential of ``url`` left in any of its texts (a state recorded before
    memd hid them all, or with an older token)."""
    for name, value in asdict(state).items():
        if isinstance(value, str):
            setattr(state, name, scrubbed(value, url))
    return state


async def load(store: Store) -> SyncState:
    raw = await kv.get(store, machine_key(STATE_KEY, store.machine), None)
    if not isinstance(raw, dict):
        return SyncState()
    known = {k: v for k, v in raw.items() if k in SyncState.__dataclass_fields__}
    return SyncState(**known)


async def save(store: Store, state: SyncState, *, now: datetime) -> None:
    value: dict[str, Any] = asdict(state)
    await kv.put(store, machine_key(STATE_KEY, store.machine), value, now=now)
