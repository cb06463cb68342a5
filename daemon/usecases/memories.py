"""A person's change to one memory, as the command line and the page make it: forget, edit, pin, unpin.

The API (stable: ``memd memories forget|edit|pin|unpin`` and the page's buttons call it):

- ``await forget_memory(rt, memory_id) -> SteerDone``: the store records what was forgotten (its
  file, name, description and the shingles of its text: ``pipeline.store.forgotten_topics``) so
  phase 2 keeps it forgotten, then the topic, its index line and the scope's digest (the placeholder
  takes its place: ``pipeline.memory.steer.forget_topic``) go in one commit, published at once
  without a model call, and the scope is marked for a run at the next cycle with a model, cooldown
  or not, which writes the digest again without it;
- ``await edit_memory(rt, memory_id, text) -> SteerDone``: the person's text (a body, or the whole
  file) kept as theirs (``edited``);
- ``await pin_memory(rt, memory_id, pinned=True) -> SteerDone``: ``pinned: true`` (or not);
- ``await why_memory(rt, memory_id) -> Why``: the sessions (agent, date, project), runs and commits
  behind one memory, and whether it is edited, pinned or held in an inbox run;
- ``await resolve(rt, memory_id) -> TopicId``: the id as typed (``<scope>/<file>``, the scope also
  as a bare key or a short name), ``TopicMissing`` when it names no topic.

Each is made under the scope's consolidation lease (a run of the scope going on now refuses it
with ``SteerRefused``, nothing changed) and lands as one commit in the memory repository (``pipeline.memory.steer``: authored by the
person, committed and signed by memd, trailer ``Memd-Action``), then is pushed (``[sync]``) and
published at once, like an accepted run (``daemon.usecases.changes``). ``SteerDone.ok`` is False
when a publish failed; ``SteerDone.holding`` names each published copy that still holds the memory
as it was (``daemon.words.steer_lines`` says it as the command prints it). A forget that does not land (refused, or git failed) takes back the record
it made (``forgotten_topics.take_back``): it finishes or changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import re
import secrets
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.usecases.sync import push_after
from pipeline.consolidate.lease import LEASE_TTL
from pipeline.gitrepo.repository import scratch_parent
from pipeline.gitrepo.signing import principal
from pipeline.layout import GLOBAL_SCOPE
from pipeline.memory import forget_records, read, tombstones
from pipeline.memory.likeness import ForgottenTopic
from pipeline.memory.steer import (
    Steered,
    SteerRefused,
    TopicMissing,
    edit_topic,
    forget_topic,
    head_holds,
    pin_topic,
    read_topic,
)
from pipeline.proc import pid_alive
from pipeline.projects.scopes import ScopeNotFound, folders_by_scope, topic_id
from pipeline.store import consolidation, forgotten_topics, leases

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from pipeline.gitrepo.repository import MemoryRepo
    from pipeline.memory.forget_history import Rewritten
    from pipeline.memory.why import TopicStory
    from pipeline.projects.scopes import TopicId
    from pipeline.publish.run import PublishReport
    from pipeline.settings import Settings
    from pipeline.store.consolidation import RunRow
    from pipeline.store.sessions_behind import SessionBehind
    from pipeline.sync.run import SyncReport

_NOT_IN_NAME = re.compile(r"[<>\n\r\0]+")


@dataclass(frozen=True)
class SteerDone:
    steered: Steered
    published: PublishReport | None
    synced: SyncReport | None = None
    history: Rewritten | None = None
    """After a forget: how the memory repository's history was rewritten without its text."""

    @property
    def ok(self) -> bool:
        return self.published is None or not self.published.failed

    @property
    def holding(self) -> list[str]:
        """The published copies that may still hold the memory as it was before the change: those
        of its scope whose publish failed (any failed one, for ``global``, which every project's
        copy may carry)."""

        if self.published is None:
            return []
        scope = self.steered.scope
        return [r.path for r in self.published.failed if scope == GLOBAL_SCOPE or r.scope == scope]


def author(settings: Settings) -> str:
    """Who a person's change is by, as git writes it: ``[team] person`` (else the login name) and
    this machine's name in the allowed signers."""

    try:
        login = getpass.getuser()
    except (OSError, KeyError):
        login = ""
    name = _NOT_IN_NAME.sub(" ", settings.team.person or login).strip() or "the person"
    return f"{name} <{principal(Path(settings.paths.state_dir))}>"


async def resolve(rt: Runtime, memory_id: str) -> TopicId:
    """The topic ``memory_id`` names (``TopicMissing`` when it is no id, or names no topic file)."""

    repo = rt.memory_repo()
    try:
        found = topic_id(memory_id, known=read.scopes(repo))
    except ScopeNotFound as exc:
        raise TopicMissing(str(exc)) from None
    read_topic(repo, found.scope, found.file)
    return found


async def _after(rt: Runtime, steered: Steered) -> SteerDone:
    if steered.commit is None:
        return SteerDone(steered, None)
    from pipeline.publish.run import publish_all  # lazy: daemon.usecases

    synced = await push_after(rt)
    return SteerDone(steered, await publish_all(rt.store, rt.settings(), rt.clock), synced)


@contextlib.asynccontextmanager
async def _holding(rt: Runtime, scope: str) -> AsyncIterator[None]:
    """The scope's consolidation lease for the change: a run of the scope going on now would build on
    the memory as it was before it (``SteerRefused``: try again when it ends)."""

    name, owner, pid = f"consolidate:{scope}", f"steer-{secrets.token_hex(4)}", os.getpid()

    def gone(holder: leases.Holder) -> bool:
        return holder.on_this_machine(rt.store.machine) and holder.pid != pid and not pid_alive(holder.pid)

    got = await leases.acquire(
        rt.store,
        name,
        owner=owner,
        host=socket.gethostname(),
        pid=pid,
        now=rt.clock.now(),
        ttl=LEASE_TTL,
        owner_gone=gone,
    )
    if isinstance(got, leases.Holder):
        raise SteerRefused(
            f"a consolidation of {scope} is running ({got.host}, pid {got.pid}): nothing changed; "
            "try again when it ends"
        )
    try:
        yield
    finally:
        await leases.release(rt.store, name, owner=owner)


def _scratch(rt: Runtime) -> Path:

    return scratch_parent(rt.settings().paths.state_dir, "steer")


async def forget_memory(rt: Runtime, memory_id: str) -> SteerDone:
    """Forget one memory for good: recorded, removed from the head, pushed, published."""

    found = await resolve(rt, memory_id)
    repo = rt.memory_repo()
    repo.check_writable()
    async with _holding(rt, found.scope):
        text = read_topic(repo, found.scope, found.file)
        now = rt.clock.now()
        record = Steered(found.scope, found.file, "forget", None, text, None).forgotten(now.isoformat())
        # Recorded before the commit (a process killed after it lands still keeps it forgotten), and
        # taken back when the commit does not land: a forget finishes or changes nothing.
        replaced = await forgotten_topics.record(rt.store, record, ForgottenTopic.from_json, now=now)
        try:
            steered = await forget_topic(
                repo,
                found.scope,
                found.file,
                scratch_parent=_scratch(rt),
                author=author(rt.settings()),
                forgotten_at=now.isoformat(),
            )
        except BaseException:
            # interrupted or failed: taken back only if the commit did not land (a Ctrl-C while the
            # scratch copy goes comes after it)
            if await head_holds(repo, found.scope, found.file):
                await forgotten_topics.take_back(rt.store, record, replaced, now=rt.clock.now())
            else:
                await forgotten_topics.mark_rebuild(rt.store, found.scope, now=rt.clock.now())
            raise
        if steered.commit is None:
            await forgotten_topics.take_back(rt.store, record, replaced, now=rt.clock.now())
            return await _after(rt, steered)
        # the placeholder digest is written again without it at the next run with a model
        await forgotten_topics.mark_rebuild(rt.store, found.scope, now=rt.clock.now())
        history = await forget_history(repo, Path(rt.settings().paths.state_dir))
    done = await _after(rt, steered)
    return replace(done, history=history)


async def forget_history(repo: MemoryRepo, state_dir: Path) -> Rewritten:
    """The memory repository's history without any forgotten text (``pipeline.memory.forget_history``:
    every forget record and tombstone on the branch applied to every commit), before anything is
    pushed; once synced, the rewrite recorded to travel at the next sync (``pipeline.sync.rewrites``;
    in team mode too: the commit made for the team's remote carries the record)."""

    from pipeline.sync.rewrites import forget_rewrite  # lazy: daemon.usecases

    records = await asyncio.to_thread(forget_records.read, repo.path)
    graves = await asyncio.to_thread(tombstones.read, repo.path)  # forgotten sessions (``memd forget``)
    return await forget_rewrite(repo, records, state_dir=state_dir, graves=graves)


async def edit_memory(rt: Runtime, memory_id: str, text: str) -> SteerDone:
    """The person's text for one memory, kept as theirs; pushed and published."""

    found = await resolve(rt, memory_id)
    repo = rt.memory_repo()
    repo.check_writable()
    settings = rt.settings()
    async with _holding(rt, found.scope):
        steered = await edit_topic(
            repo,
            found.scope,
            found.file,
            text,
            today=rt.clock.now().date(),
            scratch_parent=_scratch(rt),
            author=author(settings),
            max_bytes=settings.memories.topic_file_max_bytes,
        )
        if steered.digest_withdrawn and steered.commit is not None:
            # the placeholder digest is written again from the edited topic at the next run with a model
            await forgotten_topics.mark_rebuild(rt.store, found.scope, now=rt.clock.now())
    return await _after(rt, steered)


async def pin_memory(rt: Runtime, memory_id: str, pinned: bool = True) -> SteerDone:
    """Pin (or unpin) one memory; pushed and published."""

    found = await resolve(rt, memory_id)
    repo = rt.memory_repo()
    repo.check_writable()
    async with _holding(rt, found.scope):
        steered = await pin_topic(
            repo, found.scope, found.file, pinned, scratch_parent=_scratch(rt), author=author(rt.settings())
        )
    return await _after(rt, steered)


@dataclass(frozen=True)
class Why:
    """What stands behind one memory: its story in git (``pipeline.memory.why``), the sessions its
    ``sources`` name (as the store knows them) and the consolidation runs of its commits."""

    story: TopicStory
    sessions: dict[str, SessionBehind]
    runs: dict[str, RunRow]
    folders: list[str]

    @property
    def id(self) -> str:
        return f"{self.story.scope}/{self.story.file}"


async def why_memory(rt: Runtime, memory_id: str) -> Why:
    """The sessions, runs and commits behind one memory, and whether it is edited, pinned or held."""
    from pipeline.memory.why import story  # lazy: daemon.usecases
    from pipeline.store.publications import known_projects  # lazy: daemon.usecases
    from pipeline.store.sessions_behind import sessions_behind  # lazy: daemon.usecases

    found = await resolve(rt, memory_id)
    told = await story(rt.memory_repo(), found.scope, found.file)
    sessions = await sessions_behind(rt.store, told.meta.sources)
    runs = {}
    for c in told.commits:
        if c.run_id and (run := await consolidation.get_run(rt.store, c.run_id)) is not None:
            runs[c.run_id] = run
    folders = folders_by_scope(await known_projects(rt.store)).get(found.scope, [])
    return Why(told, sessions, runs, folders)
