"""Moving a project's scope to the key it has now (``pipeline.projects.project_key``).

A project's key comes from its repository's ``origin`` URL when it has one (else from its path), so
a key changes when memd first keys by origin (every repository with an ``origin`` had a path key
before), when an ``origin`` is added, changed or removed, or when the folder moves. Each such
project's folder ``projects/<old>/`` is renamed to ``projects/<new>/`` in one commit, and the state
store follows (its extracts, the scope's record, runs, publications and memory uses). When
``projects/<new>/`` already holds memory (the same repository cloned at two paths), the old folder's
inputs join it and the scope is consolidated again over both. Idempotent: run before each
consolidation, each sync and each `memd publish`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import structlog

from pipeline.clock import Clock
from pipeline.gitrepo.repository import MemoryRepo, scratch_parent
from pipeline.layout import GLOBAL_SCOPE, RAW_MEMORIES, ROLLOUT_DIR, is_scope
from pipeline.memory.inputs import join_raw_sections, raw_sections
from pipeline.projects import scope_for, scope_for_path
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store import rekey as store_rekey

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Move:
    project: str
    old: str
    new: str
    merged: bool = False


async def planned_moves(store: Store, memory_dir: Path) -> list[Move]:
    """Each project whose recorded scope is not the one its key gives now; and, on a state store shared
    with other machines (team mode), each whose records another machine already moved while this
    machine's memory repository still has the folder under its path key."""
    moves = []
    for project, scope in await store_rekey.project_scopes(store):
        if scope == GLOBAL_SCOPE:
            continue
        new = await asyncio.to_thread(scope_for, project)
        if new != scope and is_scope(new) and is_scope(scope):
            moves.append(Move(project, scope, new))
            continue
        before = scope_for_path(project)
        if before != new and (memory_dir / before).is_dir() and not (memory_dir / new).exists():
            moves.append(Move(project, before, new))
    return moves


async def rekey(store: Store, settings: Settings, repo: MemoryRepo, clock: Clock) -> list[Move]:
    """Rename the folders of the projects whose key changed, in one commit, then the store's records."""
    moves = await planned_moves(store, repo.path)
    if not moves:
        return []
    await repo.ensure()
    done: list[Move] = []
    base = await repo.head()
    assert base is not None
    async with repo.scratch(scratch_parent(settings.paths.state_dir, "rekey"), owner="rekey") as clone:
        for move in moves:
            merged = await asyncio.to_thread(_move_folder, clone.path, move.old, move.new)
            done.append(Move(move.project, move.old, move.new, merged))
        await clone.stage_paths(".")
        if await clone.has_staged_changes():
            lines = "".join(f"projects/{m.old.split('/', 1)[1]} -> {m.new}\n" for m in done)
            await clone.commit_staged(
                "memd: scope keys follow the repository's identity (its origin URL)\n\n" + lines
            )
            await repo.land(clone, base=base)
    now = clock.now()
    for move in done:
        await store_rekey.rename_scope(
            store, project=move.project, old=move.old, new=move.new, merged=move.merged, now=now
        )
        log.info("scope_rekeyed", project=move.project, old=move.old, new=move.new, merged=move.merged)
    return done


def _move_folder(top: Path, old: str, new: str) -> bool:
    """Move ``old``'s folder to ``new``; True when ``new`` already held memory (inputs joined)."""
    source, target = top / old, top / new
    if not source.is_dir() or source.is_symlink():
        return target.is_dir()
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        return False
    inputs = source / ROLLOUT_DIR
    if inputs.is_dir():
        (target / ROLLOUT_DIR).mkdir(parents=True, exist_ok=True)
        for entry in inputs.iterdir():
            dest = target / ROLLOUT_DIR / entry.name
            if entry.is_file() and not entry.is_symlink() and not dest.exists():
                shutil.copyfile(entry, dest)
    old_raw, new_raw = source / RAW_MEMORIES, target / RAW_MEMORIES
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in (new_raw, old_raw) if p.is_file()]
    if texts:
        new_raw.write_text(join_raw_sections([s for t in texts for s in raw_sections(t)]), encoding="utf-8")
    shutil.rmtree(source)
    return True
