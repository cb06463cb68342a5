"""Pairing a machine with the memory's remote: `memd sync key` (this machine's allowed-signers line)
and `memd sync trust LINE` (run on a machine already trusted: the line is checked, added to the
trust log in a signed commit, and pushed); and removing one: `memd sync revoke LINE|FINGERPRINT`
(its key revoked for good) and `memd sync rotate` (a new key for this machine, the old one revoked in
the same commit). The rules are ``pipeline.sync.trust``, the log ``pipeline.sync.trustlog``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pipeline.errors import BadSignerLine, MemoryRepoError, NotTrusted
from pipeline.gitrepo import signing
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.gitrepo.signing import Signer
from pipeline.sync import trust, trustlog
from pipeline.vocabulary import SyncOutcome

if TYPE_CHECKING:
    # `memd sync key` needs none of these: the store, the sync and its consolidation are imported by
    # the functions that sync (``_sync``), not by the one that prints a key
    from pipeline.clock import Clock
    from pipeline.gitrepo.message_gate import SecretFinder
    from pipeline.settings import Settings
    from pipeline.store import Store
    from pipeline.sync.now import ModelSource
    from pipeline.sync.run import SyncReport


def _signer(repo: MemoryRepo) -> Signer:
    if repo.signer is None:
        raise MemoryRepoError("the memory repository has no signing key")
    return repo.signer


async def _sync(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    finder: SecretFinder | None,
    model: ModelSource | None,
) -> SyncReport:
    from pipeline.sync.now import sync_memory

    return await sync_memory(store, settings, repo, clock, finder, model=model)


async def key_line(repo: MemoryRepo) -> str:
    """This machine's allowed-signers line (its key made at the first ask)."""
    return await asyncio.to_thread(trust.own_line, _signer(repo))


async def trust_line(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    finder: SecretFinder | None,
    line: str,
    *,
    model: ModelSource | None = None,
) -> SyncReport:
    """Add the machine of ``line`` to the allowed signers and push it. ``BadSignerLine`` for a line
    memd does not accept; ``NotTrusted`` when this machine is not trusted itself; ``MemoryRepoError``
    when the remote cannot be synced with first."""
    new = trust.parse_line(line)
    me = await asyncio.to_thread(trust.own_signer, _signer(repo))
    first = await _sync(store, settings, repo, clock, finder, model)
    if first.untrusted:
        raise NotTrusted(first.reason or "this machine is not trusted by the remote")
    if first.outcome != SyncOutcome.SYNCED:
        raise MemoryRepoError(f"memd adds a machine once it synced with the remote: {first.reason}")
    head = await repo.head()
    signers = await trust.signers_at(repo, head)
    if me.key not in {s.key for s in signers}:
        raise NotTrusted("this machine is not among the memory's allowed signers itself")
    message = f"memd: trust {new.principal}\n\nAdded by {me.principal} (memd sync trust).\n"
    await trust.add_signers(repo, settings.paths.state_dir, [new], message, at=clock.now().isoformat())
    return await _sync(store, settings, repo, clock, finder, model)


async def _synced_and_trusted(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    finder: SecretFinder | None,
    model: ModelSource | None,
    what: str,
) -> trust.AllowedSigner:
    """This machine's signer, once it synced with the remote (or has none) and is trusted."""
    me = await asyncio.to_thread(trust.own_signer, _signer(repo))
    if settings.sync.enabled:
        first = await _sync(store, settings, repo, clock, finder, model)
        if first.untrusted:
            raise NotTrusted(first.reason or "this machine is not trusted by the remote")
        if first.outcome != SyncOutcome.SYNCED:
            raise MemoryRepoError(f"memd {what} once it synced with the remote: {first.reason}")
    if me.key not in {s.key for s in await trust.signers_at(repo, await repo.head())}:
        raise NotTrusted("this machine is not among the memory's allowed signers itself")
    return me


def find_signer(signers: list[trust.AllowedSigner], target: str) -> trust.AllowedSigner:
    """The allowed signer ``target`` names: its `memd sync key` line, its ``SHA256:`` fingerprint or
    its principal. ``BadSignerLine`` when none (or more than one) is."""
    target = target.strip()
    if target.startswith("SHA256:"):
        found = [s for s in signers if s.fingerprint == target]
    elif len(target.split()) >= 3:
        key = trust.parse_line(target).key
        found = [s for s in signers if s.key == key]
    else:
        found = [s for s in signers if s.principal == target]
    if len(found) != 1:
        known = ", ".join(f"{s.principal} ({s.fingerprint})" for s in signers)
        what = "no" if not found else "more than one"
        raise BadSignerLine(f"{what} trusted machine is {target[:80]!r}; the trusted ones: {known}")
    return found[0]


async def revoke(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    finder: SecretFinder | None,
    target: str,
    *,
    model: ModelSource | None = None,
) -> tuple[trust.AllowedSigner, SyncReport | None]:
    """Revoke the key of the trusted machine ``target`` (``find_signer``) for good: a revoke entry in
    the trust log, in a signed commit, then pushed. Its commits from before are kept; any later one,
    whatever history it claims, is refused on every machine. ``BadSignerLine`` for no such machine
    or this machine's own key (`memd sync rotate` replaces it); ``NotTrusted`` when this machine is
    not trusted itself."""
    me = await _synced_and_trusted(store, settings, repo, clock, finder, model, "revokes a key")
    gone = find_signer(await trust.signers_at(repo, await repo.head()), target)
    if gone.key == me.key:
        raise BadSignerLine("that is this machine's own key: `memd sync rotate` replaces it with a new one")
    entry = trustlog.revoked(gone.principal, gone.fingerprint, by=me.fingerprint, at=clock.now().isoformat())
    message = f"memd: revoke {gone.principal} ({gone.fingerprint})\n\nRevoked by {me.principal} (memd sync revoke).\n"
    await trust.write_entries(repo, settings.paths.state_dir, [entry], message)
    if not settings.sync.enabled:
        return gone, None
    return gone, await _sync(store, settings, repo, clock, finder, model)


async def rotate(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    finder: SecretFinder | None,
    *,
    model: ModelSource | None = None,
) -> tuple[trust.AllowedSigner, trust.AllowedSigner, SyncReport | None]:
    """A new signing key for this machine: one commit, signed with the old key, trusts the new key
    and revokes the old one (nothing else changes in it, so every machine accepts it as a rotation);
    then the new key replaces the old one on disk and the commit is pushed. (old, new)."""
    if store.shared:  # what team mode pushes is a commit made for the remote, signed with the new key
        raise MemoryRepoError(
            "memd sync rotate is not available in team mode: run `memd sync revoke` with this machine's "
            "line on another trusted machine, remove this machine's signing-key and signing-key.pub from "
            "its state directory, and pair the new key (`memd sync key` here, `memd sync trust` there)"
        )
    old = await _synced_and_trusted(store, settings, repo, clock, finder, model, "rotates its key")
    state_dir = settings.paths.state_dir
    fresh = await asyncio.to_thread(signing.new_key, state_dir)
    try:
        key_type, key = (await asyncio.to_thread(signing.read_public_key, fresh)).split(" ", 1)
        new = trust.AllowedSigner(old.principal, key_type, key)
        at = clock.now().isoformat()
        entries = [
            trustlog.trusted(new, by=old.fingerprint, at=at),
            trustlog.revoked(old.principal, old.fingerprint, by=old.fingerprint, at=at),
        ]
        message = (
            f"memd: rotate the key of {old.principal}\n\n{old.fingerprint} is revoked, {new.fingerprint} "
            "takes its place (memd sync rotate).\n"
        )
        await trust.write_entries(repo, state_dir, entries, message)
        await asyncio.to_thread(signing.install_key, state_dir, fresh)
    finally:
        await asyncio.to_thread(signing.discard_key, fresh)
    if not settings.sync.enabled:
        return old, new, None
    return old, new, await _sync(store, settings, repo, clock, finder, model)
