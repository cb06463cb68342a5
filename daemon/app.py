"""The composition root: the one place that builds memd's parts and wires them together.

``build(settings, ...)`` returns a ``Daemon`` (``daemon/service.py``) holding the clock, the
systemd notifier and a factory for the cycle's steps. The store is opened by the daemon when it
starts (so an unreachable store is a startup error with a clear message), and the steps are built
around it here:

    scan        pipeline.scan.scanner.scan(store, settings, clock)
    extract     pipeline.extract.run.run_phase1(store, settings, clock, llm, redactor, dry_run=)
    consolidate pipeline.consolidate.run.run_phase2(store, settings, clock, llm, redactor, dry_run=)
                (with [sync]: the scope keys brought up to date, and the remote fetched and merged first)
    sync        pipeline.consolidate.sync_now.sync_memory(store, settings, clock, redactor, model=)
    publish     pipeline.publish.run.publish_all(store, settings, clock, dry_run=)

Heavy parts are made on first use: a phase module, the LLM client (and with it the ``anthropic``
SDK) and the redaction key are loaded only when a cheap query of the store says that phase has
work, so an idle daemon never pays for them.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from daemon.cycle import Skipped, Step, StepEnv, StepSet
from daemon.notify import Notifier
from daemon.service import Daemon, SettingsReloader, Sidecar, StepsFactory, StoreOpener
from pipeline.clock import Clock, SystemClock
from pipeline.machine import machine_id
from pipeline.settings import Settings
from pipeline.store import Store, open_store, workload
from pipeline.vocabulary import RunOutcome

if TYPE_CHECKING:
    from pipeline.consolidate.run import Phase2Report
    from pipeline.llm.protocol import ModelClient
    from pipeline.redaction import Redactor
    from pipeline.scan.view import ScanReport

log = structlog.get_logger(__name__)


class Runtime:
    """What the steps share: the store, the current settings, the clock, and the heavy parts,
    each made on first use (and the LLM client made again when the settings change)."""

    def __init__(
        self, store: Store, settings: Callable[[], Settings], *, clock: Clock, env: Mapping[str, str]
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self._env = env
        self._llm: ModelClient | None = None
        self._llm_settings: Settings | None = None
        self._redactor: Redactor | None = None
        self.would_extract: list[tuple[str | None, str]] = []
        """In a dry run: (project, session) of each session phase 1 would extract."""

    async def llm(self) -> ModelClient:
        """The model client for the current settings (raises ``NoAPIKey`` when the key is unset);
        made again, and the old one closed, after a reload changed the settings."""
        settings = self.settings()
        if self._llm is None or self._llm_settings is not settings:
            from pipeline.llm.client import build_client

            log.info("llm_client_loading")
            client = build_client(settings, store=self.store, clock=self.clock, env=self._env)
            if self._llm is not None:
                await self._llm.aclose()
            self._llm, self._llm_settings = client, settings
        return self._llm

    def redactor(self) -> Redactor:
        if self._redactor is None:
            from pipeline.redaction import Redactor, load_or_create_key

            self._redactor = Redactor(load_or_create_key(self.settings().paths.state_dir))
        return self._redactor

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.aclose()
            self._llm = None


@dataclass(frozen=True)
class ScanSummary:
    """What a scan did, small enough to record every cycle (the full list of sessions stays in the store)."""

    files_seen: int
    files_parsed: int
    bytes_parsed: int
    enqueued: int
    sessions: dict[str, dict[str, int]]
    next_idle: str | None


def summarize_scan(report: ScanReport) -> ScanSummary:
    nxt = report.next_idle()
    next_idle = None
    if nxt is not None and nxt.eligible_at is not None:
        next_idle = f"{nxt.source} {nxt.session_id} at {nxt.eligible_at.isoformat(timespec='minutes')}"
    return ScanSummary(
        files_seen=report.files_seen,
        files_parsed=report.files_parsed,
        bytes_parsed=report.bytes_parsed,
        enqueued=report.enqueued,
        sessions=report.counts(),
        next_idle=next_idle,
    )


@dataclass(frozen=True)
class WouldConsolidate:
    scope: str
    why: str
    estimated_tokens: int
    estimated_cost_usd: float


@dataclass
class DryConsolidation:
    """A dry run's phase 2: the scopes phase 2 would run now, and those the extracts a real run
    would make would add (phase 2 cannot see extracts that do not exist yet)."""

    would_consolidate: list[WouldConsolidate]
    held: list[str]


def dry_consolidation(
    report: Phase2Report, would_extract: list[tuple[str | None, str]], settings: Settings
) -> DryConsolidation:
    from pipeline.consolidate.run import PROMPT_OVERHEAD_TOKENS
    from pipeline.extract.run import EXPECTED_OUTPUT_TOKENS
    from pipeline.llm.pricing import Usage, cost_usd
    from pipeline.projects import scope_for

    model = settings.llm.consolidation_model
    rows: dict[str, WouldConsolidate] = {}
    for s in report.scopes:
        if s.outcome == RunOutcome.WOULD_RUN:
            tokens = s.estimated_tokens or 0
            why = f"{s.inputs} inputs ({s.added} new, {s.removed} removed)"
            rows[s.scope] = WouldConsolidate(
                s.scope, why, tokens, cost_usd(model, Usage(input_tokens=tokens))
            )
    sessions: dict[str, int] = {}
    for project, _session in would_extract:
        scope = scope_for(project)
        sessions[scope] = sessions.get(scope, 0) + 1
    for scope, n in sessions.items():
        extra = n * EXPECTED_OUTPUT_TOKENS
        if scope in rows:
            tokens = rows[scope].estimated_tokens + extra
            why = f"{rows[scope].why}, and {_sessions(n)} to extract first"
        else:
            tokens = PROMPT_OVERHEAD_TOKENS + extra
            why = f"after extracting {_sessions(n)}"
        rows[scope] = WouldConsolidate(scope, why, tokens, cost_usd(model, Usage(input_tokens=tokens)))
    held = [f"{s.scope}: {s.reason}" for s in report.scopes if s.outcome == RunOutcome.SKIPPED and s.reason]
    return DryConsolidation(sorted(rows.values(), key=lambda r: (r.scope != "global", r.scope)), held)


def _sessions(n: int) -> str:
    return f"{n} session" if n == 1 else f"{n} sessions"


def pipeline_steps(env: StepEnv, *, clock: Clock, environ: Mapping[str, str]) -> StepSet:
    """The real steps: each imports its phase only when it runs, and a phase only when it has work."""
    store, settings = env.store, env.settings
    rt = Runtime(store, settings, clock=clock, env=environ)

    async def scan(*, dry_run: bool) -> object:
        from pipeline.hits.record import record_memory_uses
        from pipeline.scan.scanner import scan

        report = await scan(
            store, settings(), clock, on_memory_reads=record_memory_uses, collect_sessions=False
        )
        return summarize_scan(report)

    async def extract(*, dry_run: bool) -> object:
        if not await workload.extract_pending(store, now=clock.now()):
            return Skipped("no session waits for extraction")
        from pipeline.extract.run import run_phase1

        llm = await _llm_for(rt, dry_run)
        report = await run_phase1(
            store, settings(), clock, llm, rt.redactor(), dry_run=dry_run, owner=env.owner
        )
        rt.would_extract = [(w.project, w.session_id) for w in report.would_extract]
        return report

    async def consolidate(*, dry_run: bool) -> object:
        from pipeline.consolidate.plan import plan_all
        from pipeline.store import snapshots

        if not dry_run:
            await _rekey(store, settings(), clock)
        plans = await plan_all(store, settings(), now=clock.now())
        if not dry_run and not any(p.runnable for p in plans) and not await snapshots.to_adopt(store):
            held = [p.skip_reason for p in plans if p.action != "none" and p.skip_reason]
            from pipeline.store.consolidation import count_runs

            return Skipped(
                f"{len(held)} scopes wait: {held[0]}" if held else "no scope has new or removed extracts",
                waiting_review=await count_runs(store, RunOutcome.PENDING_REVIEW),
            )
        from pipeline.consolidate.run import run_phase2

        if not dry_run and settings().sync.enabled:
            await _pull_first(store, settings(), clock, rt)

        llm = await _llm_for(rt, dry_run)
        report = await run_phase2(store, settings(), clock, llm, rt.redactor(), dry_run=dry_run)
        return dry_consolidation(report, rt.would_extract, settings()) if dry_run else report

    async def sync(*, dry_run: bool) -> object:
        current = settings()
        if not current.sync.enabled:
            return Skipped("no [sync] remote is configured")
        if dry_run:
            return Skipped("a dry run does not sync")
        from pipeline.sync.run import due

        why = await due(store, current, clock)
        if why is None:
            return Skipped("nothing to push; the last fetch is recent")
        from pipeline.consolidate.sync_now import sync_memory

        return await sync_memory(store, current, clock, rt.redactor(), model=lambda: _model_or_none(rt))

    async def publish(*, dry_run: bool) -> object:
        from pipeline.publish.run import publish_all

        return await publish_all(store, settings(), clock, dry_run=dry_run)

    steps = {"scan": scan, "extract": extract, "consolidate": consolidate, "sync": sync, "publish": publish}
    return StepSet(StepsOfSettings(steps, settings), close=rt.aclose)


class StepsOfSettings(Mapping[str, Step]):
    """The cycle's steps as the current settings have them: without a ``[sync] remote`` there is no
    ``sync`` step at all (a cycle does not say "sync skipped" to everyone who never asked for sync);
    a reload that sets one adds it."""

    def __init__(self, steps: Mapping[str, Step], settings: Callable[[], Settings]) -> None:
        self._steps = steps
        self._settings = settings

    def _names(self) -> list[str]:
        enabled = self._settings().sync.enabled
        return [name for name in self._steps if name != "sync" or enabled]

    def __getitem__(self, name: str) -> Step:
        if name not in self._names():
            raise KeyError(name)
        return self._steps[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


async def _rekey(store: Store, settings: Settings, clock: Clock) -> None:
    """Scope keys follow the repositories' identities before anything plans by them."""
    from pipeline.consolidate.rekey import rekey

    await rekey(store, settings, clock)


async def _pull_first(store: Store, settings: Settings, clock: Clock, rt: Runtime) -> None:
    """Before a consolidation: fetch and merge the remote (the push follows in the sync step). A
    remote that cannot be had is logged; the consolidation goes on with the local memory."""
    from pipeline.consolidate.sync_now import sync_memory

    report = await sync_memory(store, settings, clock, rt.redactor(), push=False)
    if report.failure:
        log.warning("sync_before_consolidation", outcome=report.outcome, reason=report.reason)


async def _model_or_none(rt: Runtime) -> ModelClient | None:
    from pipeline.errors import NoAPIKey

    try:
        return await rt.llm()
    except NoAPIKey:
        return None


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
) -> Daemon:
    """The daemon for ``settings``; everything it needs is made here or given by the caller (tests)."""
    clock = clock or SystemClock()
    env = dict(os.environ) if env is None else env
    pid = os.getpid()

    def default_steps(step_env: StepEnv) -> StepSet:
        return pipeline_steps(step_env, clock=clock, environ=env)

    async def default_opener(url: str) -> Store:
        return await open_store(url, machine=machine_id(settings.paths.state_dir))

    return Daemon(
        settings=settings,
        clock=clock,
        open_store=store_opener or default_opener,
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
