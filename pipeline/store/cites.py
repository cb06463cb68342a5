"""What the code a topic cites held when the topic landed, and which topics are stale: two kv facts
of this machine (``pipeline.publish.stale`` writes them at every publish).

Kept in the state store, per machine, not in the topic's frontmatter: the fingerprints are of this
machine's checkout (another machine syncing the memory may hold the project at another commit, and
would mark a topic stale that is current here), they mean nothing to an agent reading the topic,
and the model never sees or edits them. No migration: a scope holds at most ``max_topic_files``
topics of at most 20 cites each.

- ``cites.baseline:<machine>``: ``{"<scope>/<file>": {"topic": <sha256 of the topic file>,
  "cites": {"<cite>": <sha256 of the lines> | null}}}``: what the lines held when this version of
  the topic was first published (null: the file was not there then);
- ``cites.stale:<machine>``: ``{"<scope>/<file>": {"reason": "...", "since": "<iso>"}}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.store import kv
from pipeline.store.engine import Store
from pipeline.store.read.keys import STALE_TOPICS_KEY, machine_key, stale_topics
from pipeline.store.read.rows import on_store

BASELINE_KEY = "cites.baseline"
STALE_KEY = STALE_TOPICS_KEY


async def load_baseline(store: Store) -> dict[str, Any]:
    value = await kv.get(store, machine_key(BASELINE_KEY, store.machine), {})
    return value if isinstance(value, dict) else {}


async def load_stale(store: Store) -> dict[str, dict[str, str]]:
    """``<scope>/<file>`` -> ``{"reason", "since"}`` of each topic published marked stale."""
    return await on_store(store, lambda rows: stale_topics(rows, store.machine))


async def stale_in_scope(store: Store, scope: str) -> dict[str, str]:
    """The stale topics of ``scope``: file -> why."""
    prefix = f"{scope}/"
    return {
        k.removeprefix(prefix): v["reason"]
        for k, v in (await load_stale(store)).items()
        if k.startswith(prefix)
    }


async def save(
    store: Store, baseline: dict[str, Any], stale: dict[str, dict[str, str]], *, now: datetime
) -> None:
    await kv.put(store, machine_key(BASELINE_KEY, store.machine), baseline, now=now)
    await kv.put(store, machine_key(STALE_KEY, store.machine), stale, now=now)
