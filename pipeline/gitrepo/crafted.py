"""Commits memd makes from trees it already has, without a work tree (git's plumbing): a commit's tree
without one top-level folder, a commit over a given tree and parents, and what a branch holds that
another commit does not. Every message passes the secret gate first, as every commit memd makes does
(``pipeline.gitrepo.message_gate``): a pushed commit's message lists local commits' subjects, and a
subject written by hand in the memory repository never passed it."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.gitrepo.repository import MemoryRepo


async def tree_without(repo: MemoryRepo, commit: str, folder: str) -> str:
    """The id of ``commit``'s tree without its top-level entry ``folder`` (written to the object store)."""
    listing = await repo.git("ls-tree", "-z", commit)
    kept = [entry for entry in listing.split("\0") if entry and entry.partition("\t")[2] != folder]
    return (await repo.git("mktree", "-z", input_text="".join(f"{entry}\0" for entry in kept))).strip()


async def commit_tree(repo: MemoryRepo, tree: str, parents: Sequence[str], message: str) -> str:
    """A new commit of ``tree`` over ``parents`` (no branch moves), its message through the secret gate;
    its id."""
    message = repo.gated(message)
    args = [arg for parent in parents for arg in ("-p", parent)]
    if repo.signer is not None:  # signed like every commit memd makes (commit-tree needs -S)
        args.append("-S")
    return (await repo.git("commit-tree", tree, *args, "-F", "-", input_text=message)).strip()


async def tree_of(repo: MemoryRepo, commit: str) -> str:
    return (await repo.git("rev-parse", "--verify", f"{commit}^{{tree}}")).strip()


def _span(head: str, known: Sequence[str]) -> list[str]:
    return [head, *(["--not", *known] if known else [])]


async def commits_between(repo: MemoryRepo, head: str, known: Sequence[str]) -> set[str]:
    """Every commit ``head`` holds that none of ``known`` does."""
    out = await repo.git("rev-list", *_span(head, known))
    return {line for line in out.splitlines() if line}


async def subjects_outside(
    repo: MemoryRepo, head: str, known: Sequence[str], folder: str, *, limit: int
) -> list[str]:
    """The subjects of the commits (merges aside) ``head`` holds that none of ``known`` does and that
    change something outside the top-level ``folder``, newest first, at most ``limit``."""
    span = _span(head, known)
    out = await repo.git(
        "log", f"-n{limit}", "--no-merges", "--format=%s", *span, "--", ".", f":(exclude){folder}"
    )
    return [line for line in out.splitlines() if line]


async def messages_matching(
    repo: MemoryRepo, pattern: str, head: str, known: Sequence[str], *, limit: int
) -> list[tuple[str, str]]:
    """(commit, message) of the commits ``head`` holds that none of ``known`` does whose message has a
    line matching ``pattern`` (git's basic regular expression), newest first, at most ``limit``."""
    out = await repo.git(
        "log", f"-n{limit}", f"--grep={pattern}", "--format=%x01%H%x00%B", *_span(head, known), "--"
    )
    found = []
    for chunk in out.split("\x01"):
        sha, sep, text = chunk.partition("\x00")
        if sep:
            found.append((sha.strip(), text))
    return found


async def move_ref(repo: MemoryRepo, ref: str, new: str, old: str, reason: str) -> None:
    """Point ``ref`` at ``new``, only while it is still at ``old`` (its reflog says ``reason``)."""
    await repo.git("update-ref", "-m", reason, ref, new, old)
