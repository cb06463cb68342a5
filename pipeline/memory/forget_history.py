"""Forget = gone, history included: memd's refs rewritten so no commit they reach holds a forgotten text.

``rewrite(repo, records)`` walks every commit reachable from the memory repository's branches and
memd's own refs (``refs/memd/...``: the pre-pairing history, the remote's last fetched branch, the
last synced commit), oldest first, and gives each the tree ``pipeline.memory.forget_records.scrub_scope``
makes of it: the forgotten topics gone in every version, with their index lines, the digests of those
commits the placeholder, the lines holding the forgotten text out of the inputs. A commit whose tree
and parents do not change is kept as it is (its signature too); every other one is made again with
the same author, committer, dates and message, signed by this machine, unless a commit of ``reuse``
is exactly that already (the same tree, parents, author, committer and message: another machine's
rewrite of the same history, adopted rather than made twice). Each ref then moves to its new commit,
the reflogs are expired and unreachable objects pruned (``git gc --prune=now``), so the old blobs
leave this repository's object store.

``images(..., make=False)`` is the check of a rewrite another machine offers: every commit of this
machine's history must have its counterpart without the forgotten text among the offered commits,
else ``NotAScrub`` names the first that has none.

Once the memory repository has synced with a remote (``refs/memd/synced/<branch>``), the remote and
the other machines hold the old history: ``rewrite`` leaves it then unless told ``synced_too``
(``pipeline.sync.rewrites``, which makes the rewrite travel), and says why in ``skipped``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.git import run_git, run_git_bytes
from pipeline.gitrepo.remote import blobs, objects, synced_ref, tree
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.gitrepo.signing import signing_args
from pipeline.layout import GLOBAL_SCOPE, PROJECTS_DIR
from pipeline.memory import forget_records
from pipeline.memory.burial import bury_scope
from pipeline.memory.likeness import ForgottenTopic

MAX_COMMITS = 20_000
"""A history longer than this is not rewritten here (memd's own are far shorter)."""
GC_TIMEOUT_S = 120.0
MAX_COMMIT_BYTES = 1024 * 1024


class NotAScrub(MemoryRepoError):
    """A commit of this machine's history has no counterpart without the forgotten text among the
    commits another machine offers as its rewrite."""

    def __init__(self, sha: str) -> None:
        super().__init__(
            f"commit {sha[:12]} of this machine's history has no counterpart in it that differs only by "
            "the forgotten text"
        )
        self.sha = sha


@dataclass(frozen=True)
class RawCommit:
    """A commit as git stores it, its signature aside."""

    tree: str
    parents: tuple[str, ...]
    author: str
    """``Name <email> <seconds> <zone>``, as the commit has it."""
    committer: str
    message: bytes

    def key(self) -> tuple[str, tuple[str, ...], str, str, bytes]:
        return (self.tree, self.parents, self.author, self.committer, self.message)


@dataclass
class Rewritten:
    commits: int = 0
    """Commits made again without the forgotten text."""
    reused: int = 0
    """Commits taken from another machine's rewrite of the same history."""
    refs: list[str] = field(default_factory=list)
    skipped: str | None = None
    mapping: dict[str, str] = field(default_factory=dict)
    """Each commit walked -> the commit it became (itself when unchanged)."""
    before: dict[str, str] = field(default_factory=dict)
    """Each ref that moved -> the commit it was at."""

    @property
    def synced(self) -> bool:
        """The rewrite reached the refs to a remote the repository synced with (it has to travel)."""
        return any(name.startswith(synced_ref("")) for name in self.refs)


async def rewrite(
    repo: MemoryRepo,
    records: Sequence[ForgottenTopic],
    *,
    state_dir: Path | None = None,
    synced_too: bool = False,
    reuse: Sequence[str] = (),
    leave: Sequence[str] = (),
    drop: Sequence[str] = (),
    graves: Collection[str] = (),
) -> Rewritten:
    """Rewrite memd's refs so no commit they reach holds what ``records`` forgot. With ``state_dir``,
    not while a scratch copy of the repository is in use there (a run of another scope: its copy
    shares this repository's objects and would land on the old history). ``synced_too``: also once
    the repository has synced; ``reuse``: commits whose history may hold the new commits already;
    ``leave``: refs left as they are (and kept out of the walk); ``drop``: commits that change no
    tree (records of a rewrite that no longer holds), left out (each becomes its first parent);
    ``graves``: the hashes of tombstoned sessions, whose inputs and topics go too
    (``pipeline.memory.burial``)."""
    out = Rewritten()
    if (not records and not graves) or not (repo.path / ".git").is_dir() or await repo.head() is None:
        return out
    if state_dir is not None and (busy := await asyncio.to_thread(_in_use, state_dir)) is not None:
        out.skipped = f"a copy of the memory repository is in use ({busy}); try the forget again later"
        return out
    try:
        async with repo.locked():
            return await _rewrite(
                repo,
                records,
                out,
                synced_too=synced_too,
                reuse=reuse,
                leave=leave,
                drop=drop,
                graves=graves,
            )
    except NotAScrub:
        raise
    except MemoryRepoError as exc:
        out.skipped = f"the history could not be rewritten now: {str(exc).splitlines()[0][:300]}"
        return out


def _in_use(state_dir: Path) -> str | None:
    for folder in sorted(state_dir.glob("*-scratch")):
        if folder.is_dir() and not folder.is_symlink():
            for entry in folder.iterdir():
                return str(entry)
    return None


async def _rewrite(
    repo: MemoryRepo,
    records: Sequence[ForgottenTopic],
    out: Rewritten,
    *,
    synced_too: bool,
    reuse: Sequence[str],
    leave: Sequence[str],
    drop: Sequence[str] = (),
    graves: Collection[str] = (),
) -> Rewritten:
    refs = {name: sha for name, sha in (await refs_of(repo)).items() if name not in leave}
    if not synced_too and any(name.startswith(synced_ref("")) for name in refs):
        out.skipped = (
            "the memory repository has synced with a remote: its history stays as it is there and on "
            "the other machines (git log -p still shows the old text)"
        )
        return out
    made = await images(repo, records, sorted(set(refs.values())), reuse=reuse, drop=drop, graves=graves)
    out.mapping, out.commits, out.reused = made.mapping, made.made, made.reused
    if not out.commits and not out.reused and not made.dropped:
        return out
    head_ref = f"refs/heads/{await repo.branch()}"
    head_before = refs.get(head_ref)
    for name, sha in sorted(refs.items()):
        if out.mapping.get(sha, sha) != sha:
            await repo.git(
                "update-ref", "-m", "memd: forget (history rewritten)", name, out.mapping[sha], sha
            )
            out.refs.append(name)
            out.before[name] = sha
    if head_before is not None and head_ref in out.refs:
        before, after = (await repo.git("rev-parse", f"{head_before}^{{tree}}", "HEAD^{tree}")).split()
        if before != after:  # the work tree follows, refusing to overwrite a change of its own
            await repo.git("read-tree", "-m", "-u", before, after)
    await drop_old_objects(repo)
    return out


@dataclass
class Images:
    mapping: dict[str, str] = field(default_factory=dict)
    made: int = 0
    reused: int = 0
    dropped: int = 0


async def images(
    repo: MemoryRepo,
    records: Sequence[ForgottenTopic],
    tips: Sequence[str],
    *,
    reuse: Sequence[str] = (),
    make: bool = True,
    drop: Sequence[str] = (),
    graves: Collection[str] = (),
) -> Images:
    """Each commit ``tips`` reach -> the commit it is without what ``records`` forgot: a commit of
    ``reuse``'s history that is exactly it (another machine's rewrite of the same history, even
    when this one's needs no change: both machines forgot the same), else itself when nothing
    changes, or (``make``) one made again and signed here; without ``make``, ``NotAScrub`` for the
    first with none in ``reuse``. ``graves``: tombstoned sessions' hashes, whose text goes too. A commit of ``drop`` whose tree is its first parent's becomes that
    parent's image. The records are applied in one order, whatever order they are given in."""
    out = Images()
    if not tips:
        return out
    by_path = {forget_records.path_of(forget_records.record_bytes(r)): r for r in records}
    ordered = [by_path[path] for path in sorted(by_path)]
    dropped = set(drop)
    buried = frozenset(graves)
    listed = await repo.git("rev-list", "--topo-order", "--reverse", "--parents", *tips, "--")
    lines = [line.split() for line in listed.splitlines() if line.strip()]
    if len(lines) > MAX_COMMITS:
        raise MemoryRepoError(f"the history has {len(lines)} commits, over the {MAX_COMMITS} memd rewrites")
    raw = await read_commits(repo, [sha for sha, *_ in lines])
    offered: dict[tuple[str, tuple[str, ...], str, str, bytes], str] = {}
    if reuse:
        theirs = (await repo.git("rev-list", *reuse, "--")).split()
        if len(theirs) > MAX_COMMITS:
            raise MemoryRepoError(f"the offered history has {len(theirs)} commits, over {MAX_COMMITS}")
        offered = {c.key(): sha for sha, c in (await read_commits(repo, theirs)).items()}
    trees: dict[str, str] = {}
    for sha, *parents in lines:
        commit = raw[sha]
        if sha in dropped and parents and parents[0] in raw and raw[parents[0]].tree == commit.tree:
            out.mapping[sha] = out.mapping.get(parents[0], parents[0])
            out.dropped += 1
            continue
        if commit.tree not in trees:
            trees[commit.tree] = await _scrubbed_tree(repo, commit.tree, ordered, buried)
        new = RawCommit(
            trees[commit.tree],
            tuple(out.mapping.get(p, p) for p in parents),
            commit.author,
            commit.committer,
            commit.message,
        )
        found = offered.get(new.key())
        if found is not None and found != sha:
            out.mapping[sha] = found
            out.reused += 1
        elif new.tree == commit.tree and new.parents == tuple(parents):
            out.mapping[sha] = sha
        elif make:
            out.mapping[sha] = await _commit_again(repo, new)
            out.made += 1
        else:
            raise NotAScrub(sha)
    return out


async def refs_of(repo: MemoryRepo) -> dict[str, str]:
    """memd's refs (the branches, ``refs/memd/...``) that name a commit -> that commit."""
    listed = await repo.git(
        "for-each-ref", "--format=%(objecttype) %(refname) %(objectname)", "refs/heads", "refs/memd"
    )
    out: dict[str, str] = {}
    for line in listed.splitlines():
        kind, _, rest = line.partition(" ")
        name, _, sha = rest.partition(" ")
        if kind == "commit" and name and sha:
            out[name] = sha
    return out


async def read_commits(repo: MemoryRepo, shas: Sequence[str]) -> dict[str, RawCommit]:
    """The commits ``shas`` as stored (in one ``git cat-file --batch``); one over ``MAX_COMMIT_BYTES``
    is refused."""
    stored = await objects(repo, shas, "commit", max_bytes=MAX_COMMIT_BYTES)
    return {sha: parse_commit(data) for sha, data in stored.items()}


def parse_commit(data: bytes) -> RawCommit:
    head, _, message = data.partition(b"\n\n")
    fields: dict[str, list[str]] = {}
    for line in head.decode("utf-8", "surrogateescape").split("\n"):
        if line.startswith(" "):
            continue  # a continuation of a multi-line header (the signature)
        name, _, value = line.partition(" ")
        fields.setdefault(name, []).append(value)
    return RawCommit(
        fields.get("tree", [""])[0],
        tuple(fields.get("parent", [])),
        fields.get("author", [""])[0],
        fields.get("committer", [""])[0],
        message,
    )


async def _scrubbed_tree(
    repo: MemoryRepo, old: str, records: Sequence[ForgottenTopic], graves: frozenset[str] = frozenset()
) -> str:
    entries = await tree(repo, old)
    scopes = {r.scope for r in records}
    if graves:  # a tombstoned session's text may be in any scope
        scopes |= {found for path in entries if (found := _scope_of(path)) is not None}
    changed: dict[str, bytes | None] = {}
    for scope in sorted(scopes):
        prefix = f"{scope}/"
        mine = {p: e for p, e in entries.items() if p.startswith(prefix)}
        if not mine:
            continue
        contents = await blobs(repo, [e.sha for e in mine.values()])
        files = {p.removeprefix(prefix): contents[e.sha] for p, e in mine.items()}
        files = bury_scope(files, graves).files if graves else files
        kept, _removed = forget_records.scrub_scope(files, forget_records.of_scope(records, scope))
        for path, entry in mine.items():
            rel, before = path.removeprefix(prefix), contents[entry.sha]
            if rel not in kept:
                changed[prefix + rel] = None
            elif kept[rel] != before:
                changed[prefix + rel] = kept[rel]
    if not changed:
        return old
    with tempfile.TemporaryDirectory(prefix="memd-forget-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        await run_git(repo.path, "read-tree", old, env=env)
        for path, data in sorted(changed.items()):
            if data is None:
                await run_git(repo.path, "update-index", "--force-remove", "--", path, env=env)
                continue
            code, sha, err = await run_git_bytes(repo.path, "hash-object", "-w", "--stdin", input_bytes=data)
            if code != 0:
                raise MemoryRepoError(f"git hash-object failed: {err.decode('utf-8', 'replace')[-300:]}")
            mode = entries[path].mode
            blob = sha.decode().strip()
            await run_git(repo.path, "update-index", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        return (await run_git(repo.path, "write-tree", env=env)).stdout.strip()


def _scope_of(path: str) -> str | None:
    parts = path.split("/")
    if parts[0] == GLOBAL_SCOPE and len(parts) >= 2:
        return GLOBAL_SCOPE
    if parts[0] == PROJECTS_DIR and len(parts) >= 3:
        return f"{PROJECTS_DIR}/{parts[1]}"
    return None


def _person(line: str) -> tuple[str, str, str]:
    """``Name <email> <seconds> <zone>`` -> (name, email, date in git's own format)."""
    name, _, rest = line.partition(" <")
    email, _, date = rest.partition("> ")
    return name, email, date


async def _commit_again(repo: MemoryRepo, commit: RawCommit) -> str:
    an, ae, ad = _person(commit.author)
    cn, ce, cd = _person(commit.committer)
    env = {
        "GIT_AUTHOR_NAME": an,
        "GIT_AUTHOR_EMAIL": ae,
        "GIT_AUTHOR_DATE": ad,
        "GIT_COMMITTER_NAME": cn,
        "GIT_COMMITTER_EMAIL": ce,
        "GIT_COMMITTER_DATE": cd,
    }
    sign = ["-S"] if repo.signer is not None else []  # commit-tree signs only when told to
    args = ["commit-tree", *sign, commit.tree, *[a for p in commit.parents for a in ("-p", p)]]
    signed = await asyncio.to_thread(signing_args, repo.signer, args) if repo.signer else []
    code, out, err = await run_git_bytes(repo.path, *signed, *args, env=env, input_bytes=commit.message)
    if code != 0:
        raise MemoryRepoError(f"git commit-tree failed: {err.decode('utf-8', 'replace')[-300:]}")
    return out.decode("ascii").strip()


async def drop_old_objects(repo: MemoryRepo) -> None:
    """The reflogs expired and unreachable objects pruned: the old blobs leave the object store."""
    await repo.git("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    await run_git(repo.path, "gc", "-q", "--prune=now", timeout_s=GC_TIMEOUT_S)
