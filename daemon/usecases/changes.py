"""The changes a person asks memd to make to the memory, shared by the command line and the web page.

`memd inbox accept|reject RUN`, `memd forget --session ID|--project KEY` and `memd consolidate` call
these, and so does `memd ui` (``daemon.ui``): the page does exactly what the commands do. Each returns
a typed result; both say it in the same words (``daemon.words``). Each takes the caller's ``daemon.runtime.Runtime`` (the store,
the settings, the clock, and the model client and the redactor when a change needs them); heavy
modules (the publisher, the consolidation) are imported when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.usecases.sync import push_after
from pipeline.consolidate import inbox
from pipeline.consolidate.forget import forget
from pipeline.consolidate.run import context
from pipeline.errors import NoAPIKey
from pipeline.vocabulary import RunOutcome

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from pipeline.consolidate.forget import ForgetReport
    from pipeline.consolidate.now import NowReport
    from pipeline.llm.protocol import ModelClient
    from pipeline.memory.forget_history import Rewritten
    from pipeline.publish.run import PublishReport
    from pipeline.store.consolidation import RunRow
    from pipeline.sync.run import SyncReport

RUN_NOT_LANDED = (RunOutcome.FAILED, RunOutcome.SKIPPED, RunOutcome.CRASHED)
"""A forget's rewrite of a scope that did not land: the scope's memory still holds what was forgotten."""


@dataclass(frozen=True)
class Accepted:
    head: str
    published: PublishReport
    synced: SyncReport | None = None

    @property
    def ok(self) -> bool:
        return not self.published.failed


async def accept_run(rt: Runtime, run_id: str) -> Accepted:
    """Land a pending inbox run, push it (``[sync]``) and publish at once (the agents see it without
    waiting for a cycle)."""
    from pipeline.publish.run import publish_all  # lazy: daemon.usecases

    head = await inbox.accept(rt.store, rt.settings(), rt.memory_repo(), rt.clock, run_id)
    synced = await push_after(rt)
    return Accepted(head, await publish_all(rt.store, rt.settings(), rt.clock), synced)


async def reject_run(rt: Runtime, run_id: str) -> RunRow:
    """Drop a pending inbox run: its branch goes, the memory and its published copies stay as they were."""

    return await inbox.reject(rt.store, rt.memory_repo(), rt.clock, run_id)


@dataclass(frozen=True)
class Forgotten:
    what: str
    report: ForgetReport
    published: PublishReport | None
    dialect: str
    no_key: str | None
    """Why no model could be had (no API key): scopes with other sessions were not rewritten."""
    synced: SyncReport | None = None
    history: Rewritten | None = None
    """The history's rewrite without the forgotten session's text (``pipeline.memory.forget_history``)."""

    @property
    def ok(self) -> bool:
        failed = [r for r in self.report.runs if r.outcome in RUN_NOT_LANDED]
        published_failed = self.published is not None and bool(self.published.failed)
        return self.report.matched and not self.report.refused and not failed and not published_failed


async def forget_now(
    rt: Runtime,
    *,
    session_id: str | None = None,
    project: str | None = None,
    on_no_key: Callable[[str], object] | None = None,
) -> Forgotten:
    """Forget a session's or a project's extracts (or, with ``[sync]``, another machine's session
    the memory repository holds), rewrite the affected scopes, push and publish them. Without an
    API key (or when the model fails) it still forgets, withdraws and tombstones; scopes that keep
    other sessions then wait for their digest to be rebuilt (``on_no_key`` is told why at once,
    before the work; ``Forgotten.no_key`` keeps it). A memory repository that cannot be written, or a
    scope that cannot be rewritten now, fails it before anything is forgotten or paid for
    (``ForgetReport.refused``)."""

    store, settings, clock, repo = rt.store, rt.settings(), rt.clock, rt.memory_repo()
    repo.check_writable()
    llm: ModelClient | None = None
    no_key = None
    try:
        llm = await rt.llm()
    except NoAPIKey as exc:
        no_key = str(exc)
        if on_no_key is not None:
            on_no_key(no_key)
    report = await forget(
        store, settings, repo, clock, llm, rt.redactor(), session_id=session_id, project=project
    )
    published = None
    synced = None
    history = None
    if report.matched and report.refused is None:
        from daemon.usecases.memories import forget_history  # lazy: the memory steering use cases
        from pipeline.publish.run import publish_all  # lazy: daemon.usecases

        if any(r.commit for r in report.runs):  # gone from the history too, before anything is pushed
            history = await forget_history(repo, Path(settings.paths.state_dir))
        synced = await push_after(rt)
        published = await publish_all(store, settings, clock)
    return Forgotten(session_id or project or "", report, published, store.dialect, no_key, synced, history)


@dataclass(frozen=True)
class ConsolidatedNow:
    report: NowReport
    published: PublishReport | None = None
    synced: SyncReport | None = None

    @property
    def ok(self) -> bool:
        return self.report.ok and not (self.published is not None and self.published.failed)


async def plan_consolidation(rt: Runtime, scope: str | None, *, dry_run: bool) -> NowReport:
    """What `memd consolidate` would run now (``scope`` resolved already; None: every scope), each
    first request measured; nothing is sent or written."""
    from pipeline.consolidate.now import plan_now  # lazy: daemon.usecases

    llm = await rt.llm_or_none()
    ctx = context(rt.store, rt.settings(), rt.memory_repo(), rt.clock, llm, rt.redactor(dry_run=dry_run))
    return await plan_now(ctx, scope, dry_run=dry_run)


async def consolidate_planned(rt: Runtime, planned: NowReport) -> ConsolidatedNow:
    """Run what ``plan_consolidation`` found, then push (``[sync]``) and publish what landed."""
    from pipeline.consolidate.now import run_now  # lazy: daemon.usecases

    settings = rt.settings()
    repo = rt.memory_repo()
    if planned.waiting and planned.refused is None:
        repo.check_writable()
    ctx = context(rt.store, settings, repo, rt.clock, await rt.llm_or_none(), rt.redactor())
    report = await run_now(ctx, planned)
    landed = [r for r in report.runs if r.outcome in (RunOutcome.COMMITTED, RunOutcome.CLEARED)]
    if not landed:
        return ConsolidatedNow(report)
    from pipeline.publish.run import publish_all  # lazy: daemon.usecases

    synced = await push_after(rt)
    return ConsolidatedNow(report, await publish_all(rt.store, settings, rt.clock), synced)
