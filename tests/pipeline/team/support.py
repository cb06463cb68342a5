"""Machines of a team for the tests (not a test module): each its own home, state directory, memory
repository, project clone and fake Messages API, all on one PostgreSQL store (one schema, opened by
each machine as itself) and one bare git remote (a path), the carrier of their memory."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from sqlalchemy import text

from pipeline.clock import FakeClock
from pipeline.llm.client import build_client
from pipeline.redaction import Redactor
from pipeline.store import Store, machines, open_store
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, make_settings
from tests.pipeline.sync.support import ORIGIN, Machine, git


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
    home = root / name
    home.mkdir(parents=True)
    project = home / "src" / f"app-{name}"
    project.mkdir(parents=True)
    (home / ".claude").mkdir()
    git(project, "init", "-q", "-b", "main")
    git(project, "remote", "add", "origin", ORIGIN)
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
    llm = build_client(
        settings, store=store, clock=clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY}, rng=random.Random(1)
    )
    env = Env(home, store, clock, api, settings, llm, Redactor(f"team-test-key-{name}-0123456789".encode()))
    return Machine(name, env, project)


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
