"""The idle scanner: find every session file, read only what changed, decide what is ready.

One scan walks each enabled source root. A file whose (device, inode, size, mtime) matches the last
scan costs one ``stat``; an appended file is parsed from the offset the last scan stopped at, with
the parser state it left; a rewritten or replaced file is parsed again from the start. Every
session then gets a state and a reason (``pipeline.scan.eligibility``), and an eligible one an
``extract`` job. A file read again from the start has its extract bookkeeping reset, so no turn
written over the old bytes is skipped. A parse reads no further than the size the walk's ``stat``
saw, through a descriptor checked to be a regular file (a FIFO or ``/dev/zero`` swapped in after
the ``stat`` is unreadable, never a hang). The file walk and the parsing run in a worker thread so the daemon's loop stays
responsive.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import structlog

from pipeline import roster
from pipeline.clock import Clock
from pipeline.gcpause import gc_paused
from pipeline.projects import ProjectResolver, has_ignore_file
from pipeline.roster import Places, WalkPlaces
from pipeline.scan import index as scan_index
from pipeline.scan.eligibility import Verdict, evaluate, facts_of
from pipeline.scan.view import ScanReport, read_view
from pipeline.settings import MemoriesSettings, Settings
from pipeline.sources.base import ParseResult, SourceAdapter, WalkingAdapter
from pipeline.sources.registry import adapter_for, walked
from pipeline.sources.registry import get as get_source
from pipeline.sources.walk import Walked, stat_paths
from pipeline.store import Store, kv
from pipeline.store import jobs as jobs_store
from pipeline.store import transcripts as transcripts_store
from pipeline.store.publications import known_projects
from pipeline.store.read.keys import machine_key
from pipeline.store.read.rows import on_store
from pipeline.store.read.sessions import Seen
from pipeline.store.transcripts import KnownFile
from pipeline.transcript import Transcript
from pipeline.vocabulary import JobKind, TranscriptState

log = structlog.get_logger(__name__)

SETTINGS_KEY = "scan.settings_hash"
"""Per machine (``settings_key``): machines sharing a store judge their own files by their own settings."""
LAST_SCAN_KEY = "scan.last"

MemoryReadHook = Callable[[Store, int, Transcript, datetime], Any]


@dataclass(frozen=True)
class Observation:
    """What one worker-thread pass saw of one file."""

    source: str  # a registered source's name (pipeline.sources.registry)
    path: str
    stat: tuple[int, int, int, int] | None  # dev, ino, size, mtime_ns
    result: ParseResult | None = None
    stat_error: str | None = None
    started_over: bool = False
    """The scanner read a file it had parsed before from byte 0 (it was replaced or shrank)."""


def settings_kv_key(store: Store) -> str:
    return machine_key(SETTINGS_KEY, store.machine)


def _settings_hash(settings: MemoriesSettings) -> str:
    return hashlib.sha256(settings.model_dump_json().encode()).hexdigest()[:16]


def _walk(
    source: str,
    adapter: SourceAdapter | None,
    root: Path,
    places: Callable[[Path], list[Walked]] | None = None,
) -> tuple[list[Walked], int]:
    """Walk one root (in a worker thread): one stat per file, the agent's own walk (a database's
    sessions), or its walk of the places memd knows; never raises for one bad file. The agent's
    walk is its folder's (``pipeline.sources.registry.walked``, as `memd scan`'s quick check walks):
    its parser is not loaded for it. An ``adapter`` given to the scan walks instead."""
    if not root.is_dir():
        return [], 0
    if places is not None:
        out = places(root)
    elif adapter is None:
        out = walked(get_source(source), root)
    elif isinstance(adapter, WalkingAdapter):
        out = adapter.walk(root)
    else:
        out = stat_paths(adapter.discover_paths(root))
    return out, len(out)


async def _place_walks(
    store: Store, settings: Settings, sources: Mapping[str, Path]
) -> dict[str, Callable[[Path], list[Walked]]]:
    """The walks of the sources that look in the projects memd knows (``Agent.walk_places``),
    given those projects; the store is asked only when one of them is enabled."""
    agents = {name: roster.find(name) for name in sources}
    wanting = {name: a.walk_places for name, a in agents.items() if a is not None and a.walk_places}
    if not wanting:
        return {}
    places = Places(tuple(await known_projects(store)), settings.paths.state_dir)

    def bound(walk: WalkPlaces) -> Callable[[Path], list[Walked]]:
        return lambda root: walk(root, places)

    return {name: bound(walk) for name, walk in wanting.items()}


def _parse(
    adapter: SourceAdapter,
    changed: list[Observation],
    known: Mapping[str, KnownFile],
    states: Mapping[int, Any],
) -> list[Observation]:
    """Parse the files that changed, each from where the last scan stopped when it can resume
    (the same file, not shorter than that point), and no further than the size its ``stat`` saw:
    bytes written since wait for the next scan."""
    out = []
    for obs in changed:
        assert obs.stat is not None
        prev = known.get(obs.path)
        start, state = 0, None
        resumable = prev is not None and prev.parse_ok and prev.stat[:2] == obs.stat[:2]
        if resumable and prev is not None and obs.stat[2] >= prev.parsed_offset and prev.id in states:
            start, state = prev.parsed_offset, states[prev.id]
        result = adapter.parse(Path(obs.path), start, state, with_items=False, max_bytes=obs.stat[2])
        started_over = prev is not None and prev.parsed_offset > 0 and start == 0
        out.append(Observation(obs.source, obs.path, obs.stat, result=result, started_over=started_over))
    return out


async def scan(
    store: Store,
    settings: Settings,
    clock: Clock,
    *,
    adapters: Mapping[str, SourceAdapter] | None = None,
    on_memory_reads: MemoryReadHook | None = None,
    collect_sessions: bool = True,
    notable_limit: int = 0,
    settings_key: str | None = None,
) -> ScanReport:
    """Scan every enabled source root, record what was found, and enqueue what is ready.

    ``collect_sessions`` also loads every session into the report; ``notable_limit`` loads up to
    that many of the eligible, failed, unreadable or just changed ones (what `memd scan` tables).
    ``settings_key`` names the settings (``daemon.config_layers.inputs_key``); the scan index
    records it so the next `memd scan` can see that nothing changed without loading them
    (``pipeline.scan.probe``)."""
    started = time.perf_counter()
    sources = {name: cfg.root for name, cfg in settings.sources.enabled().items()}
    given = adapters or {}
    # The walks (worker threads) and the read of what the last scan saw (the store) run side by side.
    place_walks = await _place_walks(store, settings, sources)
    walks = [
        asyncio.to_thread(_walk, source, given.get(source), root, place_walks.get(source))
        for source, root in sources.items()
    ]
    now = clock.now()
    index_file = scan_index.index_path(settings.paths.state_dir)
    gathered = await asyncio.gather(_seen(store, index_file), *walks)
    seen_files, previous = cast(tuple[dict[str, Seen], scan_index.Index | None], gathered[0])
    walk_results = cast(list[tuple[list[Walked], int]], gathered[1:])
    scan_pass = _ScanPass(store, settings, now, seen_files)
    now_ts = now.timestamp()
    settings_hash = _settings_hash(settings.memories)
    reevaluate_all = await kv.get(store, settings_kv_key(store)) != settings_hash
    seen_paths: set[str] = set()
    unreadable: set[str] = set()
    recheck: list[int] = []
    for source, (walked_files, seen) in zip(sources, walk_results, strict=True):
        scan_pass.report.files_seen += seen
        changed: list[Observation] = []
        with gc_paused():
            for path, stat_key, error in walked_files:
                seen_paths.add(path)
                if error is not None:
                    unreadable.add(path)
                prev = seen_files.get(path)
                if (
                    error is None
                    and prev is not None
                    and prev[2] == stat_key
                    and prev[4] != TranscriptState.GONE
                ):
                    # Unchanged: look again only when time (or the settings) may have moved its verdict.
                    if reevaluate_all or (prev[3] is not None and prev[3] <= now_ts):
                        recheck.append(prev[0])
                else:
                    changed.append(Observation(source, path, stat_key, stat_error=error))
        if changed:
            ids = [seen_files[o.path][0] for o in changed if o.path in seen_files]
            known, states = await transcripts_store.refresh(store, ids) if ids else ({}, {})
            scan_pass.known.update(known)
            for obs in changed:
                if obs.stat_error is not None:
                    scan_pass.observe_changed(obs)
            to_parse = [o for o in changed if o.stat_error is None]
            if to_parse:  # an agent's parser is loaded when one of its files changed, not before
                adapter = given.get(source) or adapter_for(source)
                for parsed in await asyncio.to_thread(_parse, adapter, to_parse, known, states):
                    scan_pass.observe_changed(parsed)
    await scan_pass.recheck(recheck)
    scan_pass.mark_gone(seen_paths, {str(s) for s in sources}, unreadable)
    await scan_pass.persist(on_memory_reads)

    report = scan_pass.report
    if reevaluate_all:
        await kv.put(store, settings_kv_key(store), settings_hash, now=scan_pass.now)
    roots: dict[str, str] = {source: str(root) for source, root in sources.items()}
    # Rewritten when the store changed, or to name these roots and settings. (A scan without a
    # key that changed nothing leaves the key: the verdicts it certifies did not move.)
    if (
        scan_pass.updates
        or report.enqueued
        or previous is None
        or previous.roots != roots
        or (settings_key is not None and previous.key != settings_key)
    ):
        await _save_index(store, index_file, settings_key, roots)
    await on_store(
        store,
        lambda rows: read_view(
            rows,
            report,
            notable_limit=notable_limit,
            collect_sessions=collect_sessions,
            machine=store.machine,
            changed=report.changed_paths,
        ),
    )
    report.duration_s = time.perf_counter() - started
    summary = {
        "files_seen": report.files_seen,
        "files_parsed": report.files_parsed,
        "bytes_parsed": report.bytes_parsed,
        "enqueued": report.enqueued,
        "duration_s": round(report.duration_s, 3),
    }
    await kv.put(
        store,
        machine_key(LAST_SCAN_KEY, store.machine),
        {"at": scan_pass.now.isoformat(), **summary},
        now=scan_pass.now,
    )
    log.info("scan_finished", **summary)
    return report


async def _seen(store: Store, index_file: Path) -> tuple[dict[str, Seen], scan_index.Index | None]:
    """What the last scan saw of every file: from the scan index when it matches the store (also
    returned), else from the store. (A file that changed is read again from the store before it is
    parsed.)"""
    generation = await transcripts_store.generation(store)
    index = await asyncio.to_thread(scan_index.load, index_file)
    if index is not None and index.generation == generation:
        return index.entries, index
    return await transcripts_store.seen_files(store), None


async def _save_index(store: Store, index_file: Path, key: str | None, roots: dict[str, str]) -> None:
    generation = await transcripts_store.generation(store)
    entries = await transcripts_store.seen_files(store)
    index = scan_index.Index(generation=generation, entries=entries, key=key, roots=roots)
    try:
        await asyncio.to_thread(scan_index.save, index_file, index)
    except OSError as exc:
        log.warning("scan_index_not_saved", path=str(index_file), error=str(exc))


class _ScanPass:
    """The bookkeeping of one scan: rows to write, jobs to enqueue, memory reads to record."""

    def __init__(self, store: Store, settings: Settings, now: datetime, seen: dict[str, Seen]) -> None:
        self.store = store
        self.settings = settings
        self.now = now
        self.seen = seen
        self.known: dict[str, KnownFile] = {}  # the full rows of the files that changed
        self.report = ScanReport(sessions=[])
        self.resolver = ProjectResolver()
        self.updates: list[dict[str, Any]] = []
        self.reads: list[tuple[str, Transcript]] = []
        self._ignored: dict[str, bool] = {}

    def project_opted_out(self, project: str | None) -> bool:
        if not project:
            return False
        if project not in self._ignored:
            self._ignored[project] = has_ignore_file(project)
        return self._ignored[project]

    def observe_changed(self, obs: Observation) -> None:
        prev = self.known.get(obs.path)
        self.report.changed_paths.add(obs.path)
        if obs.stat_error is not None:
            self.updates.append(_problem_row(obs, prev, self.now, obs.stat_error))
            return
        result = obs.result
        assert result is not None
        assert obs.stat is not None
        self.report.files_parsed += 1
        restarted = result.restarted or obs.started_over
        resumed_from = 0 if restarted or prev is None or not prev.parse_ok else prev.parsed_offset
        read = result.bytes_read if result.bytes_read is not None else result.new_offset - resumed_from
        self.report.bytes_parsed += max(0, read)
        if result.problem is not None or result.transcript is None:
            reason = str(result.problem) if result.problem else "no session in this file"
            self.updates.append(_problem_row(obs, prev, self.now, reason, retryable=result.retryable))
            return
        self.updates.append(self._session_row(obs, prev, result))
        if result.transcript.memory_reads:
            self.reads.append((obs.path, result.transcript))

    def _session_row(self, obs: Observation, prev: KnownFile | None, result: ParseResult) -> dict[str, Any]:
        t = result.transcript
        assert t is not None
        assert obs.stat is not None
        project = self.resolver.resolve(t.cwd, (prev.project if prev else None) or t.root)
        opted_out = self.project_opted_out(project)
        last_activity = t.last_activity or datetime.fromtimestamp(obs.stat[3] / 1e9, UTC)
        # A changed file is a new chance: a failure recorded for its old content does not stick. A
        # file read again from byte 0 (replaced, shrunk, or rewritten before the offset) is extracted
        # again from its start: what was extracted of the old bytes says nothing of the new ones.
        restarted = result.restarted or obs.started_over
        extracted_offset = prev.extracted_offset if prev is not None and not restarted else 0
        facts = facts_of(
            t,
            project=project,
            project_opted_out=opted_out,
            last_activity=last_activity,
            parsed_offset=result.new_offset,
            extracted_offset=extracted_offset,
        )
        row: dict[str, Any] = {
            "source": obs.source,
            "path": obs.path,
            "session_id": t.session_id,
            "cwd": t.cwd,
            "project": project,
            "dev": obs.stat[0],
            "ino": obs.stat[1],
            "size": obs.stat[2],
            "mtime_ns": obs.stat[3],
            "parsed_offset": result.new_offset,
            "parse_state": result.state,
            "user_messages": t.user_message_count,
            "started_at": t.started_at,
            "last_activity": last_activity,
            "flags": _flags(t, opted_out),
            "external_context": list(t.external_context),
            "extracted_offset": extracted_offset,
            **_verdict_columns(evaluate(facts, self.settings.memories, self.now)),
            "updated_at": self.now,
        }
        if prev is not None:
            row["id"] = prev.id
        return row

    async def recheck(self, ids: list[int]) -> None:
        """Unchanged files whose verdict may have moved with time (or with the settings)."""
        for facts_row in await transcripts_store.facts_for(self.store, ids):
            verdict = evaluate(facts_row.facts, self.settings.memories, self.now)
            if (verdict.state, verdict.reason) != (facts_row.state, facts_row.reason):
                self.updates.append({"id": facts_row.id, **_verdict_columns(verdict), "updated_at": self.now})
                self.report.changed_paths.add(facts_row.path)

    def mark_gone(self, seen_paths: set[str], scanned_sources: set[str], unreadable: set[str]) -> None:
        """Rows whose file the walk did not find. A session kept in a database the walk could not
        read (``<database>#<session>``, the database listed with its reason) is not gone; the
        database's own row, once its sessions are listed again, says so."""
        containers: set[str] | None = None
        for path, (rid, source, _stat, _idle_at, state) in self.seen.items():
            if path not in seen_paths and state != TranscriptState.GONE and source in scanned_sources:
                if unreadable and path.rpartition("#")[0] in unreadable:
                    continue
                if containers is None:
                    containers = {p.rpartition("#")[0] for p in seen_paths if "#" in p}
                self.updates.append(
                    {
                        "id": rid,
                        "state": TranscriptState.GONE,
                        "reason": "readable again: its sessions are listed one by one"
                        if path in containers
                        else "the file no longer exists",
                        "eligible_at": None,
                        "updated_at": self.now,
                    }
                )
                self.report.changed_paths.add(path)

    async def persist(self, on_memory_reads: MemoryReadHook | None) -> None:
        new_ids = await transcripts_store.apply_scan(self.store, self.updates, now=self.now)

        def row_id(path: str) -> int | None:
            seen = self.seen.get(path)
            return new_ids.get(path) or (seen[0] if seen else None)

        eligible = [
            row.get("id") or new_ids.get(row.get("path", ""))
            for row in self.updates
            if row.get("state") == TranscriptState.ELIGIBLE
        ]
        keys = [str(rid) for rid in eligible if rid is not None]
        await jobs_store.enqueue_many(self.store, JobKind.EXTRACT, keys, now=self.now, mine=True)
        self.report.enqueued = len(keys)
        if on_memory_reads is None:
            return
        for path, transcript in self.reads:
            rid = row_id(path)
            if rid is None:
                continue
            try:
                await on_memory_reads(self.store, rid, transcript, self.now)
            except Exception:
                log.exception("memory_use_recording_failed", path=path)


def _verdict_columns(verdict: Verdict) -> dict[str, Any]:
    return {"state": verdict.state, "reason": verdict.reason, "eligible_at": verdict.eligible_at}


def _flags(t: Transcript, project_opted_out: bool) -> dict[str, Any]:
    return {
        "subagent": t.subagent,
        "parent_session_id": t.parent_session_id,
        "forked_or_resumed": t.forked_or_resumed,
        "compacted": t.compacted,
        "compaction_run": t.compaction_run,
        "non_interactive": t.non_interactive,
        "memd_generated": t.memd_generated,
        "opted_out": t.opted_out,
        "project_opted_out": project_opted_out,
        "agent_version": t.agent_version,
        "parse_errors": t.parse_errors.count,
        "first_parse_error": t.parse_errors.first,
    }


def _problem_row(
    obs: Observation, prev: KnownFile | None, now: datetime, reason: str, *, retryable: bool = False
) -> dict[str, Any]:
    """A file that cannot be used (yet), recorded with its reason. It is read again once it changes:
    a file caught mid-write changes again when its writer finishes."""
    row: dict[str, Any] = {
        "source": obs.source,
        "path": obs.path,
        "state": TranscriptState.INCOMPLETE if retryable else TranscriptState.UNREADABLE,
        "reason": reason,
        "eligible_at": None,
        "updated_at": now,
        "dev": None,
        "ino": None,
        "size": None,
        "mtime_ns": None,
        "parse_state": {"unreadable": True},
    }
    if obs.stat is not None:
        row.update(dict(zip(("dev", "ino", "size", "mtime_ns"), obs.stat, strict=True)))
    if prev is not None:
        row["id"] = prev.id
    else:
        row.update({"session_id": None, "parsed_offset": 0, "user_messages": 0})
    return row
