"""Only your machines write your memory: who may sign the memory repository's commits, and the check
of every commit a remote brings.

**Who may sign travels with the memory**, as the trust log (``pipeline.sync.trustlog``: append-only
entries under ``trust/log/``, the allowed signers derived from them, ``trust/allowed_signers`` only
the derived file; one line per machine: ``memd-<machine id>@<host> namespaces="git" <key type>
<key>``). Every commit memd makes is SSH-signed with its machine's key (``pipeline.gitrepo.signing``).

**The rule** (``history_findings``, ``log_findings``): the commits the remote brings are walked parents
first; each must carry a good signature by a key the logs of its parents allow (its parents are this
machine's own commits, or incoming ones checked before it), keep every entry of its parents' logs,
and add only entries written by the key signing it. A change of trust is so only accepted when a
machine already trusted signed it, and none may empty the signers; a commit that builds on history
without allowed signers is refused. A commit signed by a revoked key is refused unless it is a proper
ancestor of every commit that revoked the key (or that key's own rotation commit: ``_rotations``);
a key this machine's own history revokes signs nothing new at all, whatever parent it claims.

**The trust root** (``check_incoming``): the first machine of an empty remote trusts itself (it writes
its own line, signed, before its first push: ``pipeline.sync.run``). A machine joining a non-empty
remote takes the remote's history up to the commit that added its own key to the allowed signers
(another machine ran `memd sync trust`: trust on pairing), and checks that commit and every later
one by the rule above; until its key is there it keeps its work local and says which command to
run where (``NotTrusted``). Its own history from before it joined never travels: its first merge
is one signed commit on top of the remote's (``pipeline.sync.run``).

**Tombstones** come only with accepted commits; each is attributed to the machine that signed the
commit adding it, and one sync accepts at most ``MAX_TOMBSTONES_PER_SYNC`` new ones (more: the
sync is refused with the reason). A tombstone removes only what its signer may remove: it forgets
extracts on this machine only for sessions whose text the signer could read (a
``rollout_summaries/`` file of the memory the remote and this machine shared, or the remote's):
``forgettable``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import BadSignerLine, MemoryRepoError, NotTrusted, SyncRefused
from pipeline.gitrepo import remote, signatures
from pipeline.gitrepo.repository import MemoryRepo, scratch_parent
from pipeline.gitrepo.signing import Signer
from pipeline.layout import ROLLOUT_DIR
from pipeline.memory import tombstones
from pipeline.memory.inputs import summary_session
from pipeline.sync import trustlog
from pipeline.sync.signers import (
    MAX_TRUST_FILE_BYTES,
    TRUST_DIR,
    TRUST_FILE,
    AllowedSigner,
    parse_file,
    parse_line,
    render,
)
from pipeline.sync.trustlog import Log

__all__ = [
    "TRUST_DIR",
    "TRUST_FILE",
    "AllowedSigner",
    "parse_file",
    "parse_line",
    "render",
]

MAX_TOMBSTONES_PER_SYNC = 2_000
"""The most new tombstones one sync accepts (a forget of a whole busy project, a month of sessions,
stays under it; a forger's hundred thousand do not)."""
MAX_CHECKED_COMMITS = 10_000
"""The most new commits one sync checks; a remote that brings more is refused."""
MAX_FINDINGS = 20
_STATUS = {
    "N": "is not signed",
    "U": "is signed by a key no trusted machine has",
    "B": "has a bad signature",
    "E": "has a signature that cannot be checked",
    "X": "has an expired signature",
    "Y": "is signed by an expired key",
    "R": "is signed by a revoked key",
}


def own_signer(signer: Signer) -> AllowedSigner:
    key_type, key = signer.public_key().split(" ", 1)
    return AllowedSigner(signer.principal(), key_type, key)


def own_line(signer: Signer) -> str:
    """This machine's allowed-signers line (what `memd sync key` prints)."""
    return own_signer(signer).line()


def not_trusted(line: str, remote: str) -> NotTrusted:
    return NotTrusted(
        f"this machine is not trusted by {remote} yet: its work stays local (nothing is pushed or "
        f"merged). Run `memd sync trust '{line}'` on a machine that already syncs with {remote}, "
        "then `memd sync` here"
    )


# ------------------------------------------------------------------------------------------ the rule


@dataclass
class Checked:
    """What ``check_incoming`` accepted."""

    signers: dict[str, str] = field(default_factory=dict)
    """Incoming commit -> the principal that signed it."""
    tip_signers: list[AllowedSigner] = field(default_factory=list)
    vouched: set[str] = field(default_factory=set)
    """Commits a joining machine took on the pairing's word (the remote's history before it)."""


def history_findings(
    commits: Sequence[signatures.Incoming],
    sigs: Mapping[str, signatures.Signature],
    trust: Mapping[str, list[AllowedSigner] | None],
    vouched: frozenset[str] | set[str] = frozenset(),
) -> tuple[list[str], dict[str, str]]:
    """Why the incoming ``commits`` (parents first) are refused (empty: accepted), and who signed
    each. ``trust``: each commit's (and each parent's) allowed signers, None for no file;
    ``vouched``: commits taken without a check (a joining machine's pairing vouched for them)."""
    names: dict[str, str] = {}
    for found in trust.values():
        for s in found or ():
            names.setdefault(s.fingerprint, s.principal)
    out: list[str] = []
    signed: dict[str, str] = {}
    for commit in commits:
        if commit.sha in vouched:
            continue
        short = commit.sha[:12]
        had = [found for p in commit.parents if (found := trust.get(p))]
        if not had:
            out.append(f"commit {short} builds on history without allowed signers ({TRUST_FILE})")
            continue
        allowed = {s.fingerprint for found in had for s in found}
        if not trust.get(commit.sha):
            out.append(f"commit {short} removes the allowed signers ({TRUST_FILE})")
            continue
        sig = sigs.get(commit.sha, signatures.Signature("N", ""))
        if sig.status != "G":
            out.append(f"commit {short} {_STATUS.get(sig.status, f'has signature status {sig.status}')}")
        elif sig.fingerprint not in allowed:
            who = names.get(sig.fingerprint, sig.fingerprint)
            out.append(f"commit {short} is signed by {who}, which was not allowed to sign there")
        else:
            signed[commit.sha] = names.get(sig.fingerprint, sig.fingerprint)
    return out, signed


async def logs_at(repo: MemoryRepo, commits: Sequence[str]) -> dict[str, Log | None]:
    """The trust log of each of ``commits`` (``trustlog.read_log``: its ``trust/log/`` entries, or a
    legacy ``trust/allowed_signers``; None with neither). ``BadSignerLine`` for an entry memd did not
    write, ``MemoryRepoError`` for a log over its caps."""
    folders = await signatures.folder_trees(repo, commits, trustlog.LOG_DIR)
    listed: dict[str, dict[str, tuple[str, str]]] = {}
    for folder in sorted({t for t in folders.values() if t is not None}):
        listed[folder] = await signatures.tree_files(repo, folder, trustlog.MAX_ENTRIES)
    sizes = await signatures.blob_sizes(
        repo, [sha for found in listed.values() for _m, sha in found.values()]
    )
    if any(size > trustlog.MAX_ENTRY_BYTES for size in sizes.values()):
        raise BadSignerLine(f"a trust log entry is over {trustlog.MAX_ENTRY_BYTES} bytes")
    contents = await remote.blobs(repo, sorted(sizes))
    legacy_wanted = [sha for sha, tree in folders.items() if tree is None]
    legacy = await signatures.files_at(repo, legacy_wanted, TRUST_FILE, MAX_TRUST_FILE_BYTES)
    parsed: dict[str, Log | None] = {}
    for sha, tree in folders.items():
        if tree is None:
            parsed[sha] = trustlog.read_log({}, legacy.get(sha))
            continue
        files = {f"{trustlog.LOG_DIR}/{name}": contents[blob] for name, (_mode, blob) in listed[tree].items()}
        for name, (mode, _blob) in listed[tree].items():
            if mode not in ("100644", "100755") or not trustlog.is_log_path(f"{trustlog.LOG_DIR}/{name}"):
                raise BadSignerLine(f"{trustlog.LOG_DIR}/{name[:60]} is not a trust log entry")
        parsed[sha] = trustlog.read_log(files, None)
    return parsed


def log_findings(
    commits: Sequence[signatures.Incoming],
    logs: Mapping[str, Log | None],
    sigs: Mapping[str, signatures.Signature],
    known_revoked: Mapping[str, str],
    rotations: set[str],
    vouched: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """Why the incoming ``commits`` (parents first) are refused by the trust log's rules (empty: they
    pass): a commit never drops an entry of its parents' logs, and every entry it adds was written by
    the key that signed it; and a commit signed by a revoked key is refused unless it was in the
    history of every commit that revoked the key, before it (a proper ancestor of each; or, for a
    machine that rotated its key, the rotation commit itself: ``rotations``). ``known_revoked``: the
    keys this machine's own history revokes (fingerprint -> principal): none of their commits can
    have been in it before, so every incoming one is refused."""
    out: list[str] = []
    parents = {c.sha: c.parents for c in commits}
    adders: dict[str, list[str]] = {}
    names: dict[str, str] = dict(known_revoked)
    for c in commits:
        if c.sha in vouched:
            continue
        mine = logs.get(c.sha)
        had: set[str] = set()
        for p in c.parents:
            theirs = logs.get(p)
            had |= set(theirs.entries) if theirs is not None else set()
            if gone := trustlog.dropped(theirs, mine):
                out.append(f"commit {c.sha[:12]} drops {len(gone)} entry(ies) of the trust log")
        sig = sigs.get(c.sha)
        for name, entry in (mine.entries if mine is not None else {}).items():
            if name in had:
                continue
            if sig is None or entry.by != sig.fingerprint:
                out.append(
                    f"commit {c.sha[:12]} adds a trust log entry ({entry.action} {entry.principal}) "
                    "that the key signing it did not write"
                )
            if entry.action == trustlog.REVOKE:
                adders.setdefault(entry.fingerprint, []).append(c.sha)
                names.setdefault(entry.fingerprint, entry.principal)
    for c in commits:
        sig = sigs.get(c.sha)
        if c.sha in vouched or sig is None or sig.status != "G" or sig.fingerprint not in names:
            continue
        fp = sig.fingerprint
        if fp in known_revoked:
            accepted = False
        else:
            accepted = all(
                c.sha in _ancestors(a, parents) or (a == c.sha and a in rotations) for a in adders[fp]
            )
        if not accepted:
            out.append(
                f"commit {c.sha[:12]} is signed by {names[fp]} ({fp}), whose key was revoked: a revoked "
                "key's commits are accepted only when they were in the history before its revocation"
            )
    return out


def _ancestors(sha: str, parents: Mapping[str, tuple[str, ...]]) -> set[str]:
    """The proper ancestors of ``sha`` among the incoming commits (``parents``)."""
    seen: set[str] = set()
    todo = list(parents.get(sha, ()))
    while todo:
        cur = todo.pop()
        if cur in seen or cur not in parents:
            continue
        seen.add(cur)
        todo.extend(parents[cur])
    return seen


async def _rotations(
    repo: MemoryRepo,
    commits: Sequence[signatures.Incoming],
    logs: Mapping[str, Log | None],
    sigs: Mapping[str, signatures.Signature],
) -> set[str]:
    """The incoming commits that are a machine's rotation of its own key (`memd sync rotate`): signed
    by the key they revoke, on one parent, adding only the revocation and one trust entry by that
    key, and changing nothing outside ``trust/``."""
    out: set[str] = set()
    for c in commits:
        sig, mine = sigs.get(c.sha), logs.get(c.sha)
        if sig is None or sig.status != "G" or mine is None or len(c.parents) != 1:
            continue
        before = logs.get(c.parents[0])
        added = [e for n, e in mine.entries.items() if before is None or n not in before.entries]
        revokes = [e for e in added if e.action == trustlog.REVOKE]
        if len(revokes) != 1 or revokes[0].fingerprint != sig.fingerprint or len(added) > 2:
            continue
        changed = await signatures.changed_paths(repo, c.parents[0], c.sha)
        if all(path.startswith(f"{TRUST_DIR}/") for path in changed):
            out.add(c.sha)
    return out


async def check_incoming(
    repo: MemoryRepo, tip: str, known: Sequence[str], me: AllowedSigner, remote: str, *, joining: bool
) -> Checked:
    """Check every commit ``tip`` brings that none of ``known`` (this machine's head first) has:
    ``SyncRefused`` with the reasons,
    ``NotTrusted`` when the remote's allowed signers do not name this machine's key (``joining``: the
    remote and this machine share no commit yet, so that is asked first)."""
    if await signatures.count(repo, tip, known) > MAX_CHECKED_COMMITS:
        raise SyncRefused(
            f"the remote brings more than {MAX_CHECKED_COMMITS} new commits: memd checks at most that many "
            "in one sync, and merges none of them"
        )
    commits = await signatures.incoming(repo, tip, known)
    revs = {tip} | {c.sha for c in commits} | {p for c in commits for p in c.parents} | set(known)
    try:
        logs = await logs_at(repo, sorted(revs))
    except (MemoryRepoError, BadSignerLine) as exc:
        raise SyncRefused(_refusal([f"the trust log: {exc}"])) from None
    trust: dict[str, list[AllowedSigner] | None] = {
        sha: (log.signers() if log is not None else None) for sha, log in logs.items()
    }
    tip_signers = trust.get(tip) or []
    trusted = me.key in {s.key for s in tip_signers}
    if joining and not trusted:
        raise not_trusted(me.line(), remote)
    vouched: set[str] = set()
    if joining:  # trust on pairing: the history up to the commit that added this machine
        added = next((c.sha for c in commits if me.key in {s.key for s in trust.get(c.sha) or ()}), tip)
        vouched = {c.sha for c in await signatures.incoming(repo, added, known)} - {added}
    every = {e.key: e for log in logs.values() if log is not None for e in log.entries.values() if e.key}
    signer_file = render(parse_line(f"{e.principal} {e.key}") for e in every.values()).decode("ascii")
    sigs = await signatures.signatures(repo, tip, known, signer_file)
    problems, signed = history_findings(commits, sigs, trust, vouched)
    known_revoked: dict[str, str] = {}
    for sha in known:
        log = logs.get(sha)
        known_revoked.update(log.revoked if log is not None else {})
    rotations = await _rotations(repo, commits, logs, sigs)
    problems += log_findings(commits, logs, sigs, known_revoked, rotations, vouched)
    if problems:
        raise SyncRefused(_refusal(problems))
    if not trusted:
        raise not_trusted(me.line(), remote)
    return Checked(signers=signed, tip_signers=list(tip_signers), vouched=vouched)


def _refusal(findings: list[str]) -> str:
    shown = "; ".join(findings[:5]) + (f" and {len(findings) - 5} more" if len(findings) > 5 else "")
    return (
        "the remote carries commits no trusted machine wrote, nothing of them is merged or published: "
        + shown
    )


# ------------------------------------------------------------------------------------------ tombstones


@dataclass
class Tombstones:
    findings: list[str]
    writers: dict[str, int]
    """How many of the new tombstones each machine wrote (the signer of the commit adding it)."""


async def check_tombstones(
    repo: MemoryRepo,
    tip: str,
    known: Sequence[str],
    checked: Checked,
    ours: Iterable[str],
    theirs: Iterable[str],
) -> Tombstones:
    """The cap on the new tombstones (``ours`` and ``theirs``: the paths of this machine's tree and
    the remote's), and who wrote them. A joining machine counts none of those the history the
    pairing vouched for carries (the remote's forgets from before it joined)."""
    new = tombstones.hashes_in(dict.fromkeys(theirs)) - tombstones.hashes_in(dict.fromkeys(ours))
    found = await signatures.added(repo, tip, known, tombstones.TOMBSTONE_DIR)
    writers: dict[str, int] = {}
    for path, commit in found.items():
        grave = path.rsplit("/", 1)[-1]
        if not tombstones.is_tombstone_path(path) or grave not in new:
            continue
        if commit in checked.vouched:
            new.discard(grave)
            continue
        who = checked.signers.get(commit, "a commit this machine had")
        writers[who] = writers.get(who, 0) + 1
    counted = len(new)  # a tombstone only a merge commit brings counts too
    findings = []
    if counted > MAX_TOMBSTONES_PER_SYNC:
        findings.append(
            f"the remote brings {counted} new tombstones, over the cap of {MAX_TOMBSTONES_PER_SYNC} one "
            "sync accepts: nothing is withdrawn or forgotten"
        )
    return Tombstones(findings, writers)


def forgettable(*trees: Mapping[str, bytes]) -> set[str]:
    """The hashes of the sessions whose text is in one of ``trees`` (a ``rollout_summaries/`` file):
    what a tombstone from another machine may make this machine forget."""
    out: set[str] = set()
    for files in trees:
        for path, data in files.items():
            if f"/{ROLLOUT_DIR}/" in path:
                session = summary_session(data.decode("utf-8", "replace"))
                if session is not None:
                    out.add(tombstones.session_hash(session))
    return out


# ------------------------------------------------------------------------------------------ writing


async def add_signers(
    repo: MemoryRepo, state_dir: Path, new: Sequence[AllowedSigner], message: str, *, at: str
) -> str | None:
    """Trust ``new`` in the memory repository's branch: their entries added to the trust log in one
    signed commit (None: they were all trusted already); returns the new head. ``BadSignerLine`` for
    a key that was revoked (a revoked key stays revoked: that machine makes a new one)."""
    await repo.ensure()
    head = await repo.head()
    assert head is not None
    log = (await logs_at(repo, [head]))[head]
    revoked = log.revoked if log is not None else {}
    for signer in new:
        if signer.fingerprint in revoked:
            raise BadSignerLine(
                f"the key of {signer.principal} ({signer.fingerprint}) was revoked and stays revoked: "
                "run `memd sync rotate` on that machine for a new key, then trust its new line"
            )
    keys = {s.key for s in (log.signers() if log is not None else [])}
    by = _writer(repo)
    wanted = [trustlog.trusted(s, by=by, at=at) for s in new if s.key not in keys]
    if not wanted:
        return None
    return await write_entries(repo, state_dir, wanted, message)


def _writer(repo: MemoryRepo) -> str:
    if repo.signer is None:
        raise MemoryRepoError("the memory repository has no signing key")
    return own_signer(repo.signer).fingerprint


async def write_entries(
    repo: MemoryRepo, state_dir: Path, entries: Sequence[trustlog.Entry], message: str
) -> str:
    """One signed commit adding ``entries`` to the trust log of the branch (and writing the log out
    where the branch had only a legacy allowed-signers file, and the allowed signers derived from
    it); returns the new head."""
    await repo.ensure()
    head = await repo.head()
    assert head is not None
    log = trustlog.union(
        (await logs_at(repo, [head]))[head], trustlog.Log({e.name: e for e in entries}, True)
    )
    assert log is not None
    files = trustlog.tree_files(log)
    if not log.signers():
        raise BadSignerLine("no machine would be left to sign the memory: memd keeps at least one")
    async with repo.scratch(scratch_parent(state_dir, "trust"), owner="trust") as clone:
        for path, data in files.items():
            await asyncio.to_thread(_write, clone.path / path, data)
        await clone.stage_paths(TRUST_DIR)
        await clone.commit_staged(message)
        return await repo.land(clone, base=head)


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if target.is_symlink():
        target.unlink()
    target.write_bytes(data)


async def log_of(repo: MemoryRepo, commit: str | None) -> Log | None:
    """The trust log of ``commit`` (None: none, or no commit)."""
    if commit is None:
        return None
    return (await logs_at(repo, [commit]))[commit]


async def signers_at(repo: MemoryRepo, commit: str | None) -> list[AllowedSigner]:
    """The allowed signers of ``commit`` (none without one): derived from its trust log."""
    log = await log_of(repo, commit)
    return log.signers() if log is not None else []


def merged_files(ours: Log | None, theirs: Log | None) -> dict[str, bytes]:
    """The ``trust/`` files of a merge: every entry of both logs, and the signers derived from them
    (never the two allowed-signers files merged as text)."""
    log = trustlog.union(ours, theirs)
    return trustlog.tree_files(log) if log is not None else {}


def tree_log(files: Mapping[str, bytes]) -> Log | None:
    """The trust log of a tree read as data (``path -> bytes``)."""
    return trustlog.read_log(files, files.get(TRUST_FILE))


def revoked_lines(log: Log | None) -> list[str]:
    """``<principal> (<fingerprint>)`` of each key ``log`` revokes."""
    return sorted(f"{who} ({fp})" for fp, who in (log.revoked if log is not None else {}).items())
