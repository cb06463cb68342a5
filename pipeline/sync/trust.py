"""Only your machines write your memory: who may sign the memory repository's commits, and the check
of every commit a remote brings.

**The allowed signers travel with the memory**, in ``trust/allowed_signers`` (git's allowed-signers
format, one line per machine: ``memd-<machine id>@<host> namespaces="git" <key type> <key>``). Every
commit memd makes is SSH-signed with its machine's key (``pipeline.memory.signing``).

**The rule** (``history_findings``): the commits the remote brings are walked parents first; each must
carry a good signature by a key the allowed signers of its parents' trees name (its parents are this
machine's own commits, or incoming ones checked before it). A change to the allowed signers is so
only accepted when a machine already trusted signed it, and none may empty them; a commit that
builds on history without allowed signers is refused.

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
import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import BadSignerLine, MemoryRepoError, NotTrusted, SyncRefused
from pipeline.memory import signatures, tombstones
from pipeline.memory.inputs import summary_session
from pipeline.memory.layout import ROLLOUT_DIR
from pipeline.memory.repository import MemoryRepo, scratch_parent
from pipeline.memory.signing import Signer

TRUST_DIR = "trust"
TRUST_FILE = f"{TRUST_DIR}/allowed_signers"
MAX_TRUST_FILE_BYTES = 64 * 1024
MAX_SIGNERS = 200
MAX_TOMBSTONES_PER_SYNC = 2_000
"""The most new tombstones one sync accepts (a forget of a whole busy project, a month of sessions,
stays under it; a forger's hundred thousand do not)."""
MAX_CHECKED_COMMITS = 10_000
"""The most new commits one sync checks; a remote that brings more is refused."""
MAX_FINDINGS = 20
NAMESPACES = 'namespaces="git"'
KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "ssh-rsa",
    }
)
_PRINCIPAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
_STATUS = {
    "N": "is not signed",
    "U": "is signed by a key no trusted machine has",
    "B": "has a bad signature",
    "E": "has a signature that cannot be checked",
    "X": "has an expired signature",
    "Y": "is signed by an expired key",
    "R": "is signed by a revoked key",
}


@dataclass(frozen=True)
class AllowedSigner:
    principal: str
    key_type: str
    key: str

    def line(self) -> str:
        return f"{self.principal} {NAMESPACES} {self.key_type} {self.key}"

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256(base64.b64decode(self.key)).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def parse_line(line: str) -> AllowedSigner:
    """One allowed-signers line memd accepts: ``<principal> [namespaces="git"] <type> <base64>``."""
    words = line.strip().split()
    if len(words) == 4 and words[1] == NAMESPACES:
        words = [words[0], words[2], words[3]]
    if len(words) != 3:
        raise BadSignerLine(
            f"not one allowed-signers line: expected '<principal> <key type> <key>' (as `memd sync key` "
            f"prints it), got {len(line.split())} words"
        )
    principal, key_type, key = words
    if not _PRINCIPAL.match(principal):
        raise BadSignerLine(
            f"not a principal memd accepts: {principal[:60]!r} (letters, digits and ._@+- only, no wildcard)"
        )
    if key_type not in KEY_TYPES:
        raise BadSignerLine(f"not an ed25519, ecdsa or rsa public key: {key_type[:40]!r}")
    try:
        blob = base64.b64decode(key, validate=True)
        (size,) = struct.unpack(">I", blob[:4])
        named = blob[4 : 4 + size].decode("ascii")
    except (binascii.Error, struct.error, UnicodeDecodeError, ValueError):
        raise BadSignerLine("the key is not valid base64 of an SSH public key") from None
    if named != key_type or len(blob) > 4096:
        raise BadSignerLine(f"the key is not a {key_type} public key")
    return AllowedSigner(principal, key_type, key)


def parse_file(data: bytes | None) -> list[AllowedSigner]:
    """The signers of an allowed-signers file (none when there is no file); ``BadSignerLine`` for
    a file memd did not write."""
    if data is None:
        return []
    if len(data) > MAX_TRUST_FILE_BYTES:
        raise BadSignerLine(f"{TRUST_FILE} is {len(data)} bytes, over the cap of {MAX_TRUST_FILE_BYTES}")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise BadSignerLine(f"{TRUST_FILE} is not plain ASCII") from None
    found = [parse_line(line) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if len(found) > MAX_SIGNERS:
        raise BadSignerLine(f"{TRUST_FILE} names {len(found)} keys, over the cap of {MAX_SIGNERS}")
    return found


def render(signers: Iterable[AllowedSigner]) -> bytes:
    """The file for ``signers`` (one line per key, the first principal of a key kept)."""
    seen: dict[str, AllowedSigner] = {}
    for signer in signers:
        seen.setdefault(signer.key, signer)
    return "".join(s.line() + "\n" for s in seen.values()).encode("ascii")


def merged_file(ours: bytes | None, theirs: bytes | None) -> bytes | None:
    """The allowed signers after a merge: both sides' (each accepted by now)."""
    if ours is None and theirs is None:
        return None
    return render([*parse_file(ours), *parse_file(theirs)])


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


def _signer_file(trust: Mapping[str, list[AllowedSigner] | None]) -> str:
    every = [s for found in trust.values() for s in found or ()]
    return render(every).decode("ascii")


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
    revs = {tip} | {c.sha for c in commits} | {p for c in commits for p in c.parents}
    try:
        raw = await signatures.files_at(repo, sorted(revs), TRUST_FILE, MAX_TRUST_FILE_BYTES)
    except MemoryRepoError as exc:
        raise SyncRefused(f"the remote's commits fail memd's checks: {exc}") from None
    trust: dict[str, list[AllowedSigner] | None] = {}
    bad: list[str] = []
    for sha, data in raw.items():
        try:
            trust[sha] = parse_file(data) if data is not None else None
        except BadSignerLine as exc:
            bad.append(f"commit {sha[:12]}: {exc}")
            trust[sha] = []
    if bad:
        raise SyncRefused(_refusal(bad))
    tip_signers = trust.get(tip) or []
    trusted = me.key in {s.key for s in tip_signers}
    if joining and not trusted:
        raise not_trusted(me.line(), remote)
    vouched: set[str] = set()
    if joining:  # trust on pairing: the history up to the commit that added this machine
        added = next((c.sha for c in commits if me.key in {s.key for s in trust.get(c.sha) or ()}), tip)
        vouched = {c.sha for c in await signatures.incoming(repo, added, known)} - {added}
    sigs = await signatures.signatures(repo, tip, known, _signer_file(trust))
    problems, signed = history_findings(commits, sigs, trust, vouched)
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
    repo: MemoryRepo, state_dir: Path, new: Sequence[AllowedSigner], message: str
) -> str | None:
    """Add ``new`` to the allowed signers of the memory repository's branch in one signed commit
    (None: they were all there already); returns the new head."""
    await repo.ensure()
    head = await repo.head()
    assert head is not None
    current = (await signatures.files_at(repo, [head], TRUST_FILE, MAX_TRUST_FILE_BYTES)).get(head)
    signers = parse_file(current)
    keys = {s.key for s in signers}
    wanted = [s for s in new if s.key not in keys]
    if not wanted:
        return None
    async with repo.scratch(scratch_parent(state_dir, "trust"), owner="trust") as clone:
        target = clone.path / TRUST_FILE
        await asyncio.to_thread(_write, target, render([*signers, *wanted]))
        await clone.stage_paths(TRUST_DIR)
        await clone.commit_staged(message)
        return await repo.land(clone, base=head)


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if target.is_symlink():
        target.unlink()
    target.write_bytes(data)


async def signers_at(repo: MemoryRepo, commit: str | None) -> list[AllowedSigner]:
    """The allowed signers of ``commit`` (none without one)."""
    if commit is None:
        return []
    found = await signatures.files_at(repo, [commit], TRUST_FILE, MAX_TRUST_FILE_BYTES)
    return parse_file(found.get(commit))
