"""The one place memd's parts are made: every entry point (the daemon, each command, the web page)
gets them here.

``async with Runtime.open(settings) as rt:`` gives the settings (``rt.settings()``, the current
ones: the daemon's reload replaces them), the clock, the state store opened as this machine
(``pipeline.machine``), and, made on first use, the redactor (``rt.redactor()``), the model client
(``await rt.llm()``, made again after the settings changed; ``NoAPIKey`` when the key is unset) and
the memory repository (``rt.memory_repo()``). The daemon makes its ``Runtime`` around the store it
opened with ``store_opener``. The module functions make one part each for the commands that need
no store (`memd memories`, `memd redact`). Nothing else constructs these parts (a test enforces it):
the pipeline's steps take them as arguments.

A dry run writes nothing of its own: it creates no redaction key (a key for the run only, when
there is none yet) and no machine id; where memd never ran (no SQLite state store yet) it works in
a temporary state directory that is removed afterwards (``dry_run_settings``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from pipeline import store_url
from pipeline.clock import Clock, SystemClock
from pipeline.machine import known_id, machine_id
from pipeline.settings import Settings

if TYPE_CHECKING:
    from daemon.service import StoreOpener
    from pipeline.gitrepo.message_gate import SecretFinder
    from pipeline.gitrepo.repository import MemoryRepo
    from pipeline.llm.protocol import ModelClient
    from pipeline.redaction import Redactor
    from pipeline.store import Store

log = structlog.get_logger(__name__)


async def open_store_here(settings: Settings, *, dry_run: bool = False, url: str | None = None) -> Store:
    """The state store (``url``, default ``[paths] state_db``) opened as this machine. A dry run
    names the machine only when its id exists (it creates none)."""
    from pipeline.store import open_store

    state_dir = settings.paths.state_dir
    machine = known_id(state_dir) if dry_run else machine_id(state_dir)
    store = await open_store(url or settings.paths.state_db, machine=machine)
    from pipeline.machine import host_id
    from pipeline.store import machines

    if dry_run:  # the machine key of this id on this host, as recorded (pipeline.store.machines)
        try:
            await machines.recognize(store, machine_id=machine, host=host_id(state_dir, create=False))
        except BaseException:
            await store.close()
            raise
    else:
        from pipeline.proc import hostname

        try:
            await machines.identify(
                store,
                machine_id=machine,
                host=host_id(state_dir) or "",
                hostname=hostname(),
                person=settings.team.person or None,
                now=SystemClock().now(),
            )
            if store.shared and settings.team.person:  # a person is their keys (pipeline.team.people)
                from pipeline.gitrepo.signing import Signer
                from pipeline.team.people import bind

                await bind(store, Signer(state_dir), settings.team.person, now=SystemClock().now())
        except BaseException:
            await store.close()
            raise
    return store


async def open_store_reading(url: str, *, timeout_s: float, state_dir: Path | None = None) -> Store:
    """The state store as a process that is not the daemon reads it (``memd mcp``): never created
    nor migrated, as this machine when ``state_dir`` names one whose id exists, within ``timeout_s``."""
    import asyncio

    from pipeline.store.opener import open_store

    named = {} if state_dir is None else {"machine": known_id(state_dir)}
    return await asyncio.wait_for(open_store(url, migrate=False, **named), timeout_s)


def reader_redactor(state_dir: Path) -> Redactor:
    """The redactor of a process that only reads (``memd mcp``): the installation's key when it
    exists (never created: where memd never ran there is none), else a key of this process alone,
    which redacts just as surely."""
    from pipeline.redaction import Redactor
    from pipeline.redaction.key import KEY_BYTES, read_key

    return Redactor(read_key(state_dir) or secrets.token_bytes(KEY_BYTES))


def store_opener(settings: Callable[[], Settings], *, dry_run: bool = False) -> StoreOpener:
    """The daemon's way to open its store: as this machine, with the settings current at the time."""

    async def opener(url: str) -> Store:
        return await open_store_here(settings(), dry_run=dry_run, url=url)

    return opener


def redactor(settings: Settings, *, dry_run: bool = False) -> Redactor:
    """The redactor with this installation's key (created at first use; a dry run creates none and
    redacts with a key of its own, made for the run)."""
    from pipeline.redaction import KEY_FILE, Redactor, load_or_create_key
    from pipeline.redaction.key import KEY_BYTES

    state_dir = Path(settings.paths.state_dir)
    if dry_run and not (state_dir / KEY_FILE).exists():
        return Redactor(secrets.token_bytes(KEY_BYTES))
    return Redactor(load_or_create_key(state_dir))


def memory_repo(settings: Settings, *, secret_gate: Callable[[], SecretFinder] | None = None) -> MemoryRepo:
    """The memory repository at ``[paths] memory_dir``, every commit made there signed with this
    machine's key (``<state_dir>/signing-key``, made by ``ssh-keygen`` at the first commit) and its
    message passing ``secret_gate`` when one is given.

    Without ``ssh-keygen`` on this machine and without a ``[sync] remote``, commits are not signed
    (nothing checks them: signatures matter only where memory travels; a first sync with a remote
    vouches for the history it pushes). With a remote, a missing ``ssh-keygen`` fails the commit
    with that reason."""
    from pipeline.gitrepo.repository import MemoryRepo
    from pipeline.gitrepo.signing import Signer, can_sign

    signer = Signer(Path(settings.paths.state_dir)) if settings.sync.remote or can_sign() else None
    return MemoryRepo(Path(settings.paths.memory_dir), signer, secret_gate=secret_gate)


def model_client(settings: Settings, store: Store, clock: Clock, env: Mapping[str, str]) -> ModelClient:
    """The model client (``NoAPIKey`` when the key is unset); the caller closes it."""
    from pipeline.llm.client import build_client

    log.info("llm_client_loading")
    return build_client(settings, store=store, clock=clock, env=env)


@contextlib.contextmanager
def dry_run_settings(settings: Settings) -> Iterator[Settings]:
    """The settings a dry run works with: the same, unless memd never ran here (a SQLite state store
    that does not exist yet); then a temporary state directory and store, removed at the end, so the
    dry run leaves nothing behind."""
    db = store_url.sqlite_path(settings.paths.state_db)
    if db is None or db.exists():
        yield settings
        return
    with tempfile.TemporaryDirectory(prefix="memd-dry-run-") as tmp:
        paths = settings.paths.model_copy(
            update={"state_dir": Path(tmp), "state_db": f"sqlite:///{Path(tmp) / db.name}"}
        )
        yield settings.model_copy(update={"paths": paths})


class Runtime:
    """The parts one process shares: the store, the current settings, the clock, and the heavy
    parts, each made on first use (the model client made again when the settings change)."""

    def __init__(
        self,
        store: Store,
        settings: Callable[[], Settings],
        *,
        clock: Clock,
        env: Mapping[str, str],
        dry_run: bool = False,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.env = env
        self.dry_run = dry_run
        self._llm: ModelClient | None = None
        self._llm_settings: Settings | None = None
        self._redactor: Redactor | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        settings: Settings | Callable[[], Settings],
        *,
        clock: Clock | None = None,
        env: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> AsyncIterator[Runtime]:
        """Open the store as this machine; on leaving, close the model client and the store. A dry
        run where memd never ran works in a temporary state directory (``dry_run_settings``)."""
        current = settings if callable(settings) else (lambda: settings)
        with contextlib.ExitStack() as stack:
            if dry_run:
                fixed = stack.enter_context(dry_run_settings(current()))
                current = lambda: fixed  # noqa: E731
            store = await open_store_here(current(), dry_run=dry_run)
            rt = cls(
                store,
                current,
                clock=clock or SystemClock(),
                env=dict(os.environ) if env is None else env,
                dry_run=dry_run,
            )
            try:
                yield rt
            finally:
                try:
                    await rt.aclose()
                finally:
                    await store.close()

    async def llm(self) -> ModelClient:
        """The model client for the current settings (raises ``NoAPIKey`` when the key is unset);
        made again, and the old one closed, after a reload changed the settings."""
        settings = self.settings()
        if self._llm is None or self._llm_settings is not settings:
            client = model_client(settings, self.store, self.clock, self.env)
            if self._llm is not None:
                await self._llm.aclose()
            self._llm, self._llm_settings = client, settings
        return self._llm

    async def llm_or_none(self) -> ModelClient | None:
        """The model client, or None without an API key."""
        from pipeline.errors import NoAPIKey

        try:
            return await self.llm()
        except NoAPIKey:
            return None

    def redactor(self, *, dry_run: bool = False) -> Redactor:
        """This installation's redactor (in a dry run, one that creates no key)."""
        if dry_run or self.dry_run:
            return redactor(self.settings(), dry_run=True)
        if self._redactor is None:
            self._redactor = redactor(self.settings())
        return self._redactor

    def memory_repo(self) -> MemoryRepo:
        """The memory repository; every commit message it makes passes this runtime's redactor."""
        return memory_repo(self.settings(), secret_gate=self.redactor)

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.aclose()
            self._llm = None
