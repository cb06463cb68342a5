"""What memd says once, the first time it applies, so a default that is off is never silent: on a
machine with an agent's sessions and nothing published for it, how to switch it on (the agent's own
``off_hint``, in its folder). Each hint is remembered in the store (``kv``, ``hint.<agent>_off``) once
said: a later cycle, or another `memd run --once`, does not say it again."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from pipeline import roster
from pipeline.settings import Settings
from pipeline.store import Store, kv


def said_key(agent: roster.Agent) -> str:
    return f"hint.{agent.name}_off"


def _has_session(agent: roster.Agent, root: Path) -> bool:
    try:
        return next(iter(agent.discover(root.expanduser())), None) is not None
    except OSError:
        return False


def _all_off(agent: roster.Agent, settings: Settings) -> bool:
    keys = [key.name for key in agent.publish if isinstance(key.default, bool)]
    return bool(keys) and not any(settings.publish.on(key) for key in keys)


async def off_hints(store: Store, settings: Settings, *, now: datetime) -> list[str]:
    """The hints to switch an agent on, each once (then recorded as said): for every agent with
    sessions here whose every publish target is off."""
    said: list[str] = []
    for agent in roster.agents():
        if not agent.off_hint or not _all_off(agent, settings):
            continue
        if await kv.get(store, said_key(agent)):
            continue
        try:
            root = Path(settings.sources[agent.name].root)
        except KeyError:
            continue
        if not await asyncio.to_thread(_has_session, agent, root):  # a walk of its folder: off the loop
            continue
        await kv.put(store, said_key(agent), {"at": now.isoformat()}, now=now)
        said.append(agent.off_hint)
    return said
