"""A remote's branch fetched into a throwaway repository first, its objects listed by size, and only
then brought into the memory repository.

The quarantine is a fresh repository under the sync's scratch folder that borrows the memory
repository's objects (``objects/info/alternates``, read-only) and holds refs to the commits memd
already has, so the fetch negotiates as if it were the memory repository and receives only what is
new. What arrives is listed without reading a byte of content (``git rev-list --objects`` for the
ids and paths, ``git cat-file --batch-check`` for each object's type and size) and handed to a
``Screen``, which refuses by raising; before that listing, the screen sees how many objects and
bytes the remote sent at all (``git count-objects``), so a flood is refused before it is listed. Only what passes is fetched from the quarantine into the
memory repository; the quarantine is removed whatever happened, so a refused remote leaves nothing
of its objects behind.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.git import run_git
from pipeline.gitrepo.repository import MemoryRepo

INCOMING_REF = "refs/memd/incoming"
HAVE_REF = "refs/memd/have/"


@dataclass(frozen=True)
class IncomingObject:
    """One object a fetch brings: its id, ``blob``/``tree``/``commit``/``tag``, its size in bytes
    (as git records it, learnt without reading it) and the path it has in some incoming tree
    (empty for a commit or a root tree)."""

    sha: str
    kind: str
    size: int
    path: str


class Screen(Protocol):
    """Looks at what a fetch brings before it reaches the memory repository; refuses by raising."""

    def received(self, objects: int, size: int) -> None:
        """What the remote sent, as stored in the quarantine: objects, bytes on disk (compressed)."""

    def incoming(self, objects: list[IncomingObject]) -> None:
        """Every object the fetched commit reaches that memd did not have."""


@asynccontextmanager
async def quarantine(repo: MemoryRepo, parent: Path, haves: Sequence[str]) -> AsyncIterator[MemoryRepo]:
    """A fresh repository under ``parent`` borrowing ``repo``'s objects, with a ref to each of
    ``haves``; removed on exit."""
    tmp = await asyncio.to_thread(_make_dir, parent)
    try:
        q = MemoryRepo(tmp / "quarantine")
        await q.git("init", "-q")
        await asyncio.to_thread(_borrow, q.path, repo.path)
        for i, sha in enumerate(dict.fromkeys(haves)):
            await q.git("update-ref", f"{HAVE_REF}{i}", sha)
        yield q
    finally:
        await asyncio.to_thread(shutil.rmtree, tmp, True)


def _make_dir(parent: Path) -> Path:
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = Path(tempfile.mkdtemp(prefix="sync.", dir=parent))
    (tmp / "quarantine").mkdir(mode=0o700)
    return tmp


def _borrow(quarantined: Path, source: Path) -> None:
    """Let the repository at ``quarantined`` read (never write) the objects of the one at ``source``."""
    objects = (source / ".git" / "objects").resolve()
    (quarantined / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")


async def received(q: MemoryRepo) -> tuple[int, int]:
    """(objects, bytes on disk) the quarantine holds of its own (not the borrowed ones), from
    ``git count-objects``: what the remote sent, whatever it is, counted without listing it."""
    out = await q.git("count-objects", "-v")
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)

    def number(key: str) -> int:
        value = fields.get(key, "0").strip()
        return int(value) if value.isdigit() else 0

    return number("count") + number("in-pack"), (number("size") + number("size-pack")) * 1024


async def incoming_objects(q: MemoryRepo, tip: str, haves: Sequence[str]) -> list[IncomingObject]:
    """Every object ``tip`` reaches that none of ``haves`` does, with its type and size (no content
    is read)."""
    args = ["rev-list", "--objects", tip]
    if haves:
        args += ["--not", *haves]
    listed = await q.git(*args)
    names: dict[str, str] = {}
    for line in listed.splitlines():
        sha, _, path = line.partition(" ")
        if sha:
            names.setdefault(sha, path)
    if not names:
        return []
    checked = await run_git(
        q.path,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype) %(objectsize)",
        input_text="\n".join(names) + "\n",
    )
    out: list[IncomingObject] = []
    for row in checked.stdout.splitlines():
        parts = row.split(" ")
        if len(parts) != 3 or not parts[2].isdigit():
            raise MemoryRepoError(f"an incoming object cannot be sized: {row[:80]}")
        sha, kind, size = parts
        out.append(IncomingObject(sha, kind, int(size), names.get(sha, "")))
    return out
