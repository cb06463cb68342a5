"""Team mode: what this machine pushes to the team's ``[sync]`` remote never holds ``global/``.

``global/`` is a person's (``pipeline.team.personal``) and each of a person's machines builds it from
the shared store itself, so it need not travel at all. The local branch keeps it in its history like
any scope (consolidated, forgotten, published and shown as before); what is pushed is a commit made
for the remote (``outgoing``): the branch's tree without ``global/``, over the remote's branch (which
this machine has merged), so no object of ``global/`` is ever sent and nothing another person fetches
holds it. Once pushed, the local branch records it as merged (``adopt``: a commit of this machine's
tree over both), so the next merge with the remote starts from it; and the shared records of the
scopes whose last run it carries name it (``relay``): those runs' own commits never leave this
machine, and the other machines wait for the one that does (``pipeline.team.arrival``).
"""

from __future__ import annotations

from pipeline.clock import Clock
from pipeline.gitrepo import crafted, remote
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import GLOBAL_SCOPE
from pipeline.store import Store, syncstate

PUSHED_REF = "refs/memd/pushed/"
"""The commit this machine last pushed (``refs/memd/pushed/<branch>``)."""
SOURCE_REF = "refs/memd/pushed-from/"
"""The commit of the local branch it was made from."""
LISTED = 20
"""How many of the carried commits' subjects a pushed commit's message lists."""


async def _known(repo: MemoryRepo, branch: str, tip: str | None) -> list[str]:
    """What the remote already has of this branch: its ``tip``, and the commit this machine last
    pushed from (with all before it)."""
    source = await remote.ref_commit(repo, SOURCE_REF + branch)
    return [sha for sha in (tip, source) if sha]


async def outgoing(repo: MemoryRepo, branch: str, head: str, tip: str | None, *, trailers: str = "") -> str:
    """A commit whose tree is ``head``'s without ``global/``, over the remote's ``tip``; its message
    lists the subjects of the commits it carries that change more than ``global/``, then
    ``trailers`` (the record of a forget's rewrite it carries: ``pipeline.sync.rewrites``)."""
    tree = await crafted.tree_without(repo, head, GLOBAL_SCOPE)
    known = await _known(repo, branch, tip)
    carried = await crafted.subjects_outside(repo, head, known, GLOBAL_SCOPE, limit=LISTED)
    if len(carried) == 1:
        subject, body = carried[0], ""
    else:
        subject, body = "memd: changes of this machine's memory", "".join(f"- {s}\n" for s in carried) + "\n"
    message = f"{subject}\n\n{body}global/ is a person's own and never pushed (team mode).\n"
    if trailers:
        message += "\n" + trailers
    return await crafted.commit_tree(repo, tree, [tip] if tip else [], message)


async def adopt(repo: MemoryRepo, head: str, pushed: str) -> str:
    """Record on the local branch (at ``head``) that ``pushed``, made from it or an ancestor, is merged:
    a commit of ``head``'s tree over both. ``remote.RepoMoved`` when the branch moved meanwhile."""
    message = f"memd: pushed {pushed[:12]} (this branch without global/) to the [sync] remote\n"
    merged = await crafted.commit_tree(repo, await crafted.tree_of(repo, head), [head, pushed], message)
    return await remote.fast_forward(repo, base=head, target=merged)


async def pushed(
    store: Store, repo: MemoryRepo, branch: str, *, head: str, sent: str, tip: str | None, clock: Clock
) -> None:
    """After ``sent`` (made from ``head``) reached the remote over ``tip``: remember it, let the shared
    records of the runs it carries name it, and adopt it (when a run landed meanwhile, the next sync
    does: ``is_ours``)."""
    carried = await crafted.commits_between(repo, head, await _known(repo, branch, tip))
    await remote.set_ref(repo, PUSHED_REF + branch, sent)
    await remote.set_ref(repo, SOURCE_REF + branch, head)
    await relay(store, carried, sent=sent, clock=clock)
    try:
        await adopt(repo, head, sent)
    except remote.RepoMoved:
        pass


async def is_ours(repo: MemoryRepo, branch: str, tip: str, local: str) -> bool:
    """Whether the remote's ``tip`` is what this machine last pushed, made from the branch at ``local``
    or before it (so ``local`` holds all of it, and ``global/`` besides)."""
    source = await remote.ref_commit(repo, SOURCE_REF + branch)
    return (
        tip == await remote.ref_commit(repo, PUSHED_REF + branch)
        and source is not None
        and await remote.is_ancestor(repo, source, local)
    )


async def relay(store: Store, carried: set[str], *, sent: str, clock: Clock) -> None:
    """The shared records whose last commit is one ``sent`` carries name ``sent`` now: the commit that
    reaches the other machines. This machine's own ``global`` record keeps its commit (it stays here,
    and ``sent`` has no ``global/``)."""
    own = syncstate.own_global_key(store)
    for key, commit in (await syncstate.last_commits(store)).items():
        if key != own and commit in carried:
            await syncstate.relay_commit(store, key, old=commit, new=sent, now=clock.now())
