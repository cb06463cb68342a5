"""Two machines for the sync tests (not a test module): each its own home, state store, memory
repository and project clone, one bare remote (served by ``git daemon`` on 127.0.0.1 when asked), and
a consolidation agent, behind the loopback fake of the Messages API, that writes one topic file per
session it finds in ``raw_memories.md`` (so what a scope holds follows from its inputs)."""

from __future__ import annotations

import atexit
import random
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.clock import FakeClock
from pipeline.consolidate.run import run_phase2
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.llm.client import LLMClient, build_client
from pipeline.llm.protocol import ModelClient
from pipeline.publish.run import PublishReport, publish_all
from pipeline.redaction import Redactor
from pipeline.settings import Settings
from pipeline.store import Store, open_store
from pipeline.sync.now import sync_memory
from pipeline.sync.pairing import key_line, trust_line
from pipeline.sync.run import SyncReport
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, done, make_settings, mem, topic, turn

ORIGIN = "git@github.com:acme/app.git"
_SESSION = re.compile(r"## Session `([^`]+)`")


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done_ = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"},
    )
    if check and done_.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done_.stderr}")
    return done_.stdout


def signing_as(key: Path) -> list[str]:
    """git options that sign a commit with the SSH private key ``key`` (a machine's
    ``<state_dir>/signing-key``, or an intruder's own), as memd signs."""
    from pipeline.gitrepo.signing import options_signing_with

    return options_signing_with(key)


def _tool_text(body: dict[str, Any]) -> str:
    last = body["messages"][-1]
    texts = []
    for block in last["content"] if isinstance(last["content"], list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [c.get("text", "") for c in content if isinstance(c, dict)]
    return "\n".join(texts)


def agent(body: dict[str, Any], _headers: dict[str, str]) -> FakeResponse:
    """Consolidation: view raw_memories.md, then one topic per session in it, the index, the digest."""
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turns == 0:
        return turn(mem("view", path="/memories/raw_memories.md"))
    if turns == 1:
        sessions = sorted(set(_SESSION.findall(_tool_text(body))))
        names = {f"s-{re.sub(r'[^a-z0-9]+', '-', s.lower())}.md": s for s in sessions}
        creates = [
            mem(
                "create",
                path=f"/memories/{n}",
                file_text=topic(f"Session {s}", f"What {s} taught.", type_="user"),
            )
            for n, s in names.items()
        ]
        index = "# Memory index\n\n" + "".join(f"- [{n}]({n}): what {s} taught\n" for n, s in names.items())
        summary = "# Summary\n\n" + ", ".join(sessions) + "\n"
        return turn(
            *creates,
            mem("create", path="/memories/MEMORY.md", file_text=index),
            mem("create", path="/memories/memory_summary.md", file_text=summary),
        )
    return done()


@dataclass
class Machine:
    name: str
    env: Env
    project: Path

    @property
    def store(self) -> Store:
        return self.env.store

    @property
    def settings(self) -> Settings:
        return self.env.settings

    @property
    def repo(self) -> MemoryRepo:
        return self.env.repo

    async def extract(self, session_id: str) -> int:
        return await self.env.add_extract(
            session_id, project=str(self.project), raw=f"- {session_id} raw note"
        )

    async def consolidate(self) -> None:
        await run_phase2(
            self.store, self.settings, self.repo, self.env.clock, self.env.llm, self.env.redactor
        )

    async def sync(self) -> SyncReport:
        async def model() -> ModelClient | None:
            return self.env.llm

        return await sync_memory(
            self.store, self.settings, self.repo, self.env.clock, self.env.redactor, model=model
        )

    async def publish(self) -> PublishReport:
        return await publish_all(self.store, self.settings, self.env.clock)

    @property
    def signing_key(self) -> Path:
        """The machine's own signing key (made at its first signed commit)."""
        from pipeline.gitrepo.signing import ensure_key

        return ensure_key(self.settings.paths.state_dir)

    def repo_head(self) -> str:
        return git(self.settings.paths.memory_dir, "rev-parse", "HEAD").strip()

    def tree(self) -> dict[str, str]:
        """Every tracked file of the memory repository's branch, path -> text."""
        path = self.settings.paths.memory_dir
        files = git(path, "ls-files", "-z").split("\0")
        return {f: (path / f).read_text(encoding="utf-8") for f in files if f}

    def published(self) -> dict[str, str]:
        """The memd topic files published to Claude Code's folder of the project, name -> text."""
        home = self.env.tmp_path
        found: dict[str, str] = {}
        for path in (home / ".claude" / "projects").glob("*/memory/memd-*.md"):
            found[path.name] = path.read_text(encoding="utf-8")
        return found


def machine_home(root: Path, name: str) -> tuple[Path, Path]:
    """Machine ``name``'s home under ``root`` (with ``.claude/``) and a clone of the project in it, at
    ``src/app-<name>`` with ``origin`` at ``ORIGIN``: (home, project)."""
    home = root / name
    home.mkdir(parents=True)
    project = home / "src" / f"app-{name}"
    project.mkdir(parents=True)
    (home / ".claude").mkdir()
    git(project, "init", "-q", "-b", "main")
    git(project, "remote", "add", "origin", ORIGIN)
    return home, project


def machine_on(
    name: str,
    home: Path,
    project: Path,
    settings: Settings,
    store: Store,
    clock: FakeClock,
    api: FakeAnthropicAPI,
    *,
    kind: str = "sync",
) -> Machine:
    """Machine ``name`` of ``home`` and ``project`` on ``store``: its model client against ``api`` and
    its own redaction key (``<kind>-test-key-<name>-…``)."""
    llm: LLMClient = build_client(
        settings, store=store, clock=clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY}, rng=random.Random(1)
    )
    env = Env(home, store, clock, api, settings, llm, Redactor(f"{kind}-test-key-{name}-0123456789".encode()))
    return Machine(name, env, project)


async def machine(
    name: str, root: Path, api: FakeAnthropicAPI, remote: str, clock: FakeClock, **sync: Any
) -> Machine:
    home, project = machine_home(root, name)
    settings = make_settings(home, api.base_url, sync={"remote": remote, **sync})
    store = await open_store(settings.paths.state_db)
    return machine_on(name, home, project, settings, store, clock, api)


async def synced_once(
    root: Path, api: FakeAnthropicAPI, remote: str, clock: FakeClock, **sync: Any
) -> tuple[Machine, SyncReport]:
    """Machine ``a`` with ``remote`` after one sync, closed again (its settings and files stay to be
    looked at): (machine, report)."""
    a = await machine("a", root, api, remote, clock, **sync)
    try:
        report = await a.sync()
    finally:
        await close(a)
    return a, report


def refused_because(report: SyncReport, outcome: SyncOutcome) -> str:
    """The reason of ``report``, a sync that ended ``outcome`` with a reason."""
    assert report.outcome == outcome
    assert report.reason is not None
    return report.reason


def writer_repo(root: Path) -> Path:
    """An empty git repository ``root/writer`` on branch ``main``: another party's, writing to a remote."""
    writer = root / "writer"
    writer.mkdir()
    git(writer, "init", "-q", "-b", "main")
    return writer


def sessions_in(tree: dict[str, str], scope: str) -> set[str]:
    """The sessions whose topic files (``<scope>/s-<session>.md``) ``tree`` holds in ``scope``."""
    return {
        path.split("/")[-1].removesuffix(".md").removeprefix("s-")
        for path in tree
        if path.startswith(f"{scope}/s-")
    }


async def pair(a: Machine, *others: Machine) -> None:
    """Pair machines as a person does: ``memd sync key`` on each of ``others``, then ``memd sync trust
    LINE`` on ``a`` (the first machine of an empty remote trusts itself; ``a`` must be trusted
    already otherwise). Each of ``others`` then syncs with the remote as a trusted machine."""
    for other in others:
        line = await key_line(other.repo)
        report = await trust_line(a.store, a.settings, a.repo, a.env.clock, a.env.redactor, line)
        assert report.outcome == SyncOutcome.SYNCED, report.reason


async def close(*machines: Machine) -> None:
    for m in machines:
        await m.env.llm.aclose()
        await m.store.close()


def bare_remote(root: Path) -> Path:
    remote = root / "served" / "memory.git"
    remote.mkdir(parents=True)
    git(remote, "init", "-q", "--bare", "-b", "main")
    return remote


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving ``base`` on 127.0.0.1 (push enabled); yields the URL of its ``memory.git``."""
    port = free_port()
    # its stderr goes to a file, read if it fails to start: a pipe nobody reads could fill and stop it
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--export-all",
                "--enable=receive-pack",
                f"--base-path={base}",
                "--listen=127.0.0.1",
                f"--port={port}",
                "--reuseaddr",
                str(base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                if proc.poll() is not None:
                    log.seek(0)
                    raise AssertionError(f"git daemon exited: {log.read().decode(errors='replace')}")
                time.sleep(0.05)
            else:
                raise AssertionError("git daemon did not listen")
            yield f"git://127.0.0.1:{port}/memory.git"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@asynccontextmanager
async def two_machines(
    tmp_path: Path, api: FakeAnthropicAPI, clock: FakeClock, *, paired: bool = True
) -> AsyncIterator[tuple[Machine, Machine]]:
    """Machines ``a`` and ``b`` sharing one bare remote served by ``git daemon`` on 127.0.0.1, ``b``
    trusted by ``a`` (``pair``) unless ``paired`` is false.

    Paired machines on the tests' usual clock are copies of one pair made once in this process
    (``_paired_template``: homes, state stores, keys, memory repository, remote), served by this
    process's one ``git daemon`` at the same URL: pairing costs a few syncs and key generation."""
    api.responder = agent
    if paired and _usual(clock):
        url = await _paired_template(api, clock)
        for part in ("a", "b", "served"):
            shutil.copytree(_TEMPLATE.root / part, tmp_path / part, symlinks=True)
        _serve(tmp_path / "served")
        a = await _machine_in("a", tmp_path, api, url, clock)
        b = await _machine_in("b", tmp_path, api, url, clock)
        try:
            yield a, b
        finally:
            await close(a, b)
        return
    remote = bare_remote(tmp_path)
    with git_daemon(remote.parent) as url:
        a = await machine("a", tmp_path, api, url, clock)
        b = await machine("b", tmp_path, api, url, clock)
        try:
            if paired:
                await pair(a, b)
            yield a, b
        finally:
            await close(a, b)


def _usual(clock: FakeClock) -> bool:
    """``clock`` reads as a new ``FakeClock()`` does (the ``clock`` fixture's, not yet advanced)."""
    fresh = FakeClock()
    return clock.now() == fresh.now() and clock.monotonic() == fresh.monotonic()


@dataclass
class _Template:
    root: Path = Path()
    url: str = ""
    daemon: ExitStack | None = None


_TEMPLATE = _Template()
"""This process's ``git daemon`` (serving whatever ``<root>/current`` points at) and its paired
machines ``a`` and ``b`` with their remote, under ``<root>``; made on first use, gone at exit."""


def _serve(served: Path) -> None:
    """Point this process's ``git daemon`` at ``served`` (the folder holding ``memory.git``)."""
    link = _TEMPLATE.root / "current"
    staged = _TEMPLATE.root / "current.new"
    staged.unlink(missing_ok=True)
    staged.symlink_to(served)
    staged.replace(link)


async def _paired_template(api: FakeAnthropicAPI, clock: FakeClock) -> str:
    """The URL of this process's ``git daemon``, once its template pair is made (a pairing that
    failed leaves no template: the next test tries again)."""
    if _TEMPLATE.daemon is None:
        root = Path(tempfile.mkdtemp(prefix="memd-sync-template-"))
        _TEMPLATE.root = root
        stack = ExitStack()
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        try:
            remote = bare_remote(root)
            _serve(remote.parent)
            url = stack.enter_context(git_daemon(root / "current"))
            a = await machine("a", root, api, url, FakeClock(clock.now()))
            b = await machine("b", root, api, url, FakeClock(clock.now()))
            try:
                await pair(a, b)
            finally:
                await close(a, b)
        except BaseException:
            stack.close()
            raise
        _TEMPLATE.url, _TEMPLATE.daemon = url, stack
        atexit.register(stop_template)
    return _TEMPLATE.url


def stop_template() -> None:
    """Stop this process's ``git daemon`` and remove its template pair, if made (at the session's end)."""
    if _TEMPLATE.daemon is not None:
        stack, _TEMPLATE.daemon = _TEMPLATE.daemon, None
        stack.close()


async def _machine_in(name: str, root: Path, api: FakeAnthropicAPI, remote: str, clock: FakeClock) -> Machine:
    """Machine ``name`` whose home ``root/name`` (and project clone in it) already exists."""
    home = root / name
    settings = make_settings(home, api.base_url, sync={"remote": remote})
    store = await open_store(settings.paths.state_db)
    return machine_on(name, home, home / "src" / f"app-{name}", settings, store, clock, api)
