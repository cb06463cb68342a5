"""What memd says once, the first time it applies, so a default that is off is never silent: on a
machine with Codex sessions and nothing published for Codex, how to switch it on. Each hint is
remembered in the store (``kv``) once said: a later cycle, or another `memd run --once`, does not say
it again."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from pipeline import roster
from pipeline.settings import Settings
from pipeline.store import Store, kv

CODEX = "codex"
CODEX_KEYS = ("codex", "codex_global")
"""The ``[publish]`` keys that put memory where Codex loads it (``agents_md``: only in projects)."""
CODEX_SAID_KEY = "hint.codex_off"

CODEX_HINT = (
    "Codex sessions were found here, but memd publishes nothing Codex loads (its targets are off by "
    "default). To switch Codex on: set [publish] codex_global = true (the global scope in a block of "
    "$CODEX_HOME/AGENTS.md, which Codex always loads), or [publish] codex = true for its memory folder "
    "(Codex reads it only with [features] memories = true in $CODEX_HOME/config.toml); "
    "`memd mcp install codex` lets it ask memd. `memd status` lists what each agent gets."
)


def _has_session(root: Path) -> bool:
    agent = roster.find(CODEX)
    root = root.expanduser()
    if agent is None:
        return False
    try:
        return next(iter(agent.discover(root)), None) is not None
    except OSError:
        return False


async def codex_hint(store: Store, settings: Settings, *, now: datetime) -> str | None:
    """The hint to switch Codex on, once (then recorded as said), when this machine has Codex
    sessions and every Codex target is off; None otherwise."""
    if roster.find(CODEX) is None or any(settings.publish.on(key) for key in CODEX_KEYS):
        return None
    if await kv.get(store, CODEX_SAID_KEY):
        return None
    root = Path(settings.sources[CODEX].root)
    if not await asyncio.to_thread(_has_session, root):  # a walk of its folder: off the loop
        return None
    await kv.put(store, CODEX_SAID_KEY, {"at": now.isoformat()}, now=now)
    return CODEX_HINT
