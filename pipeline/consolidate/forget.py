"""``memd forget``: drop a session's or a project's extracts and consolidate the affected scopes now.

The extracts are marked forgotten (they stop being inputs at once), and a project's notes and
verdicts from agents (``pipeline.store.notes``) are deleted; pending inbox runs of those
scopes are dropped, since they may hold what is being forgotten; then each scope is consolidated
at once, cooldown or not, straight onto the repository's branch. A scope left with no input is
emptied by memd without a model call. Otherwise, before the agent runs, memd withdraws every
topic whose ``sources`` cite a forgotten session (with its index line) and ``memory_summary.md``,
and the agent rebuilds them from the remaining inputs only (``RunResult.withdrawn`` /
``.rebuilt``); memd then stamps ``sources`` without the forgotten sessions. The run's commit
carries the sessions' tombstones, which the caller then applies to the whole history
(``daemon.usecases.changes.forget_now``: ``pipeline.memory.forget_history``).

A forget finishes or changes nothing. Before any extract is marked, ``blocked`` asks whether each
scope it must rewrite can be written now (no uncommitted change, no consolidation of it running,
in team mode no landed commit still on its way): when one cannot, the report is ``refused`` and
nothing changed. When no model can rebuild a scope (none, or it fails or its result is refused),
the withdrawal lands without it (``pipeline.consolidate.scope_run``: mode ``WITHDRAW``, a
placeholder digest) and a later run rebuilds the rest. A forget whose rewrite of a scope did not
land (a process killed in between) is finished by the next forget of the same session or project
(``ForgetReport.unfinished``, from ``consolidation.not_withdrawn``), never "nothing to forget".

A session this store has no extract of (another machine's, ``[sync]``) is forgotten too when the
memory repository's branch holds its inputs (``pipeline.memory.held``): each scope holding them is
rewritten without them (``consolidate_scope(also_forget=...)``), what they taught withdrawn and
rebuilt from the remaining inputs, and the run's commit carries the session's tombstone, so the
machine that extracted it forgets it at its next sync.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.clock import Clock
from pipeline.consolidate import inbox
from pipeline.consolidate.context import Phase2Context, RunResult, new_run_id
from pipeline.consolidate.lease import acquire_scope, lease_name
from pipeline.consolidate.run import context
from pipeline.consolidate.scope_run import consolidate_scope
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.llm.protocol import ModelClient
from pipeline.memory.held import scopes_holding
from pipeline.memory.inputs import feeds_global
from pipeline.settings import Settings
from pipeline.store import Store, leases, notes
from pipeline.store import consolidation as db
from pipeline.team.arrival import waiting_for


@dataclass
class ForgetReport:
    forgotten: dict[str, int] = field(default_factory=dict)
    """Extracts marked forgotten, per scope."""
    held: dict[str, int] = field(default_factory=dict)
    """Scopes whose inputs of the session are on the memory repository's branch although this store
    has no extract of it there (another machine's), with how many input files name it."""
    unfinished: list[str] = field(default_factory=list)
    """Scopes an earlier forget of the same session (or project) marked but could not rewrite: their
    memory still held it, so they are rewritten now."""
    dropped_inbox: list[str] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    refused: str | None = None
    """Why nothing was forgotten: a scope the forget must rewrite cannot be written now (nothing
    changed, the extracts are kept)."""

    @property
    def matched(self) -> bool:
        """Whether there was anything to forget (or to finish forgetting)."""
        return bool(self.forgotten or self.held or self.unfinished)


def scope_of_project(value: str, *, known: Iterable[str] = (), cwd: Path | None = None) -> str:
    """``--project``: a project key (``acme-1a2b3c4d``), a scope (``projects/...``, ``global``), a
    key's short name (matched against ``known``, the scopes there are: ``known_scopes``), or a
    project's folder (or any folder inside it; a relative one, ``./src`` or a bare ``src``, only with
    ``cwd``). A short name of a known scope wins over a folder of the same name."""
    from pipeline.projects.scopes import ScopeNotFound, scope_argument

    try:
        return scope_argument(value, known=known, cwd=cwd)
    except ScopeNotFound as exc:
        raise ValueError(str(exc)) from None


async def known_scopes(store: Store, repo: MemoryRepo) -> list[str]:
    """The scopes a ``--project`` may name: those with extracts or a consolidation record here, and
    those the memory repository holds (another machine's, ``[sync]``)."""
    from pipeline.memory import read

    return sorted(set(await db.candidate_scopes(store)) | set(read.scopes(repo)))


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
    scope = scope_of_project(project, known=await known_scopes(store, repo)) if project is not None else None
    wanted = await db.to_forget(store, feeds_global=feeds_global, session_id=session_id, scope=scope)
    report.unfinished = sorted(
        await db.not_withdrawn(store, session_id=session_id, scope=scope) - set(wanted)
    )
    if session_id is not None:
        held = await scopes_holding(repo, session_id)
        report.held = {s: n for s, n in held.items() if s not in wanted and s not in report.unfinished}
    ctx = context(store, settings, repo, clock, llm, redactor)
    scopes = sorted(set(wanted) | set(report.held) | set(report.unfinished))
    report.refused = await blocked(ctx, scopes)
    if report.refused is not None:
        report.held, report.unfinished = {}, []
        return report
    report.forgotten = await db.forget(
        store, now=clock.now(), feeds_global=feeds_global, session_id=session_id, scope=scope
    )
    if scope is not None:  # what agents handed memd about the project (`memd mcp`) goes with it
        await notes.forget_scope(store, scope)
    also = frozenset({session_id}) if session_id is not None else frozenset()
    for affected in sorted(set(report.forgotten) | set(report.held) | set(report.unfinished)):
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


async def blocked(ctx: Phase2Context, scopes: list[str]) -> str | None:
    """Why one of ``scopes`` cannot be rewritten now (None: each can), asked before anything is
    forgotten, so that a forget that could not finish changes nothing."""
    repo = ctx.repo
    now = ctx.clock.now()
    for scope in scopes:
        if (repo.path / ".git").is_dir() and (dirty := await repo.dirty_paths(scope)):
            return (
                f"{scope} has uncommitted changes in {repo.path} ({len(dirty)} path(s), e.g. {dirty[0]}): "
                "commit or discard them, then forget again"
            )
        if (waits := await waiting_for(ctx.store, ctx.settings, repo, scope, now=now)) is not None:
            return f"{scope} {waits}"
        owner = f"forget-check-{new_run_id(now)}"
        got = await acquire_scope(ctx, scope, owner)
        if got is not None:
            return (
                f"a consolidation of {scope} is running ({got.host}, pid {got.pid}, since "
                f"{got.acquired_at:%H:%M}): forget again when it has ended"
            )
        await leases.release(ctx.store, lease_name(scope), owner=owner)
    return None
