"""A person steers one memory: forget it, edit it, pin or unpin it; each change one commit.

The API (stable: the command line and the page both call it, through ``daemon.steer`` which adds
the store's record of a forget, the push and the publish):

- ``await forget_topic(repo, scope, file, *, scratch_parent, author) -> Steered``: the topic file
  and its line in ``MEMORY.md`` go from the branch's head, and so does the scope's digest
  ``memory_summary.md``, which phase 2 writes from every topic: in the same commit it becomes the
  placeholder (``layout.PLACEHOLDER_SUMMARY``, ``Steered.digest_withdrawn``) that the scope's next
  run with a model writes again (``pipeline.consolidate.workspace`` knows it); ``Steered.before`` is
  the text the topic had (``Steered.forgotten()`` gives the record phase 2 keeps it forgotten by).
- ``await edit_topic(repo, scope, file, text, *, today, scratch_parent, author, max_bytes=None)``:
  ``text`` is the new body, or the whole file when it starts with a frontmatter block (the person
  may change ``name``, ``description``, ``type``, ``expires`` and ``pinned``); memd keeps
  ``created`` and ``sources``, sets ``updated`` and ``edited`` to ``today`` and ``evidence`` to
  ``user`` (the person's word); the scope's digest becomes the placeholder in the same commit, as
  for a forget (it was written from the topic as it was).
- ``await pin_topic(repo, scope, file, pinned, *, scratch_parent, author)``: ``pinned: true`` in
  the frontmatter, or gone.
- ``read_topic(repo, scope, file) -> str``: the topic's text on the work tree (``TopicMissing``).

Each change is made in a scratch copy and lands as one commit (``MemoryRepo.land``, rebased onto
the branch if it moved), authored by ``author`` (the person; memd commits and signs it like every
commit of its own), its message through the secret gate, with the trailer ``Memd-Action: <action>
<id>`` (``ACTION_TRAILER``). A change that changes nothing makes no commit (``Steered.commit`` is
None). Errors: ``TopicMissing`` (no such topic: exit 1), ``SteerRefused`` (the new text is not a
valid topic, holds a secret or is over the cap; nothing changed), ``MemoryRepoError`` (git).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.message_gate import describe_secret
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import (
    GLOBAL_SCOPE,
    PLACEHOLDER_SUMMARY,
    SUMMARY,
    check_file,
    check_scope,
    is_placeholder,
    is_topic_path,
)
from pipeline.memory import forget_records, frontmatter
from pipeline.memory.likeness import ForgottenTopic, shingles
from pipeline.memory.listing import drop_index_lines
from pipeline.safefile import UnsafeFile, read_capped

ACTION_TRAILER = "Memd-Action"
"""The commit trailer naming what a person asked (``Memd-Action: forget projects/app-1a2b3c4d/deploy.md``)."""
FORGET, EDIT, PIN, UNPIN = "forget", "edit", "pin", "unpin"
READ_MAX_BYTES = 1_000_000


class TopicMissing(MemoryRepoError):
    """The memory id names no topic file of the memory repository."""


class SteerRefused(MemoryRepoError):
    """The change cannot be made as asked (the message says why); nothing changed."""


@dataclass(frozen=True)
class Steered:
    scope: str
    file: str
    action: str
    commit: str | None
    """The commit that landed; None when the change changed nothing (already pinned...)."""
    before: str
    """The topic's text before the change."""
    after: str | None
    """Its text after (None: forgotten)."""
    digest_withdrawn: bool = False
    """After a forget, the scope's digest (``memory_summary.md``) is the placeholder, put there by
    the same commit (or by an earlier forget): the digest is written from every topic, so it may
    repeat the forgotten one."""

    @property
    def id(self) -> str:
        return f"{self.scope}/{self.file}"

    def forgotten(self, at: str) -> ForgottenTopic:
        """The record phase 2 keeps this topic forgotten by (its text is not in it)."""
        parsed = frontmatter.parse(self.before, strict=False)
        return ForgottenTopic(
            self.scope,
            self.file,
            parsed.meta.name,
            parsed.meta.description,
            shingles(parsed.body),
            at,
        )

    def line(self) -> str:
        if self.commit is None:
            return f"{self.id}: nothing to change (already {self._state()})"
        return f"{self.id}: {self._done()} ({self.commit[:12]})"

    def line_verb(self) -> str:
        """What the change did, in a word (``forgotten``, ``edited``, ``pinned``, ``unpinned``)."""
        return self._done()

    def _state(self) -> str:
        return {PIN: "pinned", UNPIN: "not pinned", EDIT: "this text", FORGET: "forgotten"}[self.action]

    def _done(self) -> str:
        return {PIN: "pinned", UNPIN: "unpinned", EDIT: "edited", FORGET: "forgotten"}[self.action]


def _topic_path(top: Path, scope: str, file: str) -> Path:
    try:
        check_scope(scope)
        check_file(file)
    except ValueError as exc:
        raise TopicMissing(str(exc)) from None
    if not is_topic_path(file):
        raise TopicMissing(f"{scope}/{file} is not a topic file (the index, the digest or an input)")
    return top.joinpath(*scope.split("/"), *file.split("/"))


def _read(path: Path, what: str) -> str:
    if path.is_symlink() or not path.is_file():
        raise TopicMissing(f"no memory {what}")
    try:
        return read_capped(path, READ_MAX_BYTES, follow_symlinks=False).decode("utf-8", errors="replace")
    except (OSError, UnsafeFile) as exc:
        raise TopicMissing(f"no memory {what}: {exc}") from None


async def head_holds(repo: MemoryRepo, scope: str, file: str) -> bool:
    """Whether the branch's head still holds the topic ``<scope>/<file>`` (a forget has not landed)."""
    found = await repo.run("cat-file", "-e", f"HEAD:{scope}/{file}", check=False)
    return found.returncode == 0


def read_topic(repo: MemoryRepo, scope: str, file: str) -> str:
    """The text of the topic ``<scope>/<file>`` on the work tree (``TopicMissing`` when there is none)."""
    return _read(_topic_path(repo.path, scope, file), f"{scope}/{file}")


def message(action: str, scope: str, file: str, detail: str = "") -> str:
    """The commit message of a person's change: a subject, a line of detail, the trailer."""
    ident = f"{scope}/{file}"
    subject = {
        FORGET: f"memd: forget {ident} (asked by the person)",
        EDIT: f"memd: {ident} edited by the person",
        PIN: f"memd: pin {ident} (asked by the person)",
        UNPIN: f"memd: unpin {ident} (asked by the person)",
    }[action]
    body = f"\n{detail}\n" if detail else ""
    return f"{subject}\n{body}\n{ACTION_TRAILER}: {action} {ident}\n"


def forgets_in(message: str) -> list[tuple[str, str]]:
    """``(scope, file)`` of each memory a commit message says a person forgot (its ``ACTION_TRAILER``
    lines naming ``forget``, as memd writes them: ``<scope>/<file>``); a line naming no memory is
    left out."""
    found: list[tuple[str, str]] = []
    for line in message.splitlines():
        action, _, ident = line.removeprefix(f"{ACTION_TRAILER}: ").partition(" ")
        if not line.startswith(f"{ACTION_TRAILER}: ") or action != FORGET:
            continue
        parts = ident.strip().split("/")
        cut = 1 if parts[0] == GLOBAL_SCOPE else 2
        scope, file = "/".join(parts[:cut]), "/".join(parts[cut:])
        try:
            check_scope(scope)
            check_file(file)
        except ValueError:
            continue
        if is_topic_path(file):
            found.append((scope, file))
    return found


async def forgotten_in(repo: MemoryRepo, commit: str, *, at: str) -> list[ForgottenTopic]:
    """The records of the memories ``commit`` says a person forgot, each from the version the commit
    removed (``forgets_in``; one whose file its parent does not hold is left out)."""
    message = await repo.git("log", "-1", "--format=%B", commit)
    found: list[ForgottenTopic] = []
    for scope, file in forgets_in(message):
        gone = await repo.run("show", f"{commit}^:{scope}/{file}", check=False)
        if gone.returncode == 0:
            found.append(Steered(scope, file, FORGET, commit, gone.stdout, None).forgotten(at))
    return found


async def _steer(
    repo: MemoryRepo,
    scope: str,
    file: str,
    action: str,
    change: Callable[[Path, str], str | None],
    *,
    scratch_parent: Path,
    author: str | None,
    detail: str = "",
    forgotten_at: str = "",
) -> Steered:
    """Apply ``change(path, text) -> new text`` (None: the file goes) to the topic in a scratch copy,
    commit and land it."""
    ident = f"{scope}/{file}"
    _topic_path(repo.path, scope, file)
    if not (repo.path / ".git").is_dir() or await repo.head() is None:
        raise TopicMissing(f"no memory {ident}: the memory repository {repo.path} has none yet")
    dirty = await repo.dirty_paths(scope)
    if dirty:
        raise SteerRefused(
            f"{scope} has uncommitted changes in {repo.path} ({len(dirty)} path(s), e.g. {dirty[0]}): "
            "commit or discard them first"
        )
    base = await repo.head()
    assert base is not None
    paths = [scope, forget_records.FORGOTTEN_DIR]
    async with repo.scratch(scratch_parent, owner=f"steer-{action}", paths=paths) as clone:
        path = _topic_path(clone.path, scope, file)
        before = _read(path, ident)
        after = await asyncio.to_thread(change, path, before)
        digest = False
        if after is None:
            digest = await asyncio.to_thread(_forget_file, clone.path.joinpath(*scope.split("/")), file)
            gone = Steered(scope, file, FORGET, None, before, None).forgotten(forgotten_at)
            await asyncio.to_thread(_record_forget, clone.path, scope, gone)
            await clone.stage_paths(forget_records.FORGOTTEN_DIR)
        elif after != before:
            await asyncio.to_thread(path.write_text, after, encoding="utf-8")
            if action == EDIT:
                # the digest was written from the topic as it was: it would still say the old value
                digest = await asyncio.to_thread(_withdraw_digest, clone.path.joinpath(*scope.split("/")))
        await clone.stage(scope)
        if not await clone.has_staged_changes():
            return Steered(scope, file, action, None, before, after)
        await clone.commit_staged(message(action, scope, file, detail), author=author)
        commit = await repo.land(clone, base=base)
    return Steered(scope, file, action, commit, before, after, digest_withdrawn=digest)


def _forget_file(scope_dir: Path, file: str) -> bool:
    """The topic, its index line and the digest go; True when the scope has a digest, now the
    placeholder (False: it had none, and none is written).

    The digest is replaced whatever it says, not only when it quotes the topic: phase 2 writes it
    from every topic, in its own words, and a paraphrase of the forgotten memory may share not one
    name or three words in a row with it. Until the next run with a model it is the placeholder (the index and
    every other topic stay published)."""
    (scope_dir / file).unlink()
    drop_index_lines(scope_dir, {file})
    return _withdraw_digest(scope_dir)


def _withdraw_digest(scope_dir: Path) -> bool:
    """The scope's digest becomes the placeholder; True when the scope has a digest (False: it had
    none, and none is written). A forget's and an edit's: the digest is written from every topic."""
    summary = scope_dir / SUMMARY
    if summary.is_symlink():
        summary.unlink()  # memory holds no links: the placeholder replaces it as any digest
    elif not summary.is_file():
        return False  # no digest to repeat the topic
    elif is_placeholder(summary):
        return True  # already waiting to be rebuilt
    summary.write_bytes(PLACEHOLDER_SUMMARY)
    return True


def _record_forget(top: Path, scope: str, gone: ForgottenTopic) -> None:
    """The forget's record (``forgotten/<hash>``: it travels with the memory and every machine keeps
    the topic out), and the scope's inputs without the lines that hold the forgotten text."""
    forget_records.write(top, gone)
    forget_records.scrub_dir(top.joinpath(*scope.split("/")), [gone])


async def forget_topic(
    repo: MemoryRepo,
    scope: str,
    file: str,
    *,
    scratch_parent: Path,
    author: str | None,
    forgotten_at: str = "",
) -> Steered:
    """The topic and its index line go from the branch's head, in one commit, and the scope's digest
    becomes the placeholder (``_forget_file``); the same commit holds the forget's record
    (``pipeline.memory.forget_records``) and takes the forgotten text out of the scope's inputs."""
    return await _steer(
        repo,
        scope,
        file,
        FORGET,
        lambda _p, _t: None,
        scratch_parent=scratch_parent,
        author=author,
        forgotten_at=forgotten_at,
    )


async def pin_topic(
    repo: MemoryRepo, scope: str, file: str, pinned: bool, *, scratch_parent: Path, author: str | None
) -> Steered:
    """``pinned: true`` in the topic's frontmatter (``pinned`` False: taken out)."""

    def change(_path: Path, text: str) -> str:
        topic = frontmatter.parse(text, strict=False)
        if topic.meta.pinned == pinned:
            return text
        return frontmatter.render(replace(topic.meta, pinned=pinned), topic.body)

    action = PIN if pinned else UNPIN
    return await _steer(repo, scope, file, action, change, scratch_parent=scratch_parent, author=author)


async def edit_topic(
    repo: MemoryRepo,
    scope: str,
    file: str,
    text: str,
    *,
    today: date,
    scratch_parent: Path,
    author: str | None,
    max_bytes: int | None = None,
) -> Steered:
    """The person's text for the topic (a new body, or the whole file); ``edited`` and ``updated``
    set to ``today``. Refused (``SteerRefused``) when the result is not a valid topic, is over
    ``max_bytes`` or the secret gate finds a secret in it."""
    finder = repo.secret_gate() if repo.secret_gate is not None else None

    def change(_path: Path, old: str) -> str:
        ident = f"{scope}/{file}"
        current = frontmatter.parse(old, strict=False)
        new = text.replace("\r\n", "\n")
        if new.startswith("---\n"):
            given = _parse(new, "the new text")
            meta = replace(
                given.meta,
                created=current.meta.created,
                sources=current.meta.sources,
            )
            body = given.body
        else:
            meta, body = current.meta, new
        if not body.endswith("\n"):
            body += "\n"
        if not body.startswith("\n"):
            body = "\n" + body if current.body.startswith("\n") else body
        # the person's text is their word, whatever the topic rested on before
        meta = replace(
            meta,
            updated=today,
            edited=today,
            created=meta.created or today,
            evidence=frontmatter.USER_EVIDENCE,
        )
        rendered = frontmatter.render(meta, body)
        problems = frontmatter.problems(meta)
        if problems:
            raise SteerRefused(f"{ident} not edited: " + "; ".join(problems))
        if max_bytes is not None and len(rendered.encode("utf-8")) > max_bytes:
            raise SteerRefused(
                f"{ident} not edited: {len(rendered.encode('utf-8'))} bytes, over the topic cap of {max_bytes}"
            )
        if finder is not None:
            found = finder.find(rendered)
            if found:
                what = ", ".join(describe_secret(f, rendered) for f in found[:5])
                raise SteerRefused(f"{ident} not edited: the secret gate found {what}; remove that value")
        return rendered

    return await _steer(repo, scope, file, EDIT, change, scratch_parent=scratch_parent, author=author)


def _parse(text: str, what: str) -> frontmatter.TopicFile:
    try:
        return frontmatter.parse(text)
    except frontmatter.FrontmatterError as exc:
        raise SteerRefused(f"{what}: {exc}") from None
