"""Stale memory is marked: at every publish, each topic's ``cites`` are checked against the project.

What the cited lines held is recorded the first time a version of a topic is published (its file's
SHA-256 says which version: a topic phase 2 rewrote is recorded again); at every later publish a
topic whose cited lines hash differently, or whose file is gone (or became a symlink, a FIFO, a file
over the cap: ``pipeline.memory.cites``), is stale. A stale topic is published with its index line
saying so and naming the file (``render.index_line``), listed in `memd status` and on its page, and
offered to phase 2: a topic newly stale marks its scope as needing a run
(``consolidation.mark_stale``), whose prompt lists it to fix or drop (``request.stale_text``).

A scope's project root is the folder the store recorded for it, else the first of its project
folders that exists (a repository cloned twice is one scope); the global scope has none, so its
cites are not checked.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from pipeline.memory import cites
from pipeline.publish.memfiles import list_scopes, read_scope
from pipeline.store import Store
from pipeline.store import cites as db
from pipeline.store.consolidation import mark_stale

log = structlog.get_logger(__name__)


Files = dict[str, list[bytes] | cites.Gone]
"""The project's files read so far in one check (each read once)."""


def _fingerprints(root: Path, topic_cites: tuple[str, ...], files: Files) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for text in topic_cites:
        try:
            out[text] = cites.fingerprint(root, cites.parse(text), files)
        except (cites.BadCite, cites.Gone):
            out[text] = None
    return out


def _why(root: Path, recorded: Mapping[str, Any], files: Files) -> str | None:
    """Why a topic whose cites were recorded as ``recorded`` is stale now (None: it is not)."""
    reasons = []
    for text, then in recorded.items():
        try:
            cite = cites.parse(text)
        except cites.BadCite:
            continue
        try:
            now = cites.fingerprint(root, cite, files)
        except cites.Gone as gone:
            reasons.append(f"{cite.path} {gone}")
            continue
        if then is not None and now != then:
            reasons.append(f"{cite.path} changed (lines {cite.first}-{cite.last})")
    return "; ".join(reasons) or None


def compare(
    memory_dir: Path, roots: Mapping[str, Path], baseline: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The baseline as it is after this publish, and each stale topic's reason (``<scope>/<file>``)."""
    after: dict[str, Any] = {}
    stale: dict[str, str] = {}
    for scope in list_scopes(memory_dir):
        root = roots.get(scope)
        if root is None:
            continue
        files: Files = {}
        for topic in read_scope(memory_dir, scope).topics:
            if not topic.cites:
                continue
            key = f"{scope}/{topic.file}"
            sha = hashlib.sha256(topic.text.encode("utf-8", "surrogateescape")).hexdigest()
            entry = baseline.get(key)
            if (
                not isinstance(entry, dict)
                or entry.get("topic") != sha
                or not isinstance(entry.get("cites"), dict)
            ):
                after[key] = {"topic": sha, "cites": _fingerprints(root, topic.cites, files)}
                entry = after[key]
            else:
                after[key] = entry
            if (why := _why(root, entry["cites"], files)) is not None:
                stale[key] = why
    return after, stale


def roots_of(projects: Mapping[str, str], folders: Mapping[str, list[str]]) -> dict[str, Path]:
    """Each scope's project root: the recorded project if it is a folder, else the first clone that is."""
    out: dict[str, Path] = {}
    for scope in set(projects) | set(folders):
        candidates = [projects[scope]] if scope in projects else []
        candidates += folders.get(scope, [])
        for folder in candidates:
            if folder and Path(folder).is_absolute() and Path(folder).is_dir():
                out[scope] = Path(folder)
                break
    return out


async def check_stale(
    store: Store, memory_dir: Path, roots: Mapping[str, Path], *, now: datetime, record: bool = True
) -> dict[str, str]:
    """``<scope>/<file>`` -> why, for every stale topic; with ``record``, the baseline and the stale
    list are saved and each scope with a newly stale topic is marked as needing a run."""
    baseline = await db.load_baseline(store)
    after, stale = await asyncio.to_thread(compare, memory_dir, roots, baseline)
    if record:
        before = await db.load_stale(store)
        saved = {
            k: {"reason": why, "since": before.get(k, {}).get("since") or now.isoformat()}
            for k, why in stale.items()
        }
        for scope in sorted({k.rsplit("/", 1)[0] for k in stale if k not in before}):
            await mark_stale(store, scope, now=now)
            log.info(
                "memory_stale", scope=scope, topics=sorted(k for k in stale if k.startswith(scope + "/"))
            )
        await db.save(store, after, saved, now=now)
    return stale
