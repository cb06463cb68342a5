"""Team mode end to end: two machines (two homes, two state directories, so two machine ids) share
one PostgreSQL state store and one git remote (a bare repository at a path), one person's two machines
(`[team] person`), each running real `memd` processes against the loopback fake Messages API.

1. Both run `memd run --once` at the same moment: each scans and extracts only its own transcripts
   (the codex sessions sit at the same paths on both: two rows each), and the fake API refuses
   every consolidation, so both arrive at round 2 with every extract in the store.
2. Both run `memd run --once` at the same moment again: each project scope is consolidated once, by
   one of them (the fake API counts the conversations), with the extracts of both machines; `global/`
   is the person's, built by each machine from that person's extracts.
3. Both run as daemons; `memd status` on either lists both machines' daemons with their heartbeats
   (asked in this process). Then `memd sync` on each: the machine that did not consolidate a scope
   gets it through the git remote, without a model call (the store carries no memory); both memory
   repositories and both published copies are the same, and every extract of both machines is in
   the memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from daemon.config import load_settings
from pipeline.settings import Settings
from pipeline.store import open_store
from pipeline.store.engine import create_engine_for
from pipeline.store.schema import consolidation_runs, stage1_outputs, transcripts
from tests.conftest import POSTGRES_URL
from tests.daemon.memd_inprocess import memd
from tests.daemon.memd_process import REPO, Memd
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, bad_request, json_message
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import write_memory
from tests.pipeline.extract.support import extract_output

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.timeout(400),
    pytest.mark.skipif(
        not POSTGRES_URL, reason="no PostgreSQL on 127.0.0.1:5432 and MEMD_TEST_POSTGRES_URL unset"
    ),
]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
ONCE_TIMEOUT_S = 180
MACHINES = ("laptop", "devbox")


class Responder:
    """Extractions always answered; consolidation conversations refused in round 1, then scripted
    (the turn is the number of assistant messages so far), each new conversation counted."""

    def __init__(self) -> None:
        self.consolidate = False
        self.conversations = 0
        self.extractions = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        if not body.get("tools"):
            with self._lock:
                self.extractions += 1
            return json_message(extract_output())
        if not self.consolidate:
            return bad_request("consolidation is closed in round 1")
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if done == 0:
            with self._lock:
                self.conversations += 1
        turns = write_memory()
        return turns[min(done, len(turns) - 1)]


@pytest.fixture
def api() -> Iterator[tuple[FakeAnthropicAPI, Responder]]:
    fake = FakeAnthropicAPI().start()
    responder = Responder()
    fake.responder = responder
    try:
        yield fake, responder
    finally:
        fake.stop()


@pytest.fixture
def shared_db() -> Iterator[str]:
    """A database of its own on the test server, dropped at the end: the team's one store."""
    assert POSTGRES_URL
    name = f"memd_team_{uuid.uuid4().hex[:10]}"
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


def _copy_tree(src: Path, dest: Path) -> None:
    for path in src.rglob("*"):
        if path.is_file():
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())


def _claude_session(root: Path, project: Path, session_id: str) -> None:
    """A Claude Code session of ``project`` (a real repository, so its memory is published)."""
    at = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    folder = root / ("-" + str(project).strip("/").replace("/", "-").replace("_", "-"))
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for n in range(2):
        common = {"sessionId": session_id, "cwd": str(project), "timestamp": at, "version": "2.1.39"}
        lines.append(
            {
                **common,
                "type": "user",
                "uuid": f"u{n}",
                "message": {"role": "user", "content": f"fix bug {n}"},
            }
        )
        lines.append(
            {
                **common,
                "type": "assistant",
                "uuid": f"a{n}",
                "message": {
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"fixed {n}"}],
                },
            }
        )
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _machine_env(
    tmp_path: Path,
    name: str,
    fake: FakeAnthropicAPI,
    db: str,
    shared_codex: Path,
    project: Path,
    remote: Path,
) -> dict[str, str]:
    home = tmp_path / name / "home"
    claude = home / ".claude" / "projects"
    _copy_tree(FIXTURES / "claude_code" / "projects", claude)
    _claude_session(claude, project, str(uuid.uuid5(uuid.NAMESPACE_URL, name)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))}
    none = str(tmp_path / "none")
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "MEMD_PATHS__STATE_DB": db,
            "MEMD_SYNC__REMOTE": str(remote),
            "MEMD_TEAM__PERSON": "dev",
            "MEMD_LLM__BASE_URL": fake.base_url,
            "MEMD_LLM__BATCH": "off",
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
            "MEMD_SCHEDULE__CONSOLIDATE_COOLDOWN_MINUTES": "0",
            "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(claude),
            # One folder both machines read: on two real machines, two files at one path.
            "MEMD_SOURCES__CODEX__ROOT": str(shared_codex),
            "MEMD_SOURCES__GEMINI_CLI__ROOT": none,
            "MEMD_SOURCES__PI__ROOT": none,
            "MEMD_SOURCES__OPENCODE__ROOT": none,
            "MEMD_SOURCES__COPILOT_CLI__ROOT": none,
            "MEMD_SOURCES__QWEN_CODE__ROOT": none,
        }
    )
    return env


def _memd(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "daemon", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _both_once(envs: list[dict[str, str]]) -> list[tuple[int, str]]:
    """`memd run --once` on both machines at the same moment; their exit codes and stderr."""
    procs = [_memd(env, "run", "--once") for env in envs]
    out = []
    for proc in procs:
        _, err = proc.communicate(timeout=ONCE_TIMEOUT_S)
        out.append((proc.returncode, err))
    return out


def _scope_tree(memory_dir: Path) -> dict[str, str]:
    """Every file of every scope in a memory repository (README, the allowed signers and git aside)."""
    return {
        str(p.relative_to(memory_dir)): p.read_text()
        for p in sorted(memory_dir.rglob("*"))
        if p.is_file()
        and not {".git", "trust"} & set(p.relative_to(memory_dir).parts)
        and p.name != "README.md"
    }


def _published(settings: Settings) -> dict[str, str]:
    """What memd published into Claude Code's auto-memory folders under this machine's root (the
    index names the folder, in this machine's home: shown as ``~``)."""
    root = settings.sources["claude_code"].root
    home = str(root.parent.parent)
    return {
        str(p.relative_to(root)): p.read_text().replace(home, "~")
        for p in sorted(root.glob("*/memory/*"))
        if p.is_file()
    }


def test_two_daemons_on_one_shared_postgresql_store_consolidate_each_scope_once_and_publish_the_same_memory(
    tmp_path: Path, api: tuple[FakeAnthropicAPI, Responder], shared_db: str
) -> None:
    fake, responder = api
    shared_codex = tmp_path / "shared" / "codex"
    _copy_tree(FIXTURES / "codex" / "sessions", shared_codex / "sessions")
    project = tmp_path / "work" / "app"  # the repository both machines work on (here: one path)
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    remote = tmp_path / "served" / "memory.git"
    remote.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True, timeout=60)
    envs = [_machine_env(tmp_path, name, fake, shared_db, shared_codex, project, remote) for name in MACHINES]
    settings = [load_settings(None, env=env).settings for env in envs]
    # Pairing, as a person does: the first machine of the empty remote trusts itself and trusts the other.
    first = memd(envs[0], "sync")
    assert first.returncode == 0, first.stdout + first.stderr
    key = memd(envs[1], "sync", "key")
    assert key.returncode == 0, key.stdout + key.stderr
    trusted = memd(envs[0], "sync", "trust", key.stdout.strip())
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr

    # Round 1: both extract their own at the same moment; no consolidation gets through.
    _both_once(envs)
    ids = [(s.paths.state_dir / "machine-id").read_text().strip() for s in settings]
    assert ids[0] != ids[1]
    assert [(s.paths.state_dir / "machine-id").stat().st_mode & 0o777 for s in settings] == [0o600, 0o600]

    async def rows() -> dict[str, Any]:
        store = await open_store(shared_db)
        try:
            async with store.read() as conn:
                by_path = (
                    await conn.execute(
                        select(transcripts.c.path, transcripts.c.machine, transcripts.c.state).order_by(
                            transcripts.c.path, transcripts.c.machine
                        )
                    )
                ).all()
                extracts = (
                    await conn.execute(
                        select(transcripts.c.machine, func.count())
                        .select_from(stage1_outputs.join(transcripts))
                        .group_by(transcripts.c.machine)
                    )
                ).all()
                runs = (
                    await conn.execute(
                        select(
                            consolidation_runs.c.scope,
                            consolidation_runs.c.outcome,
                            consolidation_runs.c.inputs,
                        )
                    )
                ).all()
        finally:
            await store.close()
        return {"by_path": by_path, "extracts": dict(extracts), "runs": runs}

    first = asyncio.run(rows())
    paths: dict[str, set[str]] = {}
    for path, machine, _state in first["by_path"]:
        paths.setdefault(path, set()).add(machine)
    codex_paths = [p for p in paths if p.startswith(str(shared_codex))]
    assert codex_paths
    for path in codex_paths:  # one file path, one row per machine
        assert paths[path] == set(ids), path
    claude_rows = [p for p in paths if not p.startswith(str(shared_codex))]
    assert all(len(paths[p]) == 1 for p in claude_rows)  # each machine's own home
    assert set(first["extracts"]) == set(ids)  # each machine extracted its own sessions
    assert first["extracts"][ids[0]] == first["extracts"][ids[1]] > 0
    extractions = responder.extractions
    assert extractions == sum(first["extracts"].values())  # every session extracted once, where it lives

    # Round 2: both at the same moment again; each scope is consolidated once.
    responder.consolidate = True
    _both_once(envs)
    second = asyncio.run(rows())
    committed = [(scope, inputs) for scope, outcome, inputs in second["runs"] if outcome == "committed"]
    scopes = [scope for scope, _ in committed]
    assert scopes
    projects = [scope for scope in scopes if scope != "global"]
    assert len(projects) == len(set(projects))  # no project scope twice
    assert "global" not in scopes  # nothing these sessions say is about the person (no user memory)
    assert responder.conversations == len(scopes)  # the model was paid once per scope
    assert responder.extractions == extractions  # nothing extracted again
    project_inputs = [len(inputs["ids"]) for scope, inputs in committed if scope != "global"]
    assert sum(project_inputs) == sum(second["extracts"].values())  # both machines' extracts, all of them

    # Round 3: both as daemons, then `memd sync` on each: whoever did not consolidate a scope gets it
    # through the git remote.
    daemons = [Memd(tmp_path, name, env, "run") for name, env in zip(MACHINES, envs, strict=True)]
    try:
        for daemon in daemons:
            daemon.wait_for("READY=1")
        for daemon in daemons:
            cycle = daemon.wait_for("STATUS=idle; last cycle")
            assert "publish ok" in cycle, daemon.stderr()[-3000:]
        reports = []
        for env in envs:
            status = memd(env, "status", "--json")  # in this process
            assert status.returncode == 0, status.stdout + status.stderr
            reports.append(json.loads(status.stdout))
        human = memd({**envs[0], "COLUMNS": "300"}, "status")  # one line each
        for daemon in daemons:
            daemon.signal(signal.SIGTERM)
        for daemon in daemons:
            assert daemon.wait() == 0, daemon.stderr()[-3000:]
    finally:
        for daemon in daemons:
            daemon.close()

    for report, mine in zip(reports, ids, strict=True):
        machines = report["machines"]
        assert {m["machine"] for m in machines} == set(ids)
        assert all(m["state"] == "running" and m["heartbeat_age_s"] is not None for m in machines)
        assert [m["machine"] for m in machines if m["this_machine"]] == [mine]
        assert report["daemon"]["state"] == "running"
    lines = [line for line in human.stdout.splitlines() if line.startswith("machine")]
    assert len(lines) == 2, human.stdout
    assert [mid[:8] in line for mid, line in zip(ids, lines, strict=True)] == [True, True]  # this one first
    assert "this machine: running" in lines[0]
    assert "heartbeat" in lines[1]
    for env in (*envs, envs[0]):
        synced = memd(env, "sync")
        assert synced.returncode == 0, synced.stdout + synced.stderr
    for env in envs:
        published = memd(env, "publish")
        assert published.returncode == 0, published.stdout + published.stderr
    assert responder.conversations == len(scopes)  # getting a scope by sync costs no model call

    trees = [_scope_tree(s.paths.memory_dir) for s in settings]
    assert {p for p in trees[0] if p.startswith("global/")} == {
        p for p in trees[1] if p.startswith("global/")
    }
    trees = [{p: t for p, t in tree.items() if not p.startswith("global/")} for tree in trees]
    assert trees[0] == trees[1]
    in_trees = {"/".join(path.split("/")[:2]) for path in trees[0] if not path.startswith("tombstones/")}
    assert in_trees == set(projects)
    published = [_published(s) for s in settings]
    assert published[0]
    assert published[0] == published[1]
    for s in settings:
        repo = s.paths.memory_dir
        git = ["git", "-C", str(repo)]
        assert subprocess.run([*git, "fsck", "--strict"], capture_output=True, timeout=60).returncode == 0
        assert (
            subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, timeout=60).stdout
            == ""
        )
    shutil.rmtree(tmp_path / "none", ignore_errors=True)
