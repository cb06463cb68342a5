"""Pairing a machine with the memory's remote: `memd sync key` (this machine's allowed-signers line)
and `memd sync trust LINE` (run on a machine already trusted: the line is checked, added to
``trust/allowed_signers`` in a signed commit, and pushed). The rules are ``pipeline.sync.trust``."""

from __future__ import annotations

import asyncio

from pipeline.clock import Clock
from pipeline.errors import MemoryRepoError, NotTrusted
from pipeline.memory.repository import MemoryRepo
from pipeline.memory.signing import Signer
from pipeline.memory.validate import SecretFinder
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.sync import trust
from pipeline.sync.now import ModelSource, sync_memory
from pipeline.sync.run import SyncReport
from pipeline.vocabulary import SyncOutcome


def _signer(repo: MemoryRepo) -> Signer:
    if repo.signer is None:
        raise MemoryRepoError("the memory repository has no signing key")
    return repo.signer


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
    first = await sync_memory(store, settings, repo, clock, finder, model=model)
    if first.untrusted:
        raise NotTrusted(first.reason or "this machine is not trusted by the remote")
    if first.outcome != SyncOutcome.SYNCED:
        raise MemoryRepoError(f"memd adds a machine once it synced with the remote: {first.reason}")
    head = await repo.head()
    signers = await trust.signers_at(repo, head)
    if me.key not in {s.key for s in signers}:
        raise NotTrusted("this machine is not among the memory's allowed signers itself")
    message = f"memd: trust {new.principal}\n\nAdded by {me.principal} (memd sync trust).\n"
    await trust.add_signers(repo, settings.paths.state_dir, [new], message)
    return await sync_memory(store, settings, repo, clock, finder, model=model)
