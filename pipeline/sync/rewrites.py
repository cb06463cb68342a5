"""A forget's rewrite of a synced history, travelling (issue 32): made on the forgetting machine,
pushed over the old history with a lease, adopted by every trusted machine once checked.

**Made** (``forget_rewrite``): a forget on a machine that has synced rewrites its history as on one
that has not (``pipeline.memory.forget_history``), its refs to the remote (``refs/memd/synced``,
``refs/memd/remote``) too, then records the rewrite in one signed commit on top of the branch, its
message naming the remote's commit the rewrite replaces (``Memd-Rewrite-Of``, the lease), that
commit's new counterpart (``Memd-Rewrite-To``) and every forget record and tombstone it applied
(``Memd-Rewrite-Record: forgotten/<hash>``, ``tombstones/<hash>`` for a session ``memd forget``
took back). Nothing of the old history stays in the object store. In team mode the commit made for
the team's remote (``pipeline.team.outgoing``) carries the same lines.

**Pushed** (``pending``, ``catch_up``): until that commit is synced, the next sync pushes the branch
with ``--force-with-lease`` on the lease, never blind force. When the remote still is at the lease
nothing is fetched (the old objects stay away); when other machines pushed on the old history
meanwhile, their new commits are fetched, checked as any incoming commit (``trust.check_incoming``),
rewritten here the same way (this machine signs them again) and merged, and the push leases the
remote's tip instead. A remote that no longer holds the lease is refused (this machine's rewrite
waits, nothing is pushed over it) unless another machine's rewrite of the same history is there
(**Overtaken**, below).

**Adopted** (``adopt``): a machine whose last synced commit the remote no longer holds adopts the
remote's history only when, among the commits it brings, a record of a rewrite names forget
records its tree holds; applying those records to this machine's own synced history gives, commit
for commit, commits of the remote's history (the same tree, parents, author, committer and message:
``forget_history.images``), so the rewrite removes forgotten text and nothing else; every commit of
it this machine did not have is signed by a key this machine trusts now (not revoked); and every
later commit passes ``trust.check_incoming`` (the record of the rewrite with them: a revoked or
untrusted key's is refused). Then its own refs are rewritten onto the remote's commits (its unsynced
work made again on top, signed here), the reflogs expired and the old objects pruned; the merge with
the remote goes on as any other. Anything else that does not descend from the last synced commit
(a rewind, a rewrite without a record, unsigned, by an untrusted or revoked key, or changing more
than forgotten text) is refused with the reason, never adopted.

**Overtaken** (``overtaken``, ``reapply``): two machines forget at once, and the other's rewrite of
the same synced commit reaches the remote first (its record of the rewrite names this machine's
lease). This machine checks it as any machine does, with its own forget records applied to both
sides: the remote's history and its own synced history, both without what either forget names,
must be the same commits (so the other rewrite removed forgotten text and nothing else); the other
machine's commits are signed by a key trusted now, and later ones pass ``trust.check_incoming``.
Then it adopts that history with its own records applied on top (its own records of the rewrite
dropped, its unsynced work made again on top); when that changed the remote's history (its
forgotten text was still there), a new record of the rewrite, leased on the remote's tip, goes on
top, and the other machine adopts it in turn at its next sync.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import MemoryRepoError, SyncRefused
from pipeline.gitrepo import crafted, remote, signatures
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.memory import forget_records, tombstones
from pipeline.memory.forget_history import NotAScrub, Rewritten, images, rewrite
from pipeline.memory.likeness import ForgottenTopic
from pipeline.sync import trust
from pipeline.team import outgoing

REWRITE_TRAILER = "Memd-Rewrite"
OF = f"{REWRITE_TRAILER}-Of"
TO = f"{REWRITE_TRAILER}-To"
RECORD = f"{REWRITE_TRAILER}-Record"
MAX_MARKS = 100
"""The most records of a rewrite one sync reads (each forget on a synced machine makes one)."""


@dataclass(frozen=True)
class Mark:
    """A record of a rewrite: its commit, the remote commit it replaced and that one's counterpart,
    and the forget records it applied."""

    sha: str
    of: str
    to: str
    records: tuple[str, ...]


@dataclass(frozen=True)
class Forgets:
    """What a rewrite takes out: the memories its forget records name, and the sessions its
    tombstones name (``tombstones/<hash>``: ``memd forget --session``)."""

    records: list[ForgottenTopic] = field(default_factory=list)
    graves: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.records or self.graves)

    def __add__(self, other: Forgets) -> Forgets:
        return Forgets([*self.records, *other.records], self.graves | other.graves)

    def paths(self) -> list[str]:
        """The files of the tree that hold them, as a record of the rewrite names them."""
        records = {forget_records.path_of(forget_records.record_bytes(r)) for r in self.records}
        return sorted(records | {f"{tombstones.TOMBSTONE_DIR}/{g}" for g in self.graves})


@dataclass(frozen=True)
class Pending:
    """This machine's rewrite, not pushed yet: the remote's commit it replaces (the lease)."""

    lease: str
    marks: list[Mark]


@dataclass
class Adopted:
    synced: str
    """The remote's counterpart of this machine's last synced commit."""
    made: int = 0
    """This machine's own commits (unsynced work, local refs) made again on top of it."""
    reused: int = 0
    by: list[str] = field(default_factory=list)
    """The machines that signed the records of the rewrite."""


def message(lease: str, to: str, records: Sequence[str]) -> str:
    lines = [f"{OF}: {lease}", f"{TO}: {to}", *[f"{RECORD}: {r}" for r in records]]
    return (
        "memd: history rewritten without forgotten text\n\n"
        "A forget took memories back for good: every commit that held their text was made again\n"
        "without it, signed by this machine. Trusted machines adopt this history at their next sync.\n\n"
        + "\n".join(lines)
        + "\n"
    )


def trailers(found: Sequence[Mark]) -> str:
    """The lines of one record of a rewrite carrying the records ``found`` (empty: none): what a
    commit made for the remote (team mode's ``outgoing``) says of the rewrite it carries."""
    if not found:
        return ""
    records = sorted({r for m in found for r in m.records})
    return (
        "\n".join([f"{OF}: {found[0].of}", f"{TO}: {found[0].to}", *[f"{RECORD}: {r}" for r in records]])
        + "\n"
    )


def parse(sha: str, text: str) -> Mark | None:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(": ")
        if sep and name in (OF, TO, RECORD):
            found.setdefault(name, []).append(value.strip())
    of, to = found.get(OF, [""])[0], found.get(TO, [""])[0]
    if len(of) != 40 or len(to) != 40:
        return None
    return Mark(sha, of, to, tuple(found.get(RECORD, [])))


async def marks(repo: MemoryRepo, tip: str, known: Sequence[str]) -> list[Mark]:
    """The records of a rewrite among the commits ``tip`` has that none of ``known`` has, oldest first."""
    listed = await crafted.messages_matching(repo, f"^{OF}: ", tip, [k for k in known if k], limit=MAX_MARKS)
    found = [mark for sha, text in listed if (mark := parse(sha, text)) is not None]
    return list(reversed(found))


async def pending(repo: MemoryRepo, branch: str) -> Pending | None:
    """This machine's rewrite that the remote has not taken yet (None: none)."""
    synced = await remote.ref_commit(repo, remote.synced_ref(branch))
    head = await repo.head()
    if synced is None or head is None:
        return None
    # team mode: the local commit the last push was made from carried every record before it
    source = await remote.ref_commit(repo, outgoing.SOURCE_REF + branch)
    found = await marks(repo, head, [synced, *([source] if source else [])])
    return Pending(found[0].of, found) if found else None


async def forget_rewrite(
    repo: MemoryRepo,
    records: Sequence[ForgottenTopic],
    *,
    state_dir: Path,
    graves: Collection[str] = (),
) -> Rewritten:
    """Rewrite the history without what ``records`` forgot and what the sessions ``graves`` names
    (tombstoned) taught; once synced, also the refs to the remote, and the signed record of the
    rewrite on top of the branch (what the next sync pushes)."""
    branch = await repo.branch()
    synced = await remote.ref_commit(repo, remote.synced_ref(branch))
    if synced is None:
        return await rewrite(repo, records, state_dir=state_dir, graves=graves)
    waiting = await pending(repo, branch)
    lease = waiting.lease if waiting is not None else synced
    done = await rewrite(repo, records, state_dir=state_dir, synced_too=True, graves=graves)
    if done.skipped is not None or not done.commits:
        return done
    head = await repo.head()
    assert head is not None
    paths = Forgets(list(records), frozenset(graves)).paths()
    text = message(lease, done.mapping.get(synced, synced), paths)
    made = await crafted.commit_tree(repo, await crafted.tree_of(repo, head), [head], text)
    await crafted.move_ref(repo, f"refs/heads/{branch}", made, head, "memd: forget (the rewrite recorded)")
    return done


def _refused(synced: str, why: str) -> SyncRefused:
    return SyncRefused(
        f"the remote's history was rewritten: it no longer holds {synced[:12]}, the last commit memd "
        f"synced with it, and the rewrite is not adopted: {why}; nothing is merged or published, and "
        "this machine pushes nothing over it"
    )


async def _records(repo: MemoryRepo, found: Sequence[Mark]) -> Forgets | None:
    """The forget records and tombstones the marks name, each read from the tree of the commit naming
    it (None: one is missing or is neither)."""
    records: list[ForgottenTopic] = []
    graves: set[str] = set()
    for mark in found:
        entries = await remote.tree(repo, mark.sha)
        for path in mark.records:
            entry = entries.get(path)
            if entry is None:
                return None
            if tombstones.is_tombstone_path(path):
                graves.add(path.rsplit("/", 1)[1])
                continue
            if not forget_records.is_record_path(path):
                return None
            sizes = await signatures.blob_sizes(repo, [entry.sha])
            if sizes.get(entry.sha, forget_records.MAX_RECORD_BYTES + 1) > forget_records.MAX_RECORD_BYTES:
                return None
            record = forget_records.parse((await remote.blobs(repo, [entry.sha]))[entry.sha])
            if record is None:
                return None
            records.append(record)
    return Forgets(records, frozenset(graves))


@dataclass(frozen=True)
class Offer:
    """A rewrite of this machine's history the remote offers, checked (``offered``)."""

    records: list[ForgottenTopic]
    graves: frozenset[str]
    local: str
    synced: str
    counterpart: str
    """The remote's counterpart of ``synced``."""
    by: list[str]


async def offered(
    repo: MemoryRepo,
    *,
    tip: str,
    synced: str,
    me: trust.AllowedSigner,
    remote_name: str,
) -> Offer | None:
    """The remote's history ``tip``, which no longer holds ``synced``, checked as the rewrite of this
    machine's history it says it is (see the module's doc); None when no commit of it says so (the
    caller refuses it as a rewritten history), ``SyncRefused`` when the claim fails a check."""
    local = await repo.head()
    assert local is not None
    found = await marks(repo, tip, [local, synced])
    if not found:
        return None
    named = await _records(repo, found)
    if not named:
        raise _refused(synced, "its record of the rewrite names no forget record its commit holds")
    try:
        made = await images(repo, named.records, [synced], reuse=[tip], make=False, graves=named.graves)
    except NotAScrub as exc:
        raise _refused(synced, f"it changes more than forgotten text ({exc})") from None
    counterpart = made.mapping[synced]
    if not await remote.is_ancestor(repo, counterpart, tip):
        raise _refused(synced, f"its counterpart of {synced[:12]} is not in its branch")
    by = await _trusted(
        repo,
        local=local,
        counterpart=counterpart,
        tip=tip,
        synced=synced,
        me=me,
        remote_name=remote_name,
        found=found,
    )
    return Offer(named.records, named.graves, local, synced, counterpart, by)


async def _trusted(
    repo: MemoryRepo,
    *,
    local: str,
    counterpart: str,
    tip: str,
    synced: str,
    me: trust.AllowedSigner,
    remote_name: str,
    found: Sequence[Mark],
) -> list[str]:
    """The machines that signed the records of a rewrite, once every commit of its counterpart this
    machine did not have is signed by a key it trusts now, and every later one passes
    ``trust.check_incoming``; else ``SyncRefused``."""
    log = await trust.log_of(repo, local)
    allowed = log.signers() if log is not None else []
    names = {s.fingerprint for s in allowed}
    sigs = await signatures.signatures(repo, counterpart, [local], trust.render(allowed).decode("ascii"))
    for sha, sig in sorted(sigs.items()):
        if sig.status != "G" or sig.fingerprint not in names:
            raise _refused(
                synced,
                f"commit {sha[:12]} of it is not signed by a machine this machine trusts now "
                "(unsigned, or by a key never trusted or revoked)",
            )
    try:
        checked = await trust.check_incoming(repo, tip, [local, counterpart], me, remote_name, joining=False)
    except SyncRefused as exc:
        raise _refused(synced, str(exc)) from None
    return sorted({checked.signers[m.sha] for m in found if m.sha in checked.signers})


async def adopt(repo: MemoryRepo, offer: Offer, *, branch: str, state_dir: Path) -> Adopted:
    """This machine's refs rewritten onto the remote's history ``offer`` checked (its own unsynced
    work made again on top, signed here), the old objects pruned."""
    done = await rewrite(
        repo,
        offer.records,
        state_dir=state_dir,
        synced_too=True,
        reuse=[offer.counterpart],
        leave=[remote.remote_ref(branch)],
        graves=offer.graves,
    )
    if done.skipped is not None:
        raise MemoryRepoError(f"the remote's rewritten history could not be adopted now: {done.skipped}")
    await remote.set_ref(repo, remote.synced_ref(branch), offer.counterpart)
    return Adopted(offer.counterpart, made=done.commits, reused=done.reused, by=offer.by)


@dataclass(frozen=True)
class Overtaken:
    """Another machine's rewrite that reached the remote before this machine's, checked."""

    offer: Offer
    """The other machine's rewrite (``offer.counterpart``: its counterpart of this machine's synced
    commit, with this machine's records applied too)."""
    mine: Forgets
    """This machine's own forgets, applied on top."""
    image: str
    """The remote's tip with this machine's records applied (the tip itself when they change nothing)."""
    tip: str


async def overtaken(
    repo: MemoryRepo,
    *,
    tip: str,
    waiting: Pending,
    branch: str,
    me: trust.AllowedSigner,
    remote_name: str,
) -> Overtaken | None:
    """The remote's ``tip``, which no longer holds the lease of this machine's waiting rewrite,
    checked as another machine's rewrite of the same history (see the module's doc); None when
    the lease is still there or no record of a rewrite in ``tip`` names it (``catch_up`` says why),
    ``SyncRefused`` when the claim fails a check."""
    lease = waiting.lease
    if await repo.has_commit(lease) and await remote.is_ancestor(repo, lease, tip):
        return None
    local = await repo.head()
    synced = await remote.ref_commit(repo, remote.synced_ref(branch))
    assert local is not None
    if synced is None:
        return None
    found = await marks(repo, tip, [local, synced])
    first = next((m for m in found if m.of == lease), None)
    if first is None:
        return None
    theirs = await _records(repo, found)
    mine = await _records(repo, waiting.marks)
    if not theirs or not mine:
        raise _refused(synced, "a record of the rewrite names no forget record its commit holds")
    if not await repo.has_commit(first.to) or not await remote.is_ancestor(repo, first.to, tip):
        raise _refused(synced, f"its counterpart of {lease[:12]} is not in its branch")
    both = theirs + mine
    # the remote's history without this machine's forgets too
    ahead = await images(repo, both.records, [tip], graves=both.graves)
    try:
        made = await images(
            repo, both.records, [synced], reuse=[ahead.mapping[tip]], make=False, graves=both.graves
        )
    except NotAScrub as exc:
        raise _refused(synced, f"it changes more than forgotten text ({exc})") from None
    if made.mapping.get(synced) != ahead.mapping.get(first.to):
        raise _refused(synced, f"its counterpart of {lease[:12]} differs by more than forgotten text")
    by = await _trusted(
        repo,
        local=local,
        counterpart=first.to,
        tip=tip,
        synced=synced,
        me=me,
        remote_name=remote_name,
        found=found,
    )
    offer = Offer(theirs.records, theirs.graves, local, synced, ahead.mapping[first.to], by)
    return Overtaken(offer, mine, ahead.mapping[tip], tip)


async def reapply(
    repo: MemoryRepo, over: Overtaken, *, waiting: Pending, branch: str, state_dir: Path
) -> Adopted:
    """This machine's refs rewritten onto the remote's history ``over`` checked, with this
    machine's own forget records applied to it too (its own records of the rewrite dropped, its
    unsynced work made again on top, signed here); when that changed the remote's history, a new
    record of the rewrite on top, leased on the remote's tip. The remote's branch as fetched
    (``refs/memd/remote``) becomes its image, so the old objects are pruned here."""
    done = await rewrite(
        repo,
        [*over.offer.records, *over.mine.records],
        state_dir=state_dir,
        synced_too=True,
        reuse=[over.image],
        drop=[m.sha for m in waiting.marks],
        graves=over.offer.graves | over.mine.graves,
    )
    if done.skipped is not None:
        raise MemoryRepoError(f"the remote's rewritten history could not be adopted now: {done.skipped}")
    await remote.set_ref(repo, remote.synced_ref(branch), over.offer.counterpart)
    await remote.set_ref(repo, remote.remote_ref(branch), over.image)
    if over.image != over.tip:
        head = await repo.head()
        assert head is not None
        text = message(over.tip, over.image, over.mine.paths())
        made = await crafted.commit_tree(repo, await crafted.tree_of(repo, head), [head], text)
        await crafted.move_ref(
            repo, f"refs/heads/{branch}", made, head, "memd: forget (the rewrite made again on the remote's)"
        )
    return Adopted(over.offer.counterpart, made=done.commits, reused=done.reused, by=over.offer.by)


async def catch_up(
    repo: MemoryRepo,
    *,
    tip: str,
    waiting: Pending,
    me: trust.AllowedSigner,
    remote_name: str,
    state_dir: Path,
) -> str:
    """This machine's rewrite waits while the remote moved on from its lease to ``tip`` (fetched):
    the commits other machines pushed on the old history, checked, then rewritten here too with the
    forget records the rewrite named (so the other machines find it as they check it); the
    counterpart of ``tip`` (what to merge; the push leases ``tip``)."""
    lease = waiting.lease
    if not await repo.has_commit(lease) or not await remote.is_ancestor(repo, lease, tip):
        raise SyncRefused(
            f"the remote no longer holds {lease[:12]}, the commit this machine's rewrite (a forget) "
            "replaces: another machine rewound or rewrote it meanwhile; this machine's rewrite waits and "
            "nothing is pushed over the remote's branch"
        )
    head = await repo.head()
    assert head is not None
    await trust.check_incoming(repo, tip, [lease, head], me, remote_name, joining=False)
    named = await _records(repo, waiting.marks)  # what the records of the rewrite name: no more
    if not named:
        raise MemoryRepoError("this machine's record of its rewrite names no forget record it holds")
    done = await rewrite(
        repo, named.records, state_dir=state_dir, synced_too=True, reuse=[head], graves=named.graves
    )
    if done.skipped is not None:
        raise MemoryRepoError(f"the commits pushed meanwhile could not be rewritten now: {done.skipped}")
    return done.mapping.get(tip, tip)
