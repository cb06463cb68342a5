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
  behind one memory, and whether it is edited, pinned or held in an inbox run (``Why.lines()``);
- ``await resolve(rt, memory_id) -> TopicId``: the id as typed (``<scope>/<file>``, the scope also
  as a bare key or a short name), ``TopicMissing`` when it names no topic.

Each is made under the scope's consolidation lease (a run of the scope going on now refuses it
with ``SteerRefused``, nothing changed) and lands as one commit in the memory repository (``pipeline.memory.steer``: authored by the
person, committed and signed by memd, trailer ``Memd-Action``), then is pushed (``[sync]``) and
published at once, like an accepted run (``daemon.actions``). ``SteerDone.lines()`` says it in the
words the command prints; ``SteerDone.ok`` is False when a publish failed, and then the lines say
``NOT finished`` and name each published copy that still holds the memory as it was
(``SteerDone.holding``). A forget that does not land (refused, or git failed) takes back the record
it made (``forgotten_topics.take_back``): it finishes or changes nothing.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from pipeline.gitrepo.repository import MemoryRepo
    from pipeline.memory.forget_history import Rewritten
    from pipeline.memory.steer import Steered
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
        from pipeline.layout import GLOBAL_SCOPE

        if self.published is None:
            return []
        scope = self.steered.scope
        return [r.path for r in self.published.failed if scope == GLOBAL_SCOPE or r.scope == scope]

    def lines(self, *, verbose: bool = False) -> list[str]:
        from daemon.actions import publish_lines, sync_lines

        out = [self.first_line()]
        if self.steered.action == "forget" and self.steered.commit is not None and not self.holding:
            out.append(
                "it stays forgotten: memd keeps what it was (never its text) and no consolidation, merge or "
                "other machine brings it back; " + self._history_line()
            )
        if self.steered.digest_withdrawn and self.steered.commit is not None:
            out.append(
                f"{self.steered.scope}/memory_summary.md, the digest written from every topic, is a placeholder "
                f"until the next consolidation with a model rebuilds it {self._digest_with()} (at the next "
                f"cycle, or now: memd consolidate {self.steered.scope})"
            )
        out += sync_lines(self.synced)
        if self.published is not None:
            out += publish_lines(self.published, verbose=verbose)
        return out + self.unfinished_lines()

    def _digest_with(self) -> str:
        return "with the person's text" if self.steered.action == "edit" else "without this memory"

    def _history_line(self) -> str:
        history = self.history
        if history is not None and history.skipped is None:
            done = (
                f"its text is gone from the memory repository's history too ({history.commits} commit(s) "
                "made again without it, reflogs expired, old objects pruned)"
            )
            if history.synced:
                done += (
                    "; the rewritten history, signed by this machine, travels at the next sync: it replaces "
                    "the old one on the remote, and your other trusted machines adopt it at their next sync "
                    "(clones made by hand and the remote host's own backups keep what they hold)"
                )
            return done
        why = history.skipped if history is not None and history.skipped else "git log -p"
        return f"the old text remains in the memory repository's git history ({why})"

    def first_line(self) -> str:
        """What the change did, or, when a published copy still holds the memory as it was, that
        it is NOT finished."""
        steered = self.steered
        if steered.commit is None or not self.holding:
            return steered.line()
        done = "removed from" if steered.action == "forget" else f"{steered.line_verb()} in"
        return (
            f"{steered.id}: {done} the memory repository ({steered.commit[:12]}), but NOT finished: "
            f"{len(self.holding)} published cop{'y' if len(self.holding) == 1 else 'ies'} still "
            f"hold{'s' if len(self.holding) == 1 else ''} it{self._as_before()} (below)"
        )

    def unfinished_lines(self) -> list[str]:
        """Each published copy that still holds the memory as it was (empty: none)."""
        return [
            f"NOT finished: the published copy at {path} still holds {self.steered.id}{self._as_before()} "
            "(its publish failed, above); `memd publish` writes it again"
            for path in (self.holding if self.steered.commit is not None else [])
        ]

    def _as_before(self) -> str:
        return "" if self.steered.action == "forget" else " as it was before"


def author(settings: Settings) -> str:
    """Who a person's change is by, as git writes it: ``[team] person`` (else the login name) and
    this machine's name in the allowed signers."""
    from pipeline.gitrepo.signing import principal

    try:
        login = getpass.getuser()
    except (OSError, KeyError):
        login = ""
    name = _NOT_IN_NAME.sub(" ", settings.team.person or login).strip() or "the person"
    return f"{name} <{principal(Path(settings.paths.state_dir))}>"


async def resolve(rt: Runtime, memory_id: str) -> TopicId:
    """The topic ``memory_id`` names (``TopicMissing`` when it is no id, or names no topic file)."""
    from pipeline.memory import read
    from pipeline.memory.steer import TopicMissing, read_topic
    from pipeline.projects.scopes import ScopeNotFound, topic_id

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
    from daemon.actions import push_after
    from pipeline.publish.run import publish_all

    synced = await push_after(rt)
    return SteerDone(steered, await publish_all(rt.store, rt.settings(), rt.clock), synced)


@contextlib.asynccontextmanager
async def _holding(rt: Runtime, scope: str) -> AsyncIterator[None]:
    """The scope's consolidation lease for the change: a run of the scope going on now would build on
    the memory as it was before it (``SteerRefused``: try again when it ends)."""
    import secrets

    from pipeline.consolidate.lease import LEASE_TTL
    from pipeline.memory.steer import SteerRefused
    from pipeline.proc import pid_alive
    from pipeline.store import leases

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
    from pipeline.gitrepo.repository import scratch_parent

    return scratch_parent(rt.settings().paths.state_dir, "steer")


async def forget_memory(rt: Runtime, memory_id: str) -> SteerDone:
    """Forget one memory for good: recorded, removed from the head, pushed, published."""
    from pipeline.memory.likeness import ForgottenTopic
    from pipeline.memory.steer import Steered, forget_topic, head_holds, read_topic
    from pipeline.store import forgotten_topics

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
        history = await forget_history(repo, Path(rt.settings().paths.state_dir), team=rt.store.shared)
    done = await _after(rt, steered)
    return replace(done, history=history)


async def forget_history(repo: MemoryRepo, state_dir: Path, *, team: bool = False) -> Rewritten:
    """The memory repository's history without any forgotten text (``pipeline.memory.forget_history``:
    every forget record on the branch applied to every commit), before anything is pushed; once
    synced, the rewrite recorded to travel at the next sync (``pipeline.sync.rewrites``; not in team
    mode, where the remote's history is not this machine's own)."""
    import asyncio

    from pipeline.memory import forget_records
    from pipeline.memory.forget_history import rewrite
    from pipeline.sync.rewrites import forget_rewrite

    records = await asyncio.to_thread(forget_records.read, repo.path)
    if team:
        return await rewrite(repo, records, state_dir=state_dir)
    return await forget_rewrite(repo, records, state_dir=state_dir)


async def edit_memory(rt: Runtime, memory_id: str, text: str) -> SteerDone:
    """The person's text for one memory, kept as theirs; pushed and published."""
    from pipeline.memory.steer import edit_topic

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
            from pipeline.store import forgotten_topics

            # the placeholder digest is written again from the edited topic at the next run with a model
            await forgotten_topics.mark_rebuild(rt.store, found.scope, now=rt.clock.now())
    return await _after(rt, steered)


async def pin_memory(rt: Runtime, memory_id: str, pinned: bool = True) -> SteerDone:
    """Pin (or unpin) one memory; pushed and published."""
    from pipeline.memory.steer import pin_topic

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

    def lines(self) -> list[str]:
        meta = self.story.meta
        where = f" ({', '.join(self.folders)})" if self.folders else ""
        out = [f"{self.id}{where}", f"  {meta.name or self.story.file}: {meta.description}".rstrip(": ")]
        state = []
        if meta.edited is not None:
            state.append(f"edited by the person on {meta.edited.isoformat()} (phase 2 never overwrites it)")
        if meta.pinned:
            state.append("pinned (phase 2 never deletes it; published first)")
        state += [
            f"held: the pending inbox run {b.removeprefix('inbox/')} would change it"
            for b in self.story.held_in
        ]
        out += ["state:", *(f"  {s}" for s in state or ["neither edited, pinned nor held"])]
        out.append(f"sessions ({len(meta.sources)}):")
        for sid in meta.sources:
            row = self.sessions.get(sid)
            if row is None:
                out.append(f"  {sid}: not in this state store (another machine's, or forgotten)")
                continue
            day = row.last_activity or row.started_at
            when = day.date().isoformat() if day is not None else "?"
            out.append(f"  {sid}: {row.source}, {when}, {row.project or '(no project)'}")
        if not meta.sources:
            out.append("  none (written by hand)")
        out.append(f"commits ({len(self.story.commits)}):")
        for c in self.story.commits:
            line = f"  {c.at[:16].replace('T', ' ')}  {c.sha[:10]}  {c.subject} (by {c.author})"
            run = self.runs.get(c.run_id or "")
            if c.run_id:
                line += f"  [run {c.run_id}" + (f", {run.outcome}, {run.mode}]" if run else "]")
            out.append(line)
        return out


async def why_memory(rt: Runtime, memory_id: str) -> Why:
    """The sessions, runs and commits behind one memory, and whether it is edited, pinned or held."""
    from pipeline.memory.why import story
    from pipeline.projects.scopes import folders_by_scope
    from pipeline.store import consolidation
    from pipeline.store.publications import known_projects
    from pipeline.store.sessions_behind import sessions_behind

    found = await resolve(rt, memory_id)
    told = await story(rt.memory_repo(), found.scope, found.file)
    sessions = await sessions_behind(rt.store, told.meta.sources)
    runs = {}
    for c in told.commits:
        if c.run_id and (run := await consolidation.get_run(rt.store, c.run_id)) is not None:
            runs[c.run_id] = run
    folders = folders_by_scope(await known_projects(rt.store)).get(found.scope, [])
    return Why(told, sessions, runs, folders)
