"""``memd forget``: drop a session's or a project's extracts and consolidate the affected scopes now.

The extracts are marked forgotten (they stop being inputs at once), and a project's notes and
verdicts from agents (``pipeline.store.notes``) are deleted; pending inbox runs of those
scopes are dropped, since they may hold what is being forgotten; then each scope is consolidated
at once, cooldown or not, straight onto the repository's branch. A scope left with no input is
emptied by memd without a model call. Otherwise, before the agent runs, memd withdraws every
topic whose ``sources`` cite a forgotten session (with its index line) and ``memory_summary.md``,
and the agent rebuilds them from the remaining inputs only (``RunResult.withdrawn`` /
``.rebuilt``); memd then stamps ``sources`` without the forgotten sessions. The content stays in
the repository's git history (every run is a commit).

A session this store has no extract of (another machine's, ``[sync]``) is forgotten too when the
memory repository's branch holds its inputs (``pipeline.memory.held``): each scope holding them is
rewritten without them (``consolidate_scope(also_forget=...)``), what they taught withdrawn and
rebuilt from the remaining inputs, and the run's commit carries the session's tombstone, so the
machine that extracted it forgets it at its next sync.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.clock import Clock
from pipeline.consolidate import inbox
from pipeline.consolidate.context import RunResult
from pipeline.consolidate.run import context
from pipeline.consolidate.scope_run import consolidate_scope
from pipeline.llm.protocol import ModelClient
from pipeline.memory.held import scopes_holding
from pipeline.memory.repository import MemoryRepo
from pipeline.memory.validate import SecretFinder
from pipeline.settings import Settings
from pipeline.store import Store, notes
from pipeline.store import consolidation as db


@dataclass
class ForgetReport:
    forgotten: dict[str, int] = field(default_factory=dict)
    """Extracts marked forgotten, per scope."""
    held: dict[str, int] = field(default_factory=dict)
    """Scopes whose inputs of the session are on the memory repository's branch although this store
    has no extract of it there (another machine's), with how many input files name it."""
    dropped_inbox: list[str] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)


def scope_of_project(value: str) -> str:
    """``--project``: a project key (``acme-1a2b3c4d``), a scope (``projects/...``, ``global``), a
    key's short name, or a project's folder (or any folder inside it)."""
    from pipeline.projects.scopes import ScopeNotFound, scope_argument

    try:
        return scope_argument(value)
    except ScopeNotFound as exc:
        raise ValueError(str(exc)) from None


async def forget(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    llm: ModelClient | None,
    redactor: SecretFinder | None,
    *,
    session_id: str | None = None,
    project: str | None = None,
) -> ForgetReport:
    if (session_id is None) == (project is None):
        raise ValueError("give exactly one of a session id or a project")
    report = ForgetReport()
    scope = scope_of_project(project) if project is not None else None
    report.forgotten = await db.forget(store, now=clock.now(), session_id=session_id, scope=scope)
    if scope is not None:  # what agents handed memd about the project (`memd mcp`) goes with it
        await notes.forget_scope(store, scope)
    if session_id is not None:
        held = await scopes_holding(repo, session_id)
        report.held = {s: n for s, n in held.items() if s not in report.forgotten}
    also = frozenset({session_id}) if session_id is not None else frozenset()
    ctx = context(store, settings, repo, clock, llm, redactor)
    for affected in sorted(set(report.forgotten) | set(report.held)):
        dropped = await inbox.drop_pending(store, repo, clock, affected)
        await notes.release(store, dropped)  # no one rejected what agents handed memd (`memd mcp`)
        report.dropped_inbox += dropped
        run = await consolidate_scope(
            ctx,
            affected,
            force=True,
            review="auto",
            landed_only=True,
            rebuild=affected in report.held,
            also_forget=also if affected in report.held else frozenset(),
        )
        report.runs.append(run)
    return report
