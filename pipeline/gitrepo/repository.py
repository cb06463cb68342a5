"""The memory repository: initialization, scratch copies, staging a run, landing its commit, history.

The real repository at ``memory_dir`` only ever changes in two ways: a fast-forward of its
branch to a commit built and validated in a scratch copy (``land``), or a new ``inbox/<run>``
branch pointing at such a commit (``park``). Everything a run does before that happens in a
clone in a temporary directory, which is thrown away whatever the outcome.

Callers ask for intents (stage a scope, what changed since a commit, commit, land, the patch of an
inbox branch); the git command lines are built here and run by ``pipeline.gitrepo.git`` only. With a
``Signer`` (``daemon.runtime`` gives one), every commit made here or in a scratch copy (a run's, a
merge, a rebase) is SSH-signed with this machine's key (``pipeline.gitrepo.signing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.git import GitResult, run_git
from pipeline.gitrepo.message_gate import SecretFinder, gate_message
from pipeline.gitrepo.signing import Signer, signing_args
from pipeline.layout import check_file, check_scope

log = structlog.get_logger(__name__)

LOCK_FILE = "memd.lock"
LOCK_TIMEOUT_S = 60.0
LOCK_POLL_S = 0.05
INBOX_PREFIX = "inbox/"
RUN_TRAILER = "Memd-Run"
"""The commit trailer naming the consolidation run that made a commit (``Memd-Run: <run id>``)."""
RUN_SEARCH_DEPTH = 200
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's id of the empty tree: the base of a file's first version."""
_SHA = re.compile(r"^[0-9a-f]{7,40}$")


def is_sha(value: str) -> bool:
    """A commit id as memd shows them (7 to 40 lowercase hex digits): never an option or a range."""
    return bool(_SHA.match(value))


README = """# memd memory

This repository is written by memd. One folder per scope: `global/` for what holds across
projects, `projects/<key>/` for each project. In each: `MEMORY.md` (the index),
`memory_summary.md` (the short digest agents load), topic files with frontmatter, and the
phase-1 inputs memd consolidated (`raw_memories.md`, `rollout_summaries/`).

Every consolidation is one commit: `git log` shows them, `git revert <commit>` undoes one.
`tombstones/` names (by a hash) the sessions that were forgotten: with `[sync]`, no machine brings
them back.
Read it without git: `memd memories show [SCOPE]`, `memd memories log`.
"""


@dataclass(frozen=True)
class Commit:
    sha: str
    at: str
    subject: str


@dataclass(frozen=True)
class Change:
    """One staged change of a scope: git's status letter (``A``, ``M``, ``D``, ``R``, ``C``, ``T``),
    the path relative to the scope, and for a rename or a copy the path it came from."""

    status: str
    path: str
    old_path: str | None = None


class MemoryRepo:
    """A git repository of memory scopes at ``path``."""

    def __init__(
        self,
        path: Path,
        signer: Signer | None = None,
        *,
        secret_gate: Callable[[], SecretFinder] | None = None,
    ) -> None:
        """``signer`` signs every commit made here and in its scratch copies (``pipeline.gitrepo.signing``);
        ``secret_gate`` gives the secret finder every commit message passes (made on the first commit:
        reading a repository never needs it); scratch copies keep both."""
        self.path = path
        self.signer = signer
        self.secret_gate = secret_gate

    async def git(self, *args: str, check: bool = True, input_text: str | None = None) -> str:
        return (await self.run(*args, check=check, input_text=input_text)).stdout

    async def run(self, *args: str, check: bool = True, input_text: str | None = None) -> GitResult:
        """``git <args>`` here, a command that makes a commit signed with this machine's key."""
        signed = await asyncio.to_thread(signing_args, self.signer, args) if self.signer else []
        return await run_git(self.path, *signed, *args, check=check, input_text=input_text)

    # ------------------------------------------------------------ set-up

    async def ensure(self) -> None:
        """Create the repository with a first commit if it does not exist; check it if it does."""
        if (self.path / ".git").is_dir():
            if await self.head() is None:
                await self._first_commit()
            return
        if self.path.exists() and any(self.path.iterdir()):
            raise MemoryRepoError(
                f"{self.path} exists, is not empty and is not a git repository: "
                "point [paths] memory_dir at an empty or new folder"
            )
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        await self.git("init", "-q", "-b", "main")
        await self._first_commit()
        log.info("memory_repo_created", path=str(self.path))

    async def _first_commit(self) -> None:
        readme = self.path / "README.md"
        if not readme.exists():
            readme.write_text(README, encoding="utf-8")
        await self.git("add", "--", "README.md")
        await self.git("commit", "-q", "--allow-empty", "-m", "memd: initialize the memory repository")

    async def head(self) -> str | None:
        out = await run_git(self.path, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
        return out.stdout.strip() or None

    async def branch(self) -> str:
        out = await run_git(self.path, "symbolic-ref", "-q", "--short", "HEAD", check=False)
        name = out.stdout.strip()
        if not name:
            raise MemoryRepoError(f"{self.path} has a detached HEAD: check out a branch (git switch main)")
        return name

    async def has_commit(self, sha: str) -> bool:
        out = await run_git(self.path, "cat-file", "-e", f"{sha}^{{commit}}", check=False)
        return out.returncode == 0

    async def dirty_paths(self, scope: str) -> list[str]:
        """Uncommitted changes (staged, unstaged or untracked) under ``scope``."""
        out = await self.git(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", check_scope(scope)
        )
        return [entry[3:] for entry in out.split("\0") if entry]

    # ------------------------------------------------------------ scratch copies

    @contextlib.asynccontextmanager
    async def scratch(
        self, parent: Path, *, ref: str = "HEAD", owner: str = "x", paths: Sequence[str] | None = None
    ) -> AsyncIterator[MemoryRepo]:
        """A throwaway clone of this repository at ``ref``, removed on exit whatever happened.

        Its folder is ``<parent>/<owner>.<random>``: ``owner`` (a run id) lets a later run tell a
        copy a killed process left behind (``sweep_scratch``) from one still in use. With ``paths``
        only those folders are checked out (sparse): a run on one scope does not copy the others.
        The clone shares this repository's objects (read-only); what it writes stays its own.
        """
        tmp = await asyncio.to_thread(_make_scratch_dir, parent, owner)
        work = tmp / "repo"
        try:
            sparse = ["--sparse"] if paths else []
            await run_git(tmp, "clone", "-q", "--no-tags", "--shared", *sparse, str(self.path), str(work))
            clone = MemoryRepo(work, self.signer, secret_gate=self.secret_gate)
            if paths:
                await clone.git("sparse-checkout", "set", "--cone", "--", *paths)
            if ref != "HEAD":
                await clone.git("checkout", "-q", "-B", "memd-run", f"origin/{ref}")
            yield clone
        finally:
            await asyncio.to_thread(shutil.rmtree, tmp, True)

    # ------------------------------------------------------------ staging a run (in a scratch copy)

    async def stage(self, scope: str) -> None:
        """Stage everything under ``scope`` as it is on disk: new, changed and deleted files."""
        await self.git("add", "-A", "--", check_scope(scope))

    async def stage_paths(self, *paths: str) -> None:
        """Stage everything under ``paths`` (folders of the repository, such as ``tombstones``) as on disk."""
        if paths:
            await self.git("add", "-A", "--", *paths)

    async def snapshot_scope(self, scope: str) -> str:
        """Stage ``scope`` as it is on disk and return the index's tree: what ``restore_scope`` puts back."""
        await self.stage(scope)
        return (await self.git("write-tree")).strip()

    async def restore_scope(self, scope: str, tree: str) -> None:
        """Put ``scope`` back, on disk and staged, as it was in ``tree`` (``snapshot_scope``): what was
        written since is gone."""
        folder = self.path / check_scope(scope)
        await asyncio.to_thread(shutil.rmtree, folder, True)
        if (await self.git("ls-tree", "--name-only", tree, "--", scope)).strip():
            await self.git("checkout", "-q", tree, "--", scope)
        await self.stage(scope)

    async def has_staged_changes(self) -> bool:
        out = await run_git(self.path, "diff", "--cached", "--quiet", check=False)
        if out.returncode not in (0, 1):
            raise MemoryRepoError(f"git diff failed: {out.stderr.strip()[-300:]}")
        return out.returncode == 1

    async def untrack(self, paths: Sequence[str]) -> None:
        """Drop ``paths`` from the index, leaving the disk alone (a path git does not track is ignored)."""
        if paths:
            await self.git("rm", "-q", "--cached", "--ignore-unmatch", "--", *paths)

    async def staged_changes(self, scope: str, since: str = "HEAD") -> list[Change]:
        """What is staged under ``scope`` against the commit ``since`` (renames detected)."""
        out = await self.git(
            "diff",
            "--cached",
            "--no-ext-diff",
            "-M",
            "--name-status",
            "-z",
            f"--relative={scope}",
            since,
            "--",
        )
        fields = out.split("\0")
        changes: list[Change] = []
        i = 0
        while i < len(fields) - 1:
            status = fields[i]
            if status.startswith(("R", "C")):
                changes.append(Change(status[0], fields[i + 2], fields[i + 1]))
                i += 3
            else:
                changes.append(Change(status[:1], fields[i + 1]))
                i += 2
        return changes

    async def staged_diff(
        self, scope: str, since: str, *, prefix: str = "", exclude: Sequence[str] = ()
    ) -> str:
        """The staged change of ``scope`` against the commit ``since`` as a patch, its paths relative to
        the scope and shown under ``prefix`` (``a/<prefix><path>``); ``exclude`` (paths relative to
        the scope) is left out."""
        return await self.git(
            "diff",
            "--cached",
            "--no-ext-diff",
            "--no-color",
            "-M",
            f"--relative={scope}",
            f"--src-prefix=a/{prefix}",
            f"--dst-prefix=b/{prefix}",
            since,
            "--",
            scope,
            *[f":(exclude){scope}/{rel}" for rel in exclude],
        )

    def gated(self, message: str) -> str:
        """A commit message through the secret gate (every commit memd makes passes it)."""
        return message if self.secret_gate is None else gate_message(message, self.secret_gate())

    async def commit_staged(self, message: str, *, author: str | None = None) -> str:
        """Commit what is staged (hooks never run), the message through the secret gate; returns the
        new HEAD. ``author`` (``Name <email>``): a change a person asked for is theirs; memd stays the
        committer (and signs it)."""
        message = self.gated(message)
        who = [f"--author={author}"] if author else []
        await self.git("commit", "-q", "--no-verify", *who, "-F", "-", input_text=message)
        head = await self.head()
        assert head is not None
        return head

    # ------------------------------------------------------------ landing a run

    def check_writable(self) -> None:
        """Raise ``MemoryRepoError`` naming the path and the reason when a run could not land here:
        the lock file cannot be opened, or a folder git writes to is not writable (checked before a
        consolidation pays for its model calls). A repository that does not exist yet needs a
        writable nearest existing folder."""
        git_dir = self.path / ".git"
        if not git_dir.is_dir():
            folder = self.path
            while not folder.exists() and folder != folder.parent:
                folder = folder.parent
            _check_access(self.path, folder)
            return
        lock = git_dir / LOCK_FILE
        try:
            os.close(os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        except OSError as exc:
            raise MemoryRepoError(
                f"the memory repository {self.path} cannot be written: {lock}: {exc.strerror or exc}"
            ) from None
        for folder in (self.path, git_dir, git_dir / "objects", git_dir / "refs" / "heads"):
            _check_access(self.path, folder)

    @contextlib.asynccontextmanager
    async def locked(self, timeout_s: float = LOCK_TIMEOUT_S) -> AsyncIterator[None]:
        """An exclusive lock on the real repository's refs and work tree (across processes)."""
        path = self.path / ".git" / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if loop.time() > deadline:
                        raise MemoryRepoError(f"the memory repository {self.path} stayed locked") from None
                    await asyncio.sleep(LOCK_POLL_S)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    async def _rebase_onto_current(self, clone: MemoryRepo) -> None:
        """Replay the clone's new commits onto this repository's current branch (scopes are disjoint)."""
        branch = await self.branch()
        await clone.git("fetch", "-q", "--no-tags", str(self.path), f"refs/heads/{branch}")
        result = await clone.run("rebase", "-q", "FETCH_HEAD", check=False)
        if result.returncode != 0:
            await run_git(clone.path, "rebase", "--abort", check=False)
            raise MemoryRepoError(
                "the memory repository changed under this scope during the run; nothing was written",
                stderr=result.stderr,
            )

    async def land(self, clone: MemoryRepo, *, base: str) -> str:
        """Fast-forward this repository's branch to the clone's HEAD. Returns the new HEAD."""
        async with self.locked():
            if await self.head() != base:
                await self._rebase_onto_current(clone)
            target = await clone.head()
            assert target is not None
            await self.git("fetch", "-q", "--no-tags", str(clone.path), "HEAD")
            await self.git("merge", "-q", "--ff-only", "--no-edit", target)
            return target

    async def park(self, clone: MemoryRepo, branch: str) -> str:
        """Point a new branch (``inbox/<run>``) at the clone's HEAD; this repository's work tree is untouched."""
        async with self.locked():
            target = await clone.head()
            assert target is not None
            await self.git("fetch", "-q", "--no-tags", str(clone.path), f"HEAD:refs/heads/{branch}")
            return target

    # ------------------------------------------------------------ inbox branches

    async def commit_of_run(self, run_id: str, *, depth: int = RUN_SEARCH_DEPTH) -> str | None:
        """The commit on the branch whose message carries ``Memd-Run: <run_id>`` (or an older memd's
        ``Run: <run_id>``), among the last ``depth`` commits; None when the run never landed."""
        if await self.head() is None:
            return None
        out = await self.git(
            "log", f"-{depth}", "--fixed-strings", f"--grep=Run: {run_id}", "--format=%H%x00%B%x01", "HEAD"
        )
        for entry in out.split("\x01"):
            sha, _, body = entry.strip().partition("\x00")
            if any(
                line.strip() in (f"{RUN_TRAILER}: {run_id}", f"Run: {run_id}") for line in body.splitlines()
            ):
                return sha
        return None

    async def branch_head(self, branch: str) -> str | None:
        out = await run_git(
            self.path, "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", check=False
        )
        return out.stdout.strip() or None

    async def inbox_branches(self) -> list[str]:
        out = await self.git("for-each-ref", "--format=%(refname:short)", f"refs/heads/{INBOX_PREFIX}")
        return [line for line in out.splitlines() if line]

    async def accept(self, branch: str, scratch_parent: Path) -> str:
        """Land the inbox branch on the current branch (replayed onto it if it moved); delete the branch."""
        async with self.scratch(scratch_parent, ref=branch, owner="accept") as clone:
            new_head = await self.land(clone, base=await _merge_base(self, branch))
        await self.git("branch", "-q", "-D", branch)
        return new_head

    async def reject(self, branch: str) -> None:
        await self.git("branch", "-q", "-D", branch)

    async def branch_patch(self, branch: str) -> str:
        """The commits ``branch`` adds to HEAD as one patch: each commit's message, then its diff."""
        base = await _merge_base(self, branch)
        return await self.git("log", "--no-ext-diff", "--no-color", "-p", "--format=%B", f"{base}..{branch}")

    # ------------------------------------------------------------ reading

    async def log(
        self, scope: str | None = None, *, limit: int = 50, ref: str = "HEAD", file: str | None = None
    ) -> list[Commit]:
        """The commits of the repository, of ``scope``, or of one ``file`` of it (a path relative to
        the scope: ``check_file``)."""
        args = ["log", f"-n{limit}", "--format=%H%x1f%cI%x1f%s", ref]
        if scope:
            args += ["--", f"{check_scope(scope)}/{check_file(file)}" if file else check_scope(scope)]
        out = await self.git(*args)
        commits = []
        for line in out.splitlines():
            sha, at, subject = line.split("\x1f", 2)
            commits.append(Commit(sha, at, subject))
        return commits

    async def diff_file(self, scope: str, file: str, base: str | None, target: str) -> str:
        """The change of one file of ``scope`` from commit ``base`` (None: from nothing) to ``target``."""
        for sha in (base, target):
            if sha is not None and not is_sha(sha):
                raise MemoryRepoError(f"not a commit id: {sha[:50]!r}")
        args = ["diff", "--no-ext-diff", "--no-color", base or EMPTY_TREE, target]
        return await self.git(*args, "--", f"{check_scope(scope)}/{check_file(file)}")

    async def diff(
        self, base: str, target: str, *, paths: list[str] | None = None, stat: bool = False
    ) -> str:
        args = ["diff", "--no-ext-diff", "--no-color", "-M"]
        if stat:
            args.append("--stat")
        args += [base, target]
        if paths:
            args += ["--", *paths]
        return await self.git(*args)


def scratch_parent(state_dir: Path | str, user: str) -> Path:
    """The folder ``user`` (``phase2``, ``sync``, ``rekey``) makes its scratch copies in:
    ``<state_dir>/<user>-scratch``."""
    return Path(state_dir) / f"{user}-scratch"


def _make_scratch_dir(parent: Path, owner: str) -> Path:
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return Path(tempfile.mkdtemp(prefix=f"{owner}.", dir=parent))


def sweep_scratch(parent: Path, *, keep: Callable[[str], bool]) -> list[str]:
    """Remove the scratch copies under ``parent`` whose owner ``keep`` does not vouch for."""
    removed: list[str] = []
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        owner = entry.name.rsplit(".", 1)[0]
        if entry.is_dir() and not entry.is_symlink() and not keep(owner):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


async def _merge_base(repo: MemoryRepo, branch: str) -> str:
    out = await repo.git("merge-base", "HEAD", branch)
    return out.strip()


def _check_access(repo: Path, folder: Path) -> None:
    if not folder.is_dir():
        raise MemoryRepoError(f"the memory repository {repo} cannot be written: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise MemoryRepoError(f"the memory repository {repo} cannot be written: {folder}: permission denied")
