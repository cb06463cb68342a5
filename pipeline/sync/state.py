"""What the last sync did, kept in the state store (``kv["sync.state"]``) for `memd status`."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from pipeline.store import Store, kv

STATE_KEY = "sync.state"
_CREDENTIALS = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^@/]*@")


def shown_url(url: str) -> str:
    """A remote URL as memd shows and records it: never a password or a token (``https://x:y@host``)."""
    return _CREDENTIALS.sub(r"\1", url)


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


async def load(store: Store) -> SyncState:
    raw = await kv.get(store, STATE_KEY, None)
    if not isinstance(raw, dict):
        return SyncState()
    known = {k: v for k, v in raw.items() if k in SyncState.__dataclass_fields__}
    return SyncState(**known)


async def save(store: Store, state: SyncState, *, now: datetime) -> None:
    value: dict[str, Any] = asdict(state)
    await kv.put(store, STATE_KEY, value, now=now)
