"""The changes a person asks memd to make to the memory, shared by the command line and the web page.

`memd inbox accept|reject RUN`, `memd forget --session ID|--project KEY` and `memd consolidate` call
these, and so does `memd ui` (``daemon.ui``): the page does exactly what the commands do, and says it in the same words
(``publish_lines``, ``forget_lines``). Each takes the caller's ``daemon.runtime.Runtime`` (the store,
the settings, the clock, and the model client and the redactor when a change needs them); heavy
modules (the publisher, the consolidation) are imported when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.vocabulary import PUBLISH_FAILED, PublishOutcome, RunOutcome

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from pipeline.consolidate.forget import ForgetReport
    from pipeline.consolidate.now import NowReport
    from pipeline.llm.protocol import ModelClient
    from pipeline.publish.run import PublishReport
    from pipeline.store.consolidation import RunRow
    from pipeline.sync.run import SyncReport

RUN_NOT_LANDED = (RunOutcome.FAILED, RunOutcome.SKIPPED, RunOutcome.CRASHED)
"""A forget's rewrite of a scope that did not land: the scope's memory still holds what was forgotten."""
MORE = "-v lists them"
"""The command line's hint after a count of rows its summary leaves out."""


@dataclass(frozen=True)
class Accepted:
    head: str
    published: PublishReport
    synced: SyncReport | None = None

    @property
    def ok(self) -> bool:
        return not self.published.failed

    def lines(self, *, verbose: bool = False) -> list[str]:
        return [
            f"accepted: the memory repository is at {self.head[:12]}",
            *sync_lines(self.synced),
            *publish_lines(self.published, verbose=verbose),
        ]


async def accept_run(rt: Runtime, run_id: str) -> Accepted:
    """Land a pending inbox run, push it (``[sync]``) and publish at once (the agents see it without
    waiting for a cycle)."""
    from pipeline.consolidate import inbox
    from pipeline.publish.run import publish_all

    head = await inbox.accept(rt.store, rt.settings(), rt.memory_repo(), rt.clock, run_id)
    synced = await push_after(rt)
    return Accepted(head, await publish_all(rt.store, rt.settings(), rt.clock), synced)


async def push_after(rt: Runtime) -> SyncReport | None:
    """After a change a person asked for: sync with ``[sync] remote`` (None without one). The scopes a
    merge combines are consolidated again by the daemon (no model call here)."""
    settings = rt.settings()
    if not settings.sync.enabled:
        return None
    from pipeline.sync.now import sync_memory

    return await sync_memory(rt.store, settings, rt.memory_repo(), rt.clock, rt.redactor())


def sync_lines(report: SyncReport | None) -> list[str]:
    return [] if report is None else report.lines()


async def reject_run(rt: Runtime, run_id: str) -> RunRow:
    """Drop a pending inbox run: its branch goes, the memory and its published copies stay as they were."""
    from pipeline.consolidate import inbox

    return await inbox.reject(rt.store, rt.memory_repo(), rt.clock, run_id)


def rejected_line(run: RunRow) -> str:
    return (
        f"rejected {run.run_id} ({run.scope}): its branch is deleted; the memory and its published copies "
        "stay as they were"
    )


@dataclass(frozen=True)
class Forgotten:
    what: str
    report: ForgetReport
    published: PublishReport | None
    dialect: str
    warning: str | None
    """Said before the report: why scopes with other sessions could not be rewritten (no API key)."""
    synced: SyncReport | None = None

    @property
    def ok(self) -> bool:
        failed = [r for r in self.report.runs if r.outcome in RUN_NOT_LANDED]
        published_failed = self.published is not None and bool(self.published.failed)
        return self.report.matched and not self.report.refused and not failed and not published_failed

    def lines(self, *, verbose: bool = False) -> list[str]:
        return [
            *forget_lines(self.report, self.what, self.published, self.dialect, verbose=verbose),
            *sync_lines(self.synced),
        ]


async def forget_now(
    rt: Runtime,
    *,
    session_id: str | None = None,
    project: str | None = None,
    warn: Callable[[str], object] | None = None,
) -> Forgotten:
    """Forget a session's or a project's extracts (or, with ``[sync]``, another machine's session
    the memory repository holds), rewrite the affected scopes, push and publish them. Without an
    API key (or when the model fails) it still forgets, withdraws and tombstones; scopes that keep
    other sessions then wait for their digest to be rebuilt (``warn`` is told so at once, before
    the work; ``Forgotten.warning`` keeps it). A memory repository that cannot be written, or a
    scope that cannot be rewritten now, fails it before anything is forgotten or paid for
    (``ForgetReport.refused``)."""
    from pipeline.consolidate.forget import forget
    from pipeline.errors import NoAPIKey

    store, settings, clock, repo = rt.store, rt.settings(), rt.clock, rt.memory_repo()
    repo.check_writable()
    llm: ModelClient | None = None
    warning = None
    try:
        llm = await rt.llm()
    except NoAPIKey as exc:
        warning = (
            f"{exc}; what the forgotten session taught is withdrawn now, and the digest of each scope "
            "that still has other sessions waits as a placeholder until a consolidation with a key "
            "(here, or on another machine that syncs) rebuilds it"
        )
        if warn is not None:
            warn(warning)
    report = await forget(
        store, settings, repo, clock, llm, rt.redactor(), session_id=session_id, project=project
    )
    published = None
    synced = None
    if report.matched and report.refused is None:
        from pipeline.publish.run import publish_all

        synced = await push_after(rt)
        published = await publish_all(store, settings, clock)
    return Forgotten(session_id or project or "", report, published, store.dialect, warning, synced)


def publish_lines(report: PublishReport, *, verbose: bool = False) -> list[str]:
    """What publishing did: each copy it wrote, withdrew or failed on (refused included), then how
    many targets it skipped; ``verbose`` lists the skipped ones too, each with its reason."""
    lines = []
    skipped = 0
    for r in report.results:
        if not (r.written or r.removed or r.outcome in PUBLISH_FAILED or r.outcome == PublishOutcome.SKIPPED):
            continue
        if r.outcome == PublishOutcome.SKIPPED and not (r.written or r.removed):
            skipped += 1
            if not verbose:
                continue
        files = ", ".join(
            part
            for part in (
                f"wrote {len(r.written)} file(s)" if r.written else "",
                f"removed {len(r.removed)} file(s)" if r.removed else "",
            )
            if part
        )
        lines.append(f"published {r.scope} to {r.target}: {r.outcome}" + (f" ({files})" if files else ""))
        lines.append(f"  {r.path}")
        if r.reason:
            lines.append(f"  {r.reason.removeprefix(f'{r.path}: ')}")
    left_out = f"skipped {skipped} target{'s' if skipped != 1 else ''}" + ("" if verbose else f" ({MORE})")
    if not any(line.startswith("published ") for line in lines):
        lines.append("published copies: already current, nothing to write")
    if skipped and not verbose:
        lines.append(f"published copies: {left_out}")
    return lines


def forget_lines(
    report: ForgetReport, what: str, published: PublishReport | None, dialect: str, *, verbose: bool = False
) -> list[str]:
    """What forgetting did, scope by scope, and where the forgotten text still is."""
    if report.refused is not None:
        return [
            f"nothing forgotten: {report.refused}",
            f"nothing changed: the extracts of {what} are kept and the memory and its published copies "
            "stay as they were",
        ]
    if not report.matched:
        return [
            f"nothing to forget: no extract of {what} is left here, and the memory repository holds "
            "none of its text (unknown, or forgotten already)"
        ]
    lines = [f"{scope}: {count} extract(s) forgotten" for scope, count in sorted(report.forgotten.items())]
    lines += [
        f"{scope}: another machine's session; its {count} input file(s) in the memory repository are "
        "removed and its tombstone travels to the other machines (they forget their extracts of it)"
        for scope, count in sorted(report.held.items())
    ]
    lines += [
        f"{scope}: forgotten earlier, but its memory still held it (that rewrite did not finish): rewritten now"
        for scope in report.unfinished
    ]
    where = (
        "and from the database file"
        if dialect == "sqlite"
        else "(PostgreSQL keeps old row versions until VACUUM FULL, and its WAL and backups keep theirs)"
    )
    lines.append(
        "state store: the forgotten extracts' summaries, notes and memories are removed "
        f"{where}; their ids and the fact of forgetting stay"
    )
    lines += [
        f"dropped pending review {run_id}: its branch is deleted, none of it landed"
        for run_id in report.dropped_inbox
    ]
    for run in report.runs:
        line = f"{run.scope}: {run.outcome}"
        if run.commit:
            line += f" {run.commit[:12]}"
        if run.reason:
            line += f" ({run.reason.splitlines()[0]})"
        lines.append(line)
        lines += [
            f"  {run.scope}/{rel} was pinned: it cited {what}, and a forget outranks a pin, so it is "
            "withdrawn all the same"
            for rel in run.pinned_withdrawn
        ]
        lines += [f"  {change}" for change in run.changes]
        for path in sorted(run.withdrawn):
            how = "rebuilt from the remaining inputs" if path in run.rebuilt else "not rebuilt"
            lines.append(f"  memd withdrew {path} (it cited a forgotten session): {how}")
        for path, why in sorted(run.removed_topics.items()):
            if path not in run.withdrawn:
                lines.append(f"  memd removed {path} ({why})")
    if published is not None:
        lines += publish_lines(published, verbose=verbose)
    lines += unfinished_lines(report, what, published)
    lines.append("the forgotten content remains in the memory repository's git history (git log -p)")
    return lines


def unfinished_lines(report: ForgetReport, what: str, published: PublishReport | None) -> list[str]:
    """Where what was forgotten is still, when a rewrite or a publish failed (empty: nowhere)."""
    lines = []
    not_rewritten = [r.scope for r in report.runs if r.outcome in RUN_NOT_LANDED]
    if not_rewritten:
        lines.append(
            f"NOT finished: the memory of {', '.join(not_rewritten)} still holds what {what} taught (its "
            "rewrite failed, above), and so do its published copies; the same memd forget finishes it"
        )
    for r in published.results if published is not None else []:
        if r.outcome in PUBLISH_FAILED:
            lines.append(
                f"NOT finished: the published copy at {r.path} may still hold what {what} taught (its "
                "publish failed, above); `memd publish` writes it again"
            )
    if report.runs and not lines:
        rebuilt_later = [r.scope for r in report.runs if r.mode == "WITHDRAW"]
        if rebuilt_later:
            lines.append(
                f"{', '.join(rebuilt_later)}: what {what} taught is withdrawn; the digest (and the withdrawn "
                "topics the remaining sessions support) will be rebuilt by the next consolidation with a model "
                "(`memd consolidate` runs it now)"
            )
    return lines


@dataclass(frozen=True)
class ConsolidatedNow:
    report: NowReport
    published: PublishReport | None = None
    synced: SyncReport | None = None

    @property
    def ok(self) -> bool:
        return self.report.ok and not (self.published is not None and self.published.failed)

    def lines(self, *, verbose: bool = False) -> list[str]:
        return [
            *self.report.run_lines(),
            *sync_lines(self.synced),
            *(publish_lines(self.published, verbose=verbose) if self.published is not None else []),
        ]


async def plan_consolidation(rt: Runtime, scope: str | None, *, dry_run: bool) -> NowReport:
    """What `memd consolidate` would run now (``scope`` resolved already; None: every scope), each
    first request measured; nothing is sent or written."""
    from pipeline.consolidate.now import plan_now
    from pipeline.consolidate.run import context

    llm = await rt.llm_or_none()
    ctx = context(rt.store, rt.settings(), rt.memory_repo(), rt.clock, llm, rt.redactor(dry_run=dry_run))
    return await plan_now(ctx, scope, dry_run=dry_run)


async def consolidate_planned(rt: Runtime, planned: NowReport) -> ConsolidatedNow:
    """Run what ``plan_consolidation`` found, then push (``[sync]``) and publish what landed."""
    from pipeline.consolidate.now import run_now
    from pipeline.consolidate.run import context

    settings = rt.settings()
    repo = rt.memory_repo()
    if planned.waiting and planned.refused is None:
        repo.check_writable()
    ctx = context(rt.store, settings, repo, rt.clock, await rt.llm_or_none(), rt.redactor())
    report = await run_now(ctx, planned)
    landed = [r for r in report.runs if r.outcome in (RunOutcome.COMMITTED, RunOutcome.CLEARED)]
    if not landed:
        return ConsolidatedNow(report)
    from pipeline.publish.run import publish_all

    synced = await push_after(rt)
    return ConsolidatedNow(report, await publish_all(rt.store, settings, rt.clock), synced)
