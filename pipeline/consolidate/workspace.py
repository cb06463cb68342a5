"""A scope in a scratch copy: prepared for the agent, checked after it, committed when sound.

Preparing removes what memory never holds (symlinks, hidden and special files), materializes the
inputs, stages everything and takes the workspace diff since the scope's last successful run
(paths shown as the agent sees them, under ``/memories``). After the agent, memd restores the
inputs, stamps provenance, removes orphaned topics, and validates.

After a forget (a forgotten session still cited by a topic, or removed since the last run), memd
withdraws before the agent runs every topic citing a forgotten session, their index lines and
``memory_summary.md``; the diff then withholds the text of inputs, the digest and the withdrawn
topics (it names the changed inputs instead), so the agent rebuilds them from what remains. A digest
that is the placeholder a forget left (a session's without a model, or one memory's: ``memd memories
forget``; here, or on another machine: ``[sync]``) is removed the same way, for the agent to write it
again.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Literal

from pipeline.checks import duplicates, guard
from pipeline.checks.provenance import (
    ProvenanceReport,
    TopicSnapshot,
    apply_provenance,
    citing_topics,
    snapshot_topics,
    withdraw_topics,
)
from pipeline.checks.scope_rules import scope_findings
from pipeline.checks.tool_marks import tool_memories, unmarked_findings
from pipeline.checks.validate import strip_invisible, validate_scope
from pipeline.consolidate.plan import ScopePlan
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import (
    GLOBAL_SCOPE,
    INDEX,
    RAW_MEMORIES,
    ROLLOUT_DIR,
    SUMMARY,
    Caps,
    is_placeholder,
)
from pipeline.memory.current import superseded_findings
from pipeline.memory.inputs import changes_of, materialize, rest_on_tools_only
from pipeline.memory.likeness import ForgottenTopic
from pipeline.memory.listing import list_scope
from pipeline.notes.remember import note_id

DIFF_MAX_BYTES = 80_000
AGENT_VIEW = "memories/"
"""Where the agent sees the scope (the memory tool's ``/memories``): the diff's paths are shown under it."""
Mode = Literal["INIT", "INCREMENTAL"]
INIT_DIFF = "(INIT: there is no memory in this folder yet; read raw_memories.md and rollout_summaries/.)"
"""What a first run of a scope is shown in place of a diff."""


@dataclass
class Workspace:
    clone: MemoryRepo
    scope: str
    scope_dir: Path
    mode: Mode
    since: str
    sanitized: list[str]
    snapshot: dict[str, TopicSnapshot]
    changed_sessions: set[str]
    diff_text: str
    clean: Callable[[str], str] = field(default=str, repr=False)
    forgotten: set[str] = field(default_factory=set)
    """Every forgotten session of the scope (stripped from ``sources``)."""
    withdrawing: list[str] = field(default_factory=list)
    """The forgotten sessions this run withdraws what they taught (empty: nothing withdrawn)."""
    withdrawn: list[str] = field(default_factory=list)
    pinned_withdrawn: list[str] = field(default_factory=list)
    """The withdrawn topics the person had pinned: a forget outranks a pin, and says so."""
    """Topic files memd deleted before the agent ran, for it to rebuild from the remaining inputs."""
    foreign: Callable[[str], bool] | None = field(default=None, repr=False)
    """Whether a session's input is another machine's (``[sync]``): kept as it is, never pruned."""
    rebuild_digest: bool = False
    """``memory_summary.md`` was the placeholder a forget left (here or on another machine): memd
    removed it before the agent ran, for it to write the digest again from the remaining inputs."""
    held: guard.Held = field(default_factory=guard.Held)
    """What the person decided (edited, pinned, forgotten topics), enforced by ``check``."""


def _sanitize(scope_dir: Path) -> list[str]:
    """Remove symlinks, hidden entries and special files from the scope; return what went."""
    listing = list_scope(scope_dir)
    gone = listing.symlinks + listing.hidden + listing.special
    for rel in gone:
        path = scope_dir / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            os.unlink(path)
    return gone


def cap_diff(text: str, max_bytes: int = DIFF_MAX_BYTES) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = data[:max_bytes].decode("utf-8", "ignore")
    cut = cut[: cut.rfind("\n") + 1] if "\n" in cut else cut
    return (
        cut + f"\n[diff truncated at {max_bytes} bytes of {len(data)}: open the files with the memory tool]\n"
    )


_FENCE_TAG = re.compile(r"<(\s*/?\s*)workspace_diff\b", re.IGNORECASE)


def fence(text: str) -> str:
    """Keep data from closing (or opening) the prompt's fence, whatever its case or spacing:
    ``</workspace_diff>`` -> ``</workspace-diff>``."""
    return _FENCE_TAG.sub(lambda m: f"<{m.group(1)}workspace-diff", text)


def _real_scope_dir(top: Path, scope: str) -> tuple[Path, list[str]]:
    """The scope's folder under ``top``, made of real directories: a symlink or a file in the way
    (``projects`` pointing elsewhere) is removed, never followed."""
    current, gone = top, []
    for part in scope.split("/"):
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            gone.append(current.relative_to(top).as_posix())
            current.unlink()
        if not current.exists():
            current.mkdir(mode=0o700)
    return current, gone


def withdrawing_sessions(
    plan: ScopePlan,
    snapshot: dict[str, TopicSnapshot],
    forgotten: set[str],
    dropped: frozenset[str] = frozenset(),
) -> list[str]:
    """Forgotten sessions whose teaching is still in the scope: cited by a topic, or removed since the
    last run, or ``dropped`` now (another machine's inputs: the digest has no sources, so it may hold
    them)."""
    cited: set[str] = set()
    for snap in snapshot.values():
        if snap.meta is not None:
            cited |= set(snap.meta.sources)
    removed = ({r.session_id for r in plan.removed} | dropped) - {r.session_id for r in plan.inputs}
    return sorted(forgotten & (cited | removed))


async def _withheld_diff(clone: MemoryRepo, scope: str, since: str, hidden: list[str]) -> str:
    """The diff without the text of inputs, of the digest and of ``hidden`` topics; changed inputs by name."""
    inputs = [
        f"{c.status} /{AGENT_VIEW}{c.path}"
        for c in await clone.staged_changes(scope, since)
        if c.path == RAW_MEMORIES or c.path.startswith(f"{ROLLOUT_DIR}/")
    ]
    excluded = [RAW_MEMORIES, ROLLOUT_DIR, SUMMARY, *hidden]
    diff = await clone.staged_diff(scope, since, prefix=AGENT_VIEW, exclude=excluded)
    if inputs:
        head = (
            "(inputs changed, by name only; read the remaining ones in the folder: "
            + ", ".join(inputs)
            + ")\n"
        )
    else:
        head = "(no input changed)\n"
    return head + (fence(cap_diff(diff)) if diff else "")


async def prepare(
    clone: MemoryRepo,
    plan: ScopePlan,
    *,
    clean: Callable[[str], str],
    forgotten: set[str] | None = None,
    foreign: Callable[[str], bool] | None = None,
    dropped: frozenset[str] = frozenset(),
    forgotten_topics: Sequence[ForgottenTopic] = (),
) -> Workspace:
    """``dropped``: sessions of other machines whose inputs this run removes (a forget here);
    ``forgotten_topics``: the memories the person forgot one by one (``guard``)."""
    scope_dir, in_the_way = await asyncio.to_thread(_real_scope_dir, clone.path, plan.scope)
    await clone.untrack(in_the_way)
    sanitized = in_the_way + await asyncio.to_thread(_sanitize, scope_dir)
    mode: Mode = "INCREMENTAL" if (scope_dir / INDEX).is_file() else "INIT"
    await asyncio.to_thread(materialize, scope_dir, plan.inputs, clean=clean, foreign=foreign)
    await clone.stage(plan.scope)
    last = plan.state.last_commit if plan.state else None
    since = last if last and await clone.has_commit(last) else "HEAD"
    by_stem = {f"{ROLLOUT_DIR}/{r.stem}.md": r.session_id for r in plan.inputs}
    if mode == "INIT" or since == "HEAD" and last is None:
        changed = {r.session_id for r in plan.inputs}
    else:
        changed = {
            by_stem[c.path]
            for c in await clone.staged_changes(plan.scope, since)
            if c.status != "D" and c.path in by_stem
        }
    forgotten = forgotten or set()
    snapshot = await asyncio.to_thread(snapshot_topics, scope_dir)
    withdrawing = withdrawing_sessions(plan, snapshot, forgotten, dropped)
    withdrawn = citing_topics(snapshot, forgotten) if withdrawing else []
    rebuild_digest = await asyncio.to_thread(is_placeholder, scope_dir / SUMMARY)
    gone = [t.file for t in forgotten_topics]  # the person forgot them: their text is not shown again
    if mode == "INIT":
        diff = INIT_DIFF
    elif withdrawing or rebuild_digest:
        diff = await _withheld_diff(clone, plan.scope, since, [*withdrawn, *gone])
    else:
        diff = await clone.staged_diff(plan.scope, since, prefix=AGENT_VIEW, exclude=gone)
        diff = fence(cap_diff(diff)) or "(no changes)"
    if withdrawing:
        withdrawn = await asyncio.to_thread(withdraw_topics, scope_dir, withdrawn)
    if withdrawing or rebuild_digest:
        summary = scope_dir / SUMMARY
        if summary.is_file():
            summary.unlink()
    return Workspace(
        clone,
        plan.scope,
        scope_dir,
        mode,
        since,
        sanitized,
        snapshot,
        changed,
        diff,
        clean,
        forgotten=forgotten,
        withdrawing=withdrawing,
        withdrawn=withdrawn,
        pinned_withdrawn=[
            rel for rel in withdrawn if (meta := snapshot[rel].meta) is not None and meta.pinned
        ]
        if withdrawing
        else [],
        foreign=foreign,
        rebuild_digest=rebuild_digest,
        held=await asyncio.to_thread(guard.take, scope_dir, forgotten_topics),
    )


@dataclass
class Checked:
    findings: list[str]
    provenance: ProvenanceReport
    guarded: list[str] = field(default_factory=list)
    """What memd restored or removed to keep what the person decided (``guard.enforce``)."""

    @property
    def duplicates(self) -> int:
        """How many of the findings are duplicates (``pipeline.checks.duplicates``)."""
        return duplicates.count(self.findings)


async def check(
    ws: Workspace,
    plan: ScopePlan,
    *,
    caps: Caps,
    finder: SecretFinder | None,
    today: date,
    forgotten: set[str],
) -> Checked:
    """Restore the inputs, stamp provenance, validate. Idempotent: run it again after a repair.

    Anything the memory tool cannot have made (a symlink, a hidden or special file: another
    process was at work in the scratch copy) is removed first and named in the commit message.
    """
    ws.sanitized += await asyncio.to_thread(_sanitize, ws.scope_dir)
    await asyncio.to_thread(materialize, ws.scope_dir, plan.inputs, clean=ws.clean, foreign=ws.foreign)
    guarded = await asyncio.to_thread(guard.enforce, ws.scope_dir, ws.held)
    await ws.clone.stage(ws.scope)
    renames = {
        c.path: c.old_path for c in await ws.clone.staged_changes(ws.scope) if c.status == "R" and c.old_path
    }
    consumed = [r for r in plan.inputs if r.session_id in ws.changed_sessions]
    # A note from an agent (``memd mcp``) is the agent's word, whatever it claims: the source a topic
    # names is the note, and in a project a run whose new inputs are notes (and tool output) stamps
    # what it wrote ``evidence: tool``, and a topic restating a note must be so marked. In global/
    # a run bringing a note always waits for the user's accept in the inbox (``scope_run``): that
    # accept, not a mark global/ refuses, is what lets it land.
    named = {note_id(n.id) for n in plan.notes}
    notes = [] if ws.scope == GLOBAL_SCOPE else [(note_id(n.id), ws.clean(n.text)) for n in plan.notes]
    await asyncio.to_thread(strip_invisible, ws.scope_dir)
    report = await asyncio.to_thread(
        apply_provenance,
        ws.scope_dir,
        ws.snapshot,
        today=today,
        run_sources=ws.changed_sessions | named,
        live_sources={r.session_id for r in plan.inputs},
        forgotten=forgotten,
        renames=renames,
        tool_only=rest_on_tools_only(consumed) if consumed else bool(notes),
    )
    findings = await asyncio.to_thread(validate_scope, ws.scope_dir, caps, finder)
    findings += await asyncio.to_thread(scope_findings, ws.scope, ws.scope_dir)
    from_tools = tool_memories(r.raw_memory for r in consumed) + notes
    told = [t for r in plan.inputs for t in r.told]
    findings += await asyncio.to_thread(
        unmarked_findings, ws.scope_dir, ws.snapshot, from_tools, told=told, renames=renames
    )
    findings += await asyncio.to_thread(superseded_findings, ws.scope_dir, changes_of(plan.inputs))
    findings += await asyncio.to_thread(duplicates.check, ws.scope_dir, list_scope(ws.scope_dir))
    await ws.clone.stage(ws.scope)
    return Checked(findings, report, guarded)


async def staged_changes(ws: Workspace) -> list[str]:
    """``<letter> <path>`` for every change of the scope against the scratch copy's HEAD."""
    return [f"{c.status} {c.path}" for c in await ws.clone.staged_changes(ws.scope)]


async def commit(ws: Workspace, message: str) -> str:
    return await ws.clone.commit_staged(message)
