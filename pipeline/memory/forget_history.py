"""Forget = gone, history included: memd's refs rewritten so no commit they reach holds a forgotten text.

``rewrite(repo, records)`` walks every commit reachable from the memory repository's branches and
memd's own refs (``refs/memd/...``: the pre-pairing history, the remote's last fetched branch), oldest
first, and gives each the tree ``pipeline.memory.forget_records.scrub_scope`` makes of it: the
forgotten topics gone in every version, with their index lines, the digests of those commits the
placeholder, the lines holding the forgotten text out of the inputs. A commit whose tree and
parents do not change is kept as it is (its signature too); every other one is made again with the
same author, committer, dates and message, signed by this machine. Each ref then moves to its new
commit, the reflogs are expired and unreachable objects pruned (``git gc --prune=now``), so the old
blobs leave this repository's object store.

Once the memory repository has synced with a remote (``refs/memd/synced/<branch>``), the remote and
the other machines hold the old history: memd does not rewrite then (``rewrite`` returns a
``Rewritten`` with ``skipped`` saying why); a rewrite that travels to them is not built yet.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.git import run_git, run_git_bytes
from pipeline.gitrepo.remote import blobs, synced_ref, tree
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.gitrepo.signing import signing_args
from pipeline.memory import forget_records
from pipeline.memory.likeness import ForgottenTopic

MAX_COMMITS = 20_000
"""A history longer than this is not rewritten here (memd's own are far shorter)."""
GC_TIMEOUT_S = 120.0


@dataclass
class Rewritten:
    commits: int = 0
    """Commits made again without the forgotten text."""
    refs: list[str] = field(default_factory=list)
    skipped: str | None = None


async def rewrite(
    repo: MemoryRepo, records: Sequence[ForgottenTopic], *, state_dir: Path | None = None
) -> Rewritten:
    """Rewrite memd's refs so no commit they reach holds what ``records`` forgot. With ``state_dir``,
    not while a scratch copy of the repository is in use there (a run of another scope: its copy
    shares this repository's objects and would land on the old history)."""
    out = Rewritten()
    if not records or not (repo.path / ".git").is_dir() or await repo.head() is None:
        return out
    if state_dir is not None and (busy := await asyncio.to_thread(_in_use, state_dir)) is not None:
        out.skipped = f"a copy of the memory repository is in use ({busy}); try the forget again later"
        return out
    try:
        async with repo.locked():
            return await _rewrite(repo, records, out)
    except MemoryRepoError as exc:
        out.skipped = f"the history could not be rewritten now: {str(exc).splitlines()[0][:300]}"
        return out


def _in_use(state_dir: Path) -> str | None:
    for folder in sorted(state_dir.glob("*-scratch")):
        if folder.is_dir() and not folder.is_symlink():
            for entry in folder.iterdir():
                return str(entry)
    return None


async def _rewrite(repo: MemoryRepo, records: Sequence[ForgottenTopic], out: Rewritten) -> Rewritten:
    refs = await _refs(repo)
    if any(name.startswith(synced_ref("")) for name in refs):
        out.skipped = (
            "the memory repository has synced with a remote: its history stays as it is there and on "
            "the other machines (git log -p still shows the old text)"
        )
        return out
    listed = await repo.git("rev-list", "--topo-order", "--reverse", "--parents", *sorted(set(refs.values())))
    lines = [line.split() for line in listed.splitlines() if line.strip()]
    if len(lines) > MAX_COMMITS:
        out.skipped = f"the history has {len(lines)} commits, over the {MAX_COMMITS} memd rewrites"
        return out
    mapping: dict[str, str] = {}
    trees: dict[str, str] = {}
    for sha, *parents in lines:
        old_tree = (await repo.git("rev-parse", f"{sha}^{{tree}}")).strip()
        if old_tree not in trees:
            trees[old_tree] = await _scrubbed_tree(repo, old_tree, records)
        new_parents = [mapping.get(p, p) for p in parents]
        if trees[old_tree] == old_tree and new_parents == parents:
            mapping[sha] = sha
            continue
        mapping[sha] = await _commit_again(repo, sha, trees[old_tree], new_parents)
        out.commits += 1
    if not out.commits:
        return out
    head_ref = f"refs/heads/{await repo.branch()}"
    head_before = refs.get(head_ref)
    for name, sha in sorted(refs.items()):
        if mapping.get(sha, sha) != sha:
            await repo.git("update-ref", "-m", "memd: forget (history rewritten)", name, mapping[sha], sha)
            out.refs.append(name)
    if head_before is not None and head_ref in out.refs:
        before, after = (await repo.git("rev-parse", f"{head_before}^{{tree}}", "HEAD^{tree}")).split()
        if before != after:  # the work tree follows, refusing to overwrite a change of its own
            await repo.git("read-tree", "-m", "-u", before, after)
    await _drop_old_objects(repo)
    return out


async def _refs(repo: MemoryRepo) -> dict[str, str]:
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


async def _scrubbed_tree(repo: MemoryRepo, old: str, records: Sequence[ForgottenTopic]) -> str:
    entries = await tree(repo, old)
    scopes = sorted({r.scope for r in records})
    changed: dict[str, bytes | None] = {}
    for scope in scopes:
        prefix = f"{scope}/"
        mine = {p: e for p, e in entries.items() if p.startswith(prefix)}
        if not mine:
            continue
        contents = await blobs(repo, [e.sha for e in mine.values()])
        files = {p.removeprefix(prefix): contents[e.sha] for p, e in mine.items()}
        kept, _removed = forget_records.scrub_scope(files, forget_records.of_scope(records, scope))
        for rel, before in files.items():
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


async def _commit_again(repo: MemoryRepo, sha: str, new_tree: str, parents: list[str]) -> str:
    fields = await repo.git("log", "-1", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B", sha)
    an, ae, ad, cn, ce, cd, message = fields.split("\0", 6)
    env = {
        "GIT_AUTHOR_NAME": an,
        "GIT_AUTHOR_EMAIL": ae,
        "GIT_AUTHOR_DATE": ad,
        "GIT_COMMITTER_NAME": cn,
        "GIT_COMMITTER_EMAIL": ce,
        "GIT_COMMITTER_DATE": cd,
    }
    sign = ["-S"] if repo.signer is not None else []  # commit-tree signs only when told to
    args = ["commit-tree", *sign, new_tree, *[a for p in parents for a in ("-p", p)]]
    signed = await asyncio.to_thread(signing_args, repo.signer, args) if repo.signer else []
    made = await run_git(repo.path, *signed, *args, env=env, input_text=message.rstrip("\n") + "\n")
    return made.stdout.strip()


async def _drop_old_objects(repo: MemoryRepo) -> None:
    """The reflogs expired and unreachable objects pruned: the old blobs leave the object store."""
    await repo.git("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    await run_git(repo.path, "gc", "-q", "--prune=now", timeout_s=GC_TIMEOUT_S)
