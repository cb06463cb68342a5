"""What the last sync did, kept in the state store (``kv["sync.state:<machine>"]``: each machine has its
own memory repository, even on a shared store): the record ``SyncState``, written by the sync
(``save``) and read by one reader (``read``) for the sync itself (``load``) and `memd status`, which
shows it as it is. Importing it loads no SQLAlchemy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pipeline.store.read.keys import SYNC_STATE_KEY, kv_value, machine_key
from pipeline.store.read.rows import Rows, on_store
from pipeline.sync.urls import scrubbed, shown_url

if TYPE_CHECKING:
    from pipeline.store import Store

__all__ = ["STATE_KEY", "SyncState", "load", "read", "save", "scrub", "shown_url"]

STATE_KEY = SYNC_STATE_KEY


@dataclass
class SyncState:
    remote: str = ""
    """The remote as shown (``shown_url``: no credential)."""
    branch: str = ""
    outcome: str | None = None
    """None: never synced."""
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


_FIELDS = frozenset(f.name for f in fields(SyncState))


def scrub(state: SyncState, url: str) -> SyncState:
    """``state`` with no credential of ``url`` left in any of its texts (a state recorded before
    memd hid them all, or with an older token)."""
    for name, value in asdict(state).items():
        if isinstance(value, str):
            setattr(state, name, scrubbed(value, url))
    return state


def read(rows: Rows, machine: str) -> SyncState:
    """``machine``'s last sync as recorded (an empty record when it never synced)."""
    raw = kv_value(rows, machine_key(STATE_KEY, machine))
    if not isinstance(raw, dict):
        return SyncState()
    return SyncState(**{k: v for k, v in raw.items() if k in _FIELDS})


async def load(store: Store) -> SyncState:
    return await on_store(store, lambda rows: read(rows, store.machine))


async def save(store: Store, state: SyncState, *, now: datetime) -> None:
    from pipeline.store import kv

    value: dict[str, Any] = asdict(state)
    await kv.put(store, machine_key(STATE_KEY, store.machine), value, now=now)
