"""Machines of a team for the tests (not a test module): each its own home, state directory, memory
repository, project clone and fake Messages API, all on one PostgreSQL store (one schema, opened by
each machine as itself) and one bare git remote (a path), the carrier of their memory."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sqlalchemy import text

from pipeline.clock import FakeClock
from pipeline.gitrepo.signing import Signer
from pipeline.store import Store, machines, open_store
from pipeline.team.people import bind, vouch
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.consolidate.support import make_settings
from tests.pipeline.sync.support import Machine, agent, bare_remote, machine_home, machine_on, pair


async def schema_of(store: Store) -> str:
    async with store.read() as conn:
        return str((await conn.execute(text("SELECT current_schema()"))).scalar_one())


async def team_machine(
    name: str,
    root: Path,
    api: FakeAnthropicAPI,
    clock: FakeClock,
    shared: Store,
    *,
    remote: str = "",
    person: str = "",
    publish: dict[str, Any] | None = None,
) -> Machine:
    """Machine ``name`` on the store ``shared`` (PostgreSQL) with ``[sync] remote`` and ``[team] person``."""
    home, project = machine_home(root, name)
    sections: dict[str, Any] = {"team": {"person": person}}
    if remote:
        sections["sync"] = {"remote": remote}
    if publish:
        sections["publish"] = publish
    settings = make_settings(home, api.base_url, **sections)
    mid = hashlib.sha256(name.encode()).hexdigest()[:32]
    store = await open_store(shared.url, machine=mid, pg_schema=await schema_of(shared))
    await machines.identify(
        store, machine_id=mid, host=f"host-{name}", hostname=name, person=person or None, now=clock.now()
    )
    if person:  # as the daemon does at its start (daemon.runtime.open_store_here)
        await bind(store, Signer(settings.paths.state_dir), person, now=clock.now())
    return machine_on(name, home, project, settings, store, clock, api, kind="team")


async def same_person(*members: Machine) -> None:
    """``memd team add-machine`` run both ways between each two of ``members`` (one person's
    machines), then each bound again (as at its daemon's next start)."""
    from pipeline.sync.pairing import key_line

    person = members[0].settings.team.person
    for m in members:
        for other in members:
            if other is not m:
                signer = Signer(m.settings.paths.state_dir)
                await vouch(m.store, signer, person, await key_line(other.repo), now=m.env.clock.now())
    for m in members:
        await bind(m.store, Signer(m.settings.paths.state_dir), person, now=m.env.clock.now())


async def team_on_one_remote(
    root: Path,
    clock: FakeClock,
    shared: Store,
    *members: tuple[str, FakeAnthropicAPI, str],
    publish: dict[str, Any] | None = None,
) -> tuple[str, list[Machine]]:
    """A bare remote (a path) and one ``team_machine`` on it and on ``shared`` for each (name, api,
    person) of ``members``, each api answering as the consolidation ``agent``; the first machine
    trusts itself, then the others (``pair``): (remote, machines)."""
    remote = str(bare_remote(root))
    team = []
    for name, api, person in members:
        api.responder = agent
        team.append(
            await team_machine(name, root, api, clock, shared, remote=remote, person=person, publish=publish)
        )
    await pair(team[0], *team[1:])
    return remote, team


def conversations(api: FakeAnthropicAPI) -> int:
    """How many consolidation conversations ``api`` was asked to start."""
    return sum(
        1
        for r in api.message_requests()
        if r.body.get("tools") and not any(m["role"] == "assistant" for m in r.body["messages"])
    )


def files_holding(folder: Path, needle: str) -> list[str]:
    """Every regular file under ``folder`` (git's object store aside) whose text holds ``needle``."""
    found = []
    for path in folder.rglob("*"):
        if ".git" in path.parts or not path.is_file() or path.is_symlink():
            continue
        if needle in path.read_text(encoding="utf-8", errors="replace"):
            found.append(str(path.relative_to(folder)))
    return found
