"""A person's change to one memory, as the command line and the page make it: forget, edit, pin, unpin.

The API (stable: ``memd memories forget|edit|pin|unpin`` and the page's buttons call it):

- ``await forget_memory(rt, memory_id) -> SteerDone``: the store records what was forgotten (its
  file, name, description and the shingles of its text: ``pipeline.store.forgotten_topics``) so
  phase 2 keeps it forgotten, then the topic and its index line go in one commit;
- ``await edit_memory(rt, memory_id, text) -> SteerDone``: the person's text (a body, or the whole
  file) kept as theirs (``edited``);
- ``await pin_memory(rt, memory_id, pinned=True) -> SteerDone``: ``pinned: true`` (or not);
- ``await resolve(rt, memory_id) -> TopicId``: the id as typed (``<scope>/<file>``, the scope also
  as a bare key or a short name), ``TopicMissing`` when it names no topic.

Each lands as one commit in the memory repository (``pipeline.memory.steer``: authored by the
person, committed and signed by memd, trailer ``Memd-Action``), then is pushed (``[sync]``) and
published at once, like an accepted run (``daemon.actions``). ``SteerDone.lines()`` says it in the
words the command prints; ``SteerDone.ok`` is False when a publish failed.
"""

from __future__ import annotations

import getpass
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.runtime import Runtime
    from pipeline.memory.steer import Steered
    from pipeline.projects.scopes import TopicId
    from pipeline.publish.run import PublishReport
    from pipeline.settings import Settings
    from pipeline.sync.run import SyncReport

_NOT_IN_NAME = re.compile(r"[<>\n\r\0]+")


@dataclass(frozen=True)
class SteerDone:
    steered: Steered
    published: PublishReport | None
    synced: SyncReport | None = None

    @property
    def ok(self) -> bool:
        return self.published is None or not self.published.failed

    def lines(self, *, verbose: bool = False) -> list[str]:
        from daemon.actions import publish_lines, sync_lines

        out = [self.steered.line()]
        if self.steered.action == "forget" and self.steered.commit is not None:
            out.append(
                "it stays forgotten: memd keeps what it was (never its text) and no consolidation brings it "
                "back; the old text remains in the memory repository's git history (git log -p)"
            )
        out += sync_lines(self.synced)
        if self.published is not None:
            out += publish_lines(self.published, verbose=verbose)
        return out


def author(settings: Settings) -> str:
    """Who a person's change is by, as git writes it: ``[team] person`` (else the login name) and
    this machine's name in the allowed signers."""
    from pipeline.memory.signing import principal

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


def _scratch(rt: Runtime) -> Path:
    from pipeline.memory.repository import scratch_parent

    return scratch_parent(rt.settings().paths.state_dir, "steer")


async def forget_memory(rt: Runtime, memory_id: str) -> SteerDone:
    """Forget one memory for good: recorded, removed from the head, pushed, published."""
    from pipeline.memory.steer import Steered, forget_topic, read_topic
    from pipeline.store import forgotten_topics

    found = await resolve(rt, memory_id)
    repo = rt.memory_repo()
    repo.check_writable()
    text = read_topic(repo, found.scope, found.file)
    now = rt.clock.now()
    record = Steered(found.scope, found.file, "forget", None, text, None).forgotten(now.isoformat())
    await forgotten_topics.record(rt.store, record, now=now)
    steered = await forget_topic(
        repo, found.scope, found.file, scratch_parent=_scratch(rt), author=author(rt.settings())
    )
    return await _after(rt, steered)


async def edit_memory(rt: Runtime, memory_id: str, text: str) -> SteerDone:
    """The person's text for one memory, kept as theirs; pushed and published."""
    from pipeline.memory.steer import edit_topic

    found = await resolve(rt, memory_id)
    repo = rt.memory_repo()
    repo.check_writable()
    settings = rt.settings()
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
    return await _after(rt, steered)


async def pin_memory(rt: Runtime, memory_id: str, pinned: bool = True) -> SteerDone:
    """Pin (or unpin) one memory; pushed and published."""
    from pipeline.memory.steer import pin_topic

    found = await resolve(rt, memory_id)
    repo = rt.memory_repo()
    repo.check_writable()
    steered = await pin_topic(
        repo, found.scope, found.file, pinned, scratch_parent=_scratch(rt), author=author(rt.settings())
    )
    return await _after(rt, steered)
