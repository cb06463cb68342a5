"""The daemon wired: its steps on the parts of ``daemon.runtime``.

``build(settings, ...)`` returns a ``Daemon`` (``daemon/service/lifecycle.py``) holding the clock, the
systemd notifier and a factory for the cycle's steps. The daemon opens the store when it starts
(``runtime.store_opener``: as this machine; an unreachable store is a startup error with a clear
message), and the steps are built around it here, on a ``Runtime``:

    scan        pipeline.scan.scanner.scan(store, settings, clock)
    extract     pipeline.extract.run.run_phase1(store, settings, clock, llm, redactor, dry_run=)
    consolidate pipeline.consolidate.run.run_phase2(store, settings, repo, clock, llm, redactor, dry_run=)
                (the memory repository checked writable first, before anything is paid for; with
                [sync]: the scope keys brought up to date, and the remote fetched and merged first,
                within DAEMON_GIT_TIMEOUT_S a call: a remote that fails it is the cycle's sync result)
                a dry run: pipeline.consolidate.dry.dry_consolidation(report, would_extract, settings)
    sync        pipeline.sync.now.sync_memory(store, settings, repo, clock, redactor, model=), each git
                call within DAEMON_GIT_TIMEOUT_S
    publish     pipeline.publish.run.publish_all(store, settings, clock, dry_run=)

Heavy parts are made on first use: a phase module, the LLM client (and with it the ``anthropic``
SDK) and the redaction key are loaded only when a cheap query of the store says that phase has
work, so an idle daemon never pays for them.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from daemon import runtime
from daemon.runtime import Runtime, StoreOpener
from daemon.service.cycle import Skipped, StepEnv, StepReport, StepSet
from daemon.service.lifecycle import Daemon, SettingsReloader, Sidecar, StepsFactory
from daemon.service.notify import Notifier
from pipeline.clock import Clock, SystemClock
from pipeline.settings import Settings
from pipeline.store import Store, workload

if TYPE_CHECKING:
    from pipeline.gitrepo.repository import MemoryRepo
    from pipeline.llm.protocol import ModelClient
    from pipeline.sync.run import SyncReport

log = structlog.get_logger(__name__)

DAEMON_GIT_TIMEOUT_S = 20.0
"""The most each git call of a sync the daemon runs itself may take (``[sync] timeout_s`` if
smaller): the fetch before a consolidation, the cycle's sync step and the periodic sync. A silent or
slow remote holds the cycle up this long at most; ``memd sync`` waits the full ``timeout_s``."""


def pipeline_steps(
    env: StepEnv, *, clock: Clock, environ: Mapping[str, str], dry_run: bool = False
) -> StepSet:
    """The real steps: each imports its phase only when it runs, and a phase only when it has work."""
    store, settings = env.store, env.settings
    rt = Runtime(store, settings, clock=clock, env=environ, dry_run=dry_run)
    would_extract: list[tuple[str | None, str]] = []
    pull_failed: list[tuple[float, SyncReport]] = []
    """When the fetch before a consolidation failed (``time.monotonic()``) and its report."""
    """In a dry run: (project, session) of each session phase 1 would extract."""

    async def scan(*, dry_run: bool) -> StepReport:
        from pipeline.hits.record import record_memory_uses
        from pipeline.scan.scanner import scan
        from pipeline.scan.view import summarize_scan

        report = await scan(
            store, settings(), clock, on_memory_reads=record_memory_uses, collect_sessions=False
        )
        return summarize_scan(report)

    async def extract(*, dry_run: bool) -> StepReport:
        if not await workload.extract_pending(store, now=clock.now()):
            return Skipped("no session waits for extraction")
        from pipeline.extract.run import run_phase1

        llm = await _llm_for(rt, dry_run)
        report = await run_phase1(
            store, settings(), clock, llm, rt.redactor(dry_run=dry_run), dry_run=dry_run, owner=env.owner
        )
        would_extract[:] = [(w.project, w.session_id) for w in report.would_extract]
        return report

    async def consolidate(*, dry_run: bool) -> StepReport:
        from pipeline.consolidate.plan import plan_all

        pull_failed.clear()  # a failure answers the sync step of its own cycle only
        if not dry_run:
            await _rekey(store, settings(), rt.memory_repo(), clock)
        plans = await plan_all(store, settings(), now=clock.now())
        if not dry_run and not any(p.runnable for p in plans):
            held = [p.skip_reason for p in plans if p.action != "none" and p.skip_reason]
            from pipeline.store.read.rows import on_store
            from pipeline.store.read.runs import pending_review

            return Skipped(
                f"{len(held)} scopes wait: {held[0]}" if held else "no scope has new or removed extracts",
                waiting_review=await on_store(store, pending_review),
            )
        from pipeline.consolidate.run import run_phase2

        repo = rt.memory_repo()
        if not dry_run:
            repo.check_writable()  # before anything is paid for
        if not dry_run and settings().sync.enabled:
            pull_failed[:] = [
                (time.monotonic(), r) for r in await _pull_first(store, settings(), repo, clock, rt)
            ]

        llm = await _llm_for(rt, dry_run)
        report = await run_phase2(
            store, settings(), repo, clock, llm, rt.redactor(dry_run=dry_run), dry_run=dry_run
        )
        if not dry_run:
            return report
        from pipeline.consolidate.dry import dry_consolidation

        return dry_consolidation(report, would_extract, settings())

    async def sync(*, dry_run: bool) -> StepReport:
        current = settings()
        if (skipped := _no_sync(current, dry_run)) is not None:
            return skipped
        if (failed := _failed_just_now(pull_failed, current)) is not None:
            return failed  # publishing does not wait for the remote again
        from pipeline.sync.run import due

        repo = rt.memory_repo()
        why = await due(store, current, repo, clock)
        if why is None:
            return Skipped("nothing to push; the last fetch is recent")
        from pipeline.sync.now import sync_memory

        # the cycle's publishing (and the next scan) waits for this sync: each git call is bounded
        # as the fetch before a consolidation is; `memd sync` alone waits the full [sync] timeout_s
        return await sync_memory(store, _bounded(current), repo, clock, rt.redactor(), model=rt.llm_or_none)

    async def publish(*, dry_run: bool) -> StepReport:
        from pipeline.publish.run import publish_all

        return await publish_all(store, settings(), clock, dry_run=dry_run)

    steps = {"scan": scan, "extract": extract, "consolidate": consolidate, "sync": sync, "publish": publish}
    return StepSet(steps, close=rt.aclose)


def _failed_just_now(pull_failed: list[tuple[float, SyncReport]], settings: Settings) -> SyncReport | None:
    """The report of a fetch before a consolidation that failed less than ``[sync] interval_minutes``
    ago (taken: it answers one sync step only), else None."""
    if not pull_failed:
        return None
    at, report = pull_failed.pop()
    return report if time.monotonic() - at < settings.sync.interval_minutes * 60 else None


def _no_sync(settings: Settings, dry_run: bool) -> Skipped | None:
    if not settings.sync.enabled:
        return Skipped("no [sync] remote is configured")
    if dry_run:
        return Skipped("a dry run does not sync")
    return None


async def _rekey(store: Store, settings: Settings, repo: MemoryRepo, clock: Clock) -> None:
    """Scope keys follow the repositories' identities before anything plans by them."""
    from pipeline.projects.rekey import rekey

    await rekey(store, settings, repo, clock)


def _bounded(settings: Settings) -> Settings:
    """The settings of a sync the daemon runs itself: each git call within ``DAEMON_GIT_TIMEOUT_S``
    (or ``[sync] timeout_s`` when shorter), so a remote that hangs holds up no consolidation,
    publishing or scan for longer than that."""
    short = min(settings.sync.timeout_s, DAEMON_GIT_TIMEOUT_S)
    return settings.model_copy(update={"sync": settings.sync.model_copy(update={"timeout_s": short})})


async def _pull_first(
    store: Store, settings: Settings, repo: MemoryRepo, clock: Clock, rt: Runtime
) -> list[SyncReport]:
    """Before a consolidation: fetch and merge the remote (the push follows in the sync step), each
    git call within ``DAEMON_GIT_TIMEOUT_S``. A remote that cannot be had is logged and recorded
    (``memd status``); the consolidation goes on with the local memory, and the cycle's sync step
    reports this failure instead of waiting for the remote again: the next sync tries anew.
    Returns the failed report, or nothing."""
    from pipeline.sync.now import sync_memory

    report = await sync_memory(store, _bounded(settings), repo, clock, rt.redactor(), push=False)
    if report.failure:
        log.warning("sync_before_consolidation", outcome=report.outcome, reason=report.reason)
        return [report]
    return []


async def _llm_for(rt: Runtime, dry_run: bool) -> ModelClient | None:
    """A dry run calls no API: it needs neither a key nor the SDK (whose import alone takes seconds)."""
    if dry_run:
        return None
    return await rt.llm()


def build(
    settings: Settings,
    *,
    clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
    reload_settings: SettingsReloader | None = None,
    steps_factory: StepsFactory | None = None,
    store_opener: StoreOpener | None = None,
    notifier: Notifier | None = None,
    watch: bool = True,
    config_path: Path | None = None,
    dry_run: bool = False,
) -> Daemon:
    """The daemon for ``settings``; everything it needs is made here or given by the caller (tests)."""
    clock = clock or SystemClock()
    env = dict(os.environ) if env is None else env
    pid = os.getpid()

    def default_steps(step_env: StepEnv) -> StepSet:
        return pipeline_steps(step_env, clock=clock, environ=env, dry_run=dry_run)

    return Daemon(
        settings=settings,
        clock=clock,
        open_store=store_opener or runtime.store_opener(lambda: settings, dry_run=dry_run),
        steps_factory=steps_factory or default_steps,
        notifier=notifier or Notifier.from_env(env, pid=pid),
        reload_settings=reload_settings,
        host=socket.gethostname(),
        pid=pid,
        watch=watch,
        sidecars=[("ui", web_page(clock, env, config_path))] if settings.ui.enabled else [],
    )


def web_page(clock: Clock, env: Mapping[str, str], config_path: Path | None) -> Sidecar:
    """The web page (`memd ui`, ``[ui] enabled``) as the daemon serves it, on the daemon's store.

    The web stack is imported only here, when the page is enabled. A port that cannot be had, or a
    token file that cannot be trusted, is logged and the daemon goes on without the page."""

    config_exists = config_path is not None and config_path.exists()

    async def serve_page(store: Store, settings: Callable[[], Settings]) -> None:
        from daemon.ui import server
        from pipeline.errors import MemdError

        ui = settings().ui
        try:
            context, web = server.build(
                settings,
                store,
                clock=clock,
                config_path=config_path or Path("?"),
                config_exists=config_exists,
                env=env,
                host=ui.host,
                port=ui.port,
                read_only=ui.read_only,
            )
            sock = server.bind(ui.host, ui.port)
        except (OSError, MemdError) as exc:
            log.error("ui_unavailable", host=ui.host, port=ui.port, reason=str(exc))
            return
        context.guard.port = sock.getsockname()[1]
        log.info("ui_serving", address=context.guard.address(with_token=False), read_only=ui.read_only)
        try:
            await server.serve(web, sock)
        except Exception as exc:  # the page is not worth the daemon: say so and go on without it
            log.error("ui_failed", reason=str(exc) or type(exc).__name__)

    return serve_page
