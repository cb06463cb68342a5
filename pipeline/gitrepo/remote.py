"""The memory repository and its git remote (``[sync]``): fetch, push, ancestry, trees as data.

Only these intents talk to a remote, and they do so as ``pipeline.gitrepo.transport`` says (which
transports, which programs, which limits: a remote on this machine is data, runs no hook or config
of its own, and every call ends at its timeout with its whole process group). Nothing is pushed by
blind force: a push the remote refuses as not a fast-forward comes back as ``PushRejected``; only a
rewrite of the history memd signed is pushed over the old one, leased on the remote's tip.

The remote's branch is fetched into a quarantine first (``pipeline.gitrepo.quarantine``): what it
brings is sized, without reading it, and screened before any of it reaches the memory repository,
where it lands as ``refs/memd/remote/<branch>`` (it never moves the branch or the work tree);
``refs/memd/synced/<branch>`` marks the last remote commit memd accepted or pushed, which every
later fetch must descend from (a rewritten history is refused).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline import defaults
from pipeline.errors import MemoryRepoError, SyncRefused
from pipeline.gitrepo import quarantine
from pipeline.gitrepo.git import run_git, run_git_bytes
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.gitrepo.transport import (
    check_local_remote,
    check_url,
    receive_pack,
    remote_args,
    remote_env,
    upload_pack,
)

FETCH_TIMEOUT_S = defaults.SYNC_TIMEOUT_S
REMOTE_REF = "refs/memd/remote/"
SYNCED_REF = "refs/memd/synced/"
REGULAR_MODES = ("100644", "100755")
MOVED_SIGNS = (
    "[rejected]",
    "non-fast-forward",
    "fetch first",
    "cannot lock ref",
    "but expected",
    "stale info",
)
"""How git says a push lost to another: refused as not a fast-forward, or beaten to the ref's lock
by a push landing at the same moment."""


class PushRejected(MemoryRepoError):
    """The remote refused the push: its branch has commits this one lacks (fetch and merge first)."""


class RepoMoved(MemoryRepoError):
    """The memory repository's branch moved while a merge was built (a run landed): merge again."""


@dataclass(frozen=True)
class Entry:
    mode: str
    sha: str


def remote_ref(branch: str) -> str:
    return f"{REMOTE_REF}{branch}"


def synced_ref(branch: str) -> str:
    return f"{SYNCED_REF}{branch}"


async def fetch(
    repo: MemoryRepo,
    url: str,
    branch: str,
    *,
    scratch: Path | None = None,
    timeout_s: float = FETCH_TIMEOUT_S,
    screen: quarantine.Screen | None = None,
) -> str | None:
    """Fetch the remote's ``branch`` into ``refs/memd/remote/<branch>``, through a quarantine under
    ``scratch`` (the system's temporary folder when None) where ``screen`` sees every incoming
    object first; its commit, or None when the remote has no such branch yet (a new, empty remote).
    ``SyncRefused`` when the branch names something other than a commit (a blob, a tree): no merge
    or push can build on it; whatever ``screen`` raises when it refuses. Either way nothing of the
    remote's objects reaches the memory repository."""
    ref = remote_ref(branch)
    if await listed_tip(repo, url, branch, timeout_s=timeout_s) is None:
        await run_git(repo.path, "update-ref", "-d", ref, check=False)
        return None
    known = [await repo.head(), await ref_commit(repo, ref), await ref_commit(repo, synced_ref(branch))]
    haves = [c for c in known if c]
    parent = scratch if scratch is not None else Path(tempfile.gettempdir())
    async with quarantine.quarantine(repo, parent, haves) as q:
        await run_git(
            q.path,
            *remote_args(),
            "fetch",
            *upload_pack(url),
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            url,
            f"+refs/heads/{branch}:{quarantine.INCOMING_REF}",
            timeout_s=timeout_s,
            env=remote_env(),
        )
        commit = await ref_commit(q, quarantine.INCOMING_REF)
        if commit is None:
            kind = (await run_git(q.path, "cat-file", "-t", quarantine.INCOMING_REF, check=False)).stdout
            await run_git(repo.path, "update-ref", "-d", ref, check=False)
            raise SyncRefused(
                f"the remote's branch {branch} is not a commit (it points at a {kind.strip() or 'unknown'} "
                "object): memd refuses it and pushes nothing over it; point the branch at a commit, or set "
                "another [sync] branch"
            )
        if screen is not None:
            screen.received(*await quarantine.received(q))
            screen.incoming(await quarantine.incoming_objects(q, commit, haves))
        source = str(q.path)
        await run_git(
            repo.path,
            *remote_args(),
            "fetch",
            *upload_pack(source),
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            source,
            f"+{quarantine.INCOMING_REF}:{ref}",
            timeout_s=timeout_s,
        )
    return commit


async def listed_tip(
    repo: MemoryRepo, url: str, branch: str, *, timeout_s: float = FETCH_TIMEOUT_S
) -> str | None:
    """The commit id the remote's ``branch`` names (None: no such branch), nothing fetched."""
    check_url(url)
    check_local_remote(url, repo.path)
    listed = await run_git(
        repo.path,
        *remote_args(),
        "ls-remote",
        *upload_pack(url),
        "--heads",
        "--",
        url,
        f"refs/heads/{branch}",
        timeout_s=timeout_s,
        env=remote_env(),
    )
    first = listed.stdout.split()
    return first[0] if first else None


async def push(
    repo: MemoryRepo,
    url: str,
    branch: str,
    commit: str,
    *,
    timeout_s: float = FETCH_TIMEOUT_S,
    lease: str | None = None,
) -> None:
    """Push ``commit`` to the remote's ``branch`` as a fast-forward only; with ``lease`` (a rewrite
    of the history memd signed: ``pipeline.sync.rewrites``), over whatever the branch holds, but only
    while it is still at ``lease`` (``--force-with-lease``, never blind force)."""
    check_url(url)
    check_local_remote(url, repo.path)
    leased = [f"--force-with-lease=refs/heads/{branch}:{lease}"] if lease else []
    result = await run_git(
        repo.path,
        *remote_args(),
        "push",
        *receive_pack(url),
        "--porcelain",
        "--no-verify",
        *leased,
        "--",
        url,
        f"{commit}:refs/heads/{branch}",
        check=False,
        timeout_s=timeout_s,
        env=remote_env(),
    )
    if result.returncode == 0:
        return
    text = result.stdout + result.stderr
    if any(sign in text for sign in MOVED_SIGNS):
        raise PushRejected("the remote has commits this machine has not merged yet", stderr=result.stderr)
    raise MemoryRepoError(
        f"git push failed (exit {result.returncode}): {result.stderr.strip()[-500:] or '(no output)'}",
        stderr=result.stderr,
    )


async def ref_commit(repo: MemoryRepo, ref: str) -> str | None:
    out = await run_git(repo.path, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    return out.stdout.strip() or None


async def set_ref(repo: MemoryRepo, ref: str, commit: str) -> None:
    await repo.git("update-ref", ref, commit)


async def is_ancestor(repo: MemoryRepo, older: str, newer: str) -> bool:
    result = await run_git(repo.path, "merge-base", "--is-ancestor", older, newer, check=False)
    if result.returncode not in (0, 1):
        raise MemoryRepoError(f"git merge-base failed: {result.stderr.strip()[-300:]}")
    return result.returncode == 0


async def merge_base(repo: MemoryRepo, a: str, b: str) -> str | None:
    result = await run_git(repo.path, "merge-base", a, b, check=False)
    return result.stdout.strip() or None


async def tree(repo: MemoryRepo, commit: str | None) -> dict[str, Entry]:
    """Every entry of ``commit``'s tree, recursively: path -> (mode, object id). None: the empty tree."""
    if commit is None:
        return {}
    out = await repo.git("ls-tree", "-r", "-z", "--full-tree", commit)
    entries: dict[str, Entry] = {}
    for item in out.split("\0"):
        if not item:
            continue
        meta, _, path = item.partition("\t")
        mode, _kind, sha = meta.split(" ", 2)
        entries[path] = Entry(mode, sha)
    return entries


async def blobs(repo: MemoryRepo, shas: list[str]) -> dict[str, bytes]:
    """The contents of ``shas`` (blob ids), read in one ``git cat-file --batch``."""
    return await objects(repo, shas, "blob")


async def objects(
    repo: MemoryRepo, shas: Sequence[str], kind: str, *, max_bytes: int | None = None
) -> dict[str, bytes]:
    """The contents of ``shas``, each an object of ``kind`` (``blob``, ``commit``), read in one ``git
    cat-file --batch``; another kind, or one over ``max_bytes``, is refused."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    code, out, err = await run_git_bytes(
        repo.path, "cat-file", "--batch", input_bytes=("\n".join(wanted) + "\n").encode()
    )
    if code != 0:
        raise MemoryRepoError(f"git cat-file failed: {err.decode('utf-8', 'replace')[-300:]}")
    found: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        header = out[pos:end].decode("ascii", "replace").split(" ")
        pos = end + 1
        if len(header) < 3 or header[1] != kind or (max_bytes is not None and int(header[2]) > max_bytes):
            raise MemoryRepoError(f"not a {kind} memd reads: {' '.join(header)[:80]}")
        size = int(header[2])
        found[header[0]] = out[pos : pos + size]
        pos += size + 1
    return found


async def new_blobs(repo: MemoryRepo, tip: str, known: list[str]) -> list[tuple[str, str]]:
    """(blob id, path) of every file version ``tip`` brings that none of ``known`` has (each
    incoming commit's files, not only the last one's)."""
    args = ["rev-list", "--objects", tip]
    if known:
        args += ["--not", *known]
    listed = await repo.git(*args)
    lines = [line for line in listed.splitlines() if line]
    if not lines:
        return []
    checked = await repo.git(
        "cat-file",
        "--batch-check=%(objecttype) %(objectname)",
        input_text="\n".join(line.split(" ", 1)[0] for line in lines) + "\n",
    )
    kinds = dict(
        (parts[1], parts[0]) for parts in (row.split(" ") for row in checked.splitlines()) if len(parts) == 2
    )
    out: list[tuple[str, str]] = []
    for line in lines:
        sha, _, path = line.partition(" ")
        if kinds.get(sha) == "blob":
            out.append((sha, path))
    return out


async def fetch_into(clone: MemoryRepo, source: Path, ref: str) -> str:
    """Bring ``ref`` of the repository at ``source`` (memd's own) into a scratch ``clone``."""
    await clone.git("fetch", *upload_pack(str(source)), "-q", "--no-tags", str(source), f"+{ref}:{ref}")
    commit = await ref_commit(clone, ref)
    assert commit is not None
    return commit


async def checkout(clone: MemoryRepo, commit: str) -> None:
    """Put a scratch ``clone`` on ``commit`` (branch ``memd-sync``), work tree and index."""
    await clone.git("checkout", "-q", "-f", "-B", "memd-sync", commit)


async def start_merge(clone: MemoryRepo, theirs: str) -> None:
    """Record ``theirs`` as the second parent of the scratch clone's next commit (the tree memd writes
    itself, so git's own merge never writes a conflict marker)."""
    await clone.git(
        "merge", "-q", "--no-commit", "--no-ff", "-s", "ours", "--allow-unrelated-histories", theirs
    )


async def replace_tree(clone: MemoryRepo, files: dict[str, bytes]) -> None:
    """Make the scratch clone's work tree and index exactly ``files`` (every path relative, regular)."""
    await clone.git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ".")
    for entry in clone.path.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            import shutil

            shutil.rmtree(entry)
        else:
            entry.unlink()
    for rel, data in files.items():
        target = clone.path / rel
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        target.write_bytes(data)
    await clone.git("add", "-A", "--", ".")


async def land_exact(repo: MemoryRepo, clone: MemoryRepo, *, base: str) -> str:
    """Fast-forward the real repository's branch from ``base`` to the scratch clone's HEAD; the
    repository must still be at ``base`` (a run that landed meanwhile makes the caller merge again)."""
    async with repo.locked():
        if await repo.head() != base:
            raise RepoMoved("the memory repository moved during the sync; it is merged again")
        target = await clone.head()
        assert target is not None
        await repo.git("fetch", *upload_pack(str(clone.path)), "-q", "--no-tags", str(clone.path), "HEAD")
        await repo.git("merge", "-q", "--ff-only", "--no-edit", target)
        return target


async def fast_forward(repo: MemoryRepo, *, base: str, target: str) -> str:
    """Fast-forward the real repository's branch from ``base`` to ``target`` (already fetched)."""
    async with repo.locked():
        if await repo.head() != base:
            raise RepoMoved("the memory repository moved during the sync; it is merged again")
        await repo.git("merge", "-q", "--ff-only", "--no-edit", target)
        return target


async def replace_branch(
    repo: MemoryRepo, *, base: str, keep: str, target: str | None = None, source: MemoryRepo | None = None
) -> str:
    """Move the real repository's branch from ``base`` to ``target`` (already fetched), or to a
    scratch clone ``source``'s HEAD, which is not a descendant (a machine's first merge with its
    remote), work tree included; ``base`` stays at the ref ``keep``. The repository must still be at
    ``base``."""
    async with repo.locked():
        if await repo.head() != base:
            raise RepoMoved("the memory repository moved during the sync; it is merged again")
        if source is not None:
            target = await source.head()
            await repo.git("fetch", "-q", "--no-tags", str(source.path), "HEAD")
        assert target is not None
        await repo.git("update-ref", keep, base)
        await repo.git("reset", "-q", "--keep", target)
        return target


async def ahead_behind(repo: MemoryRepo, local: str, other: str) -> tuple[int, int]:
    """Commits ``local`` has that ``other`` lacks, and the other way round."""
    out = await repo.git("rev-list", "--left-right", "--count", f"{local}...{other}")
    left, _, right = out.strip().partition("\t")
    return int(left or 0), int(right or 0)
