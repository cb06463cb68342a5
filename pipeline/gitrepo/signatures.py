"""Reading who signed the commits a remote brings, as data (the rules are ``pipeline.sync.trust``).

``incoming`` lists the commits ``tip`` has that this machine's known commits lack, parents first;
``files_at`` reads one small file (the allowed signers) as each of a set of commits has it, in one
``git cat-file`` (its size learnt before it is read); ``signatures`` has git check each commit's
SSH signature against an allowed-signers file memd writes to a private temporary folder
(``gpg.ssh.program=ssh-keygen``, bounded like every git call); ``added`` says which commit added
which path under a folder (who wrote a tombstone).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.git import run_git_bytes
from pipeline.gitrepo.repository import MemoryRepo

VERIFY_TIMEOUT_S = 300.0
"""One ``ssh-keygen`` per signed commit: a long list of new commits takes a while, never forever."""


@dataclass(frozen=True)
class Incoming:
    sha: str
    parents: tuple[str, ...]


@dataclass(frozen=True)
class Signature:
    status: str
    """git's ``%G?``: ``G`` good and its key in the allowed file, ``U`` good but unknown key, ``B``
    bad, ``N`` none, ``E`` cannot be checked (and ``X``, ``Y``, ``R`` for expired or revoked)."""
    fingerprint: str
    """The signing key's ``SHA256:`` fingerprint (empty when unsigned)."""


async def count(repo: MemoryRepo, tip: str, known: Sequence[str]) -> int:
    out = await repo.git("rev-list", "--count", tip, "--not", *known, "--")
    return int(out.strip() or 0)


async def incoming(repo: MemoryRepo, tip: str, known: Sequence[str]) -> list[Incoming]:
    """The commits ``tip`` brings that none of ``known`` has, each after its parents."""
    out = await repo.git("rev-list", "--topo-order", "--reverse", "--parents", tip, "--not", *known, "--")
    found = []
    for line in out.splitlines():
        shas = line.split()
        if shas:
            found.append(Incoming(shas[0], tuple(shas[1:])))
    return found


async def files_at(
    repo: MemoryRepo, commits: Sequence[str], path: str, max_bytes: int
) -> dict[str, bytes | None]:
    """``path`` as each of ``commits`` has it (None: it has none). ``MemoryRepoError`` for a version
    over ``max_bytes`` or not a file."""
    wanted = sorted(set(commits))
    if not wanted:
        return {}
    query = "".join(f"{sha}:{path}\n" for sha in wanted).encode()
    code, out, err = await run_git_bytes(
        repo.path, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)", input_bytes=query
    )
    if code != 0:
        raise MemoryRepoError(f"git cat-file failed: {err.decode('utf-8', 'replace')[-300:]}")
    blobs: dict[str, str] = {}
    for sha, row in zip(wanted, out.decode("ascii", "replace").splitlines(), strict=False):
        parts = row.split()
        if len(parts) != 3 or parts[-1] == "missing":
            continue
        obj, kind, size = parts
        if kind != "blob" or int(size) > max_bytes:
            raise MemoryRepoError(
                f"{path} in commit {sha[:12]} is a {kind} of {size} bytes, over {max_bytes}"
            )
        blobs[sha] = obj
    contents: dict[str, bytes] = {}
    objects = sorted(set(blobs.values()))
    if objects:
        code, out, err = await run_git_bytes(
            repo.path, "cat-file", "--batch", input_bytes=("\n".join(objects) + "\n").encode()
        )
        if code != 0:
            raise MemoryRepoError(f"git cat-file failed: {err.decode('utf-8', 'replace')[-300:]}")
        pos = 0
        while pos < len(out):
            end = out.index(b"\n", pos)
            header = out[pos:end].decode("ascii", "replace").split(" ")
            length = int(header[2])
            contents[header[0]] = out[end + 1 : end + 1 + length]
            pos = end + 1 + length + 1
    return {sha: (contents[blobs[sha]] if sha in blobs else None) for sha in wanted}


async def signatures(
    repo: MemoryRepo, tip: str, known: Sequence[str], allowed_signers: str
) -> dict[str, Signature]:
    """Each incoming commit's signature, checked by git against ``allowed_signers`` (the text of an
    allowed-signers file)."""
    with tempfile.TemporaryDirectory(prefix="memd-signers.") as tmp:
        allowed = Path(tmp) / "allowed_signers"
        allowed.write_text(allowed_signers, encoding="utf-8")
        code, out, err = await run_git_bytes(
            repo.path,
            "-c",
            "gpg.format=ssh",
            "-c",
            "gpg.ssh.program=ssh-keygen",
            "-c",
            f"gpg.ssh.allowedSignersFile={allowed}",
            "log",
            "--format=%H %G? %GK",
            tip,
            "--not",
            *known,
            "--",
            timeout_s=VERIFY_TIMEOUT_S,
        )
    if code != 0:
        raise MemoryRepoError(f"git log failed checking signatures: {err.decode('utf-8', 'replace')[-300:]}")
    found: dict[str, Signature] = {}
    for line in out.decode("ascii", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) >= 2 and len(parts[0]) == 40:
            found[parts[0]] = Signature(parts[1], parts[2] if len(parts) > 2 else "")
    return found


async def added(repo: MemoryRepo, tip: str, known: Sequence[str], folder: str) -> dict[str, str]:
    """path -> the incoming commit that added it, for the files under ``folder``."""
    out = await repo.git(
        "log",
        "--format=%x01%H",
        "--diff-filter=A",
        "--name-only",
        "--no-renames",
        tip,
        "--not",
        *known,
        "--",
        folder,
    )
    found: dict[str, str] = {}
    commit = ""
    for line in out.splitlines():
        if line.startswith("\x01"):
            commit = line[1:]
        elif line.strip():
            found.setdefault(line.strip(), commit)
    return found


async def folder_trees(repo: MemoryRepo, commits: Sequence[str], folder: str) -> dict[str, str | None]:
    """The tree id of ``folder`` as each of ``commits`` has it (None: it has none, or not a folder)."""
    wanted = sorted(set(commits))
    if not wanted:
        return {}
    query = "".join(f"{sha}:{folder}\n" for sha in wanted).encode()
    code, out, err = await run_git_bytes(
        repo.path, "cat-file", "--batch-check=%(objectname) %(objecttype)", input_bytes=query
    )
    if code != 0:
        raise MemoryRepoError(f"git cat-file failed: {err.decode('utf-8', 'replace')[-300:]}")
    found: dict[str, str | None] = {}
    for sha, row in zip(wanted, out.decode("ascii", "replace").splitlines(), strict=False):
        parts = row.split()
        found[sha] = parts[0] if len(parts) == 2 and parts[1] == "tree" else None
    return found


async def tree_files(repo: MemoryRepo, tree: str, max_entries: int) -> dict[str, tuple[str, str]]:
    """name -> (mode, blob id) of the entries of ``tree`` (one level); ``MemoryRepoError`` for more
    than ``max_entries`` or an entry that is not a file."""
    out = await repo.git("ls-tree", "-z", tree)
    found: dict[str, tuple[str, str]] = {}
    for item in out.split("\0"):
        if not item:
            continue
        meta, _, name = item.partition("\t")
        mode, kind, sha = meta.split(" ", 2)
        if kind != "blob":
            raise MemoryRepoError(f"{name[:60]!r} in tree {tree[:12]} is a {kind}, not a file")
        found[name] = (mode, sha)
        if len(found) > max_entries:
            raise MemoryRepoError(f"tree {tree[:12]} has more than {max_entries} entries")
    return found


async def blob_sizes(repo: MemoryRepo, blobs: Sequence[str]) -> dict[str, int]:
    """blob id -> its size, as git records it (nothing read)."""
    wanted = sorted(set(blobs))
    if not wanted:
        return {}
    code, out, err = await run_git_bytes(
        repo.path,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype) %(objectsize)",
        input_bytes=("\n".join(wanted) + "\n").encode(),
    )
    if code != 0:
        raise MemoryRepoError(f"git cat-file failed: {err.decode('utf-8', 'replace')[-300:]}")
    found: dict[str, int] = {}
    for row in out.decode("ascii", "replace").splitlines():
        parts = row.split()
        if len(parts) == 3 and parts[1] == "blob":
            found[parts[0]] = int(parts[2])
        else:
            raise MemoryRepoError(f"not a blob in the memory repository: {row[:80]}")
    return found


async def changed_paths(repo: MemoryRepo, parent: str, commit: str) -> list[str]:
    """The paths ``commit`` changes from ``parent``."""
    out = await repo.git("diff-tree", "--no-commit-id", "--name-only", "-r", "-z", parent, commit)
    return [path for path in out.split("\0") if path]
