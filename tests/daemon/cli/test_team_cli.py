"""`memd team add-machine` and `memd status` through memd's console entry (each command's first run
here a process of its own, the others in the test's process) on one PostgreSQL store: a person is their
keys. Alice's two machines are bound once each vouched for the other; a teammate's machine that
claims the name "alice" is named and refused in `memd status`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from pipeline.store.engine import create_engine_for
from tests.conftest import POSTGRES_URL
from tests.daemon.cli.in_process import run_memd

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not POSTGRES_URL, reason="no PostgreSQL on 127.0.0.1:5432 and MEMD_TEST_POSTGRES_URL unset"
    ),
]


@pytest.fixture
def shared_db() -> Iterator[str]:
    """A database of its own on the test server, dropped at the end: the team's one store."""
    assert POSTGRES_URL
    name = f"memd_people_{uuid.uuid4().hex[:10]}"
    base, _, _ = POSTGRES_URL.rpartition("/")

    async def admin(sql: str) -> None:
        engine = create_engine_for(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as conn:
                await conn.execute(text(sql))
        finally:
            await engine.dispose()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{base}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _memd(home: Path, db: str, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``memd ARGS`` as the machine of ``home``: a real process if ``process`` (each command's first
    run here, so the console entry is what runs), else its console entry in this process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_"))}
    env.update(
        {"HOME": str(home), "COLUMNS": "250", "MEMD_PATHS__STATE_DB": db, "MEMD_TEAM__PERSON": "alice"}
    )
    if not process:
        return run_memd(env, args)
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args], env=env, capture_output=True, text=True, timeout=120
    )


def _line(home: Path, db: str, *, process: bool = False) -> str:
    done = _memd(home, db, "sync", "key", process=process)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_alices_machines_are_bound_by_their_keys_and_a_claim_of_her_name_is_refused(
    tmp_path: Path, shared_db: str
) -> None:
    laptop, desktop, mallory = (tmp_path / n for n in ("laptop", "desktop", "mallory"))
    for home in (laptop, desktop, mallory):
        home.mkdir()
    lines = {home: _line(home, shared_db, process=home == laptop) for home in (laptop, desktop, mallory)}
    added = _memd(desktop, shared_db, "team", "add-machine", lines[laptop], process=True)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "to 'alice'" in added.stdout
    assert _memd(mallory, shared_db, "team", "add-machine", lines[laptop]).returncode == 0  # her claim
    assert _memd(laptop, shared_db, "team", "add-machine", lines[desktop]).returncode == 0
    again = _memd(laptop, shared_db, "team", "add-machine", lines[desktop])  # its next start binds
    assert again.returncode == 0, again.stderr
    shown = _memd(laptop, shared_db, "status", "--json", process=True)
    notes = json.loads(shown.stdout)["team"]["notes"]
    [note] = [n for n in notes if "[team] person" in n]
    # one machine refused (mallory's; all three run on this one host): the desktop is bound
    assert "'alice' is claimed by 1 machine(s) whose signing key is not bound to it" in note
    assert "refused" in note
    human = _memd(laptop, shared_db, "status", process=True).stdout
    assert "is claimed by 1 machine(s)" in " ".join(human.split())
    bad = _memd(laptop, shared_db, "team", "add-machine", "not a line")
    assert bad.returncode != 0
    assert "not added" in bad.stderr
