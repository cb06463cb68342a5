"""`memd status` as a user runs it: the JSON and the table, its exit status, and what it imports."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert

from daemon.config import load_settings
from daemon.exits import Exit
from daemon.service.cycle import run_step
from pipeline.clock import FakeClock
from pipeline.errors import NoAPIKey
from pipeline.machine import UNNAMED
from pipeline.publish.run import publish_all
from pipeline.store import heartbeats, kv, open_store
from pipeline.store import notes as notes_db
from pipeline.store.schema import publications
from tests.daemon.cli.startup import imported
from tests.pipeline.status.test_read import SHOP, populate_usage


def memd_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_"))}
    env.update({"HOME": str(tmp_path / "home"), "COLUMNS": "200", **extra})
    return env


def status(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon", "status", *args], env=env, capture_output=True, text=True, timeout=60
    )


async def beat(env: dict[str, str], *, age: timedelta, pid: int) -> None:
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db)
    now = datetime.now(UTC)
    try:
        await heartbeats.beat(
            store,
            instance="i",
            host=socket.gethostname(),
            pid=pid,
            version="0.1.0",
            started_at=now - timedelta(hours=1),
            now=now - age,
            status={"state": "running", "last_cycle": "12:00Z scan ok"},
        )
    finally:
        await store.close()


def test_no_store_yet_is_down_and_says_so(tmp_path: Path) -> None:
    done = status(memd_env(tmp_path), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["daemon"] == {"running": False, "state": "no state store"}
    assert "has not run yet" in report["error"]
    assert report["healthy"] is False


async def test_a_fresh_heartbeat_is_healthy_and_shown(tmp_path: Path) -> None:
    env = memd_env(tmp_path)
    await beat(env, age=timedelta(seconds=3), pid=os.getpid())
    done = status(env, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["daemon"]["state"] == "running"
    assert report["daemon"]["pid"] == os.getpid()
    assert set(report) >= {
        "daemon",
        "transcripts",
        "phase1",
        "phase2",
        "rate_limit",
        "budget",
        "memory",
        "publish",
        "leases",
    }
    human = status(env)
    assert human.returncode == 0
    assert f"daemon running (pid {os.getpid()} on {socket.gethostname()}, up 1h 0m" in human.stdout
    for label in ("phase 1", "phase 2", "rate limit", "spend", "memory"):
        assert label in human.stdout


async def test_a_stale_heartbeat_is_stuck(tmp_path: Path) -> None:
    env = memd_env(tmp_path)
    await beat(env, age=timedelta(minutes=10), pid=os.getpid())
    done = status(env)
    assert done.returncode == Exit.STUCK
    assert "daemon stuck" in done.stdout


@pytest.fixture
def dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


async def test_a_dead_process_is_down(tmp_path: Path, dead_pid: int) -> None:
    env = memd_env(tmp_path)
    await beat(env, age=timedelta(seconds=1), pid=dead_pid)
    done = status(env, "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["daemon"]["state"] == "dead"


def test_a_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[paths]\nstate_db = "mysql://x"\n')
    done = subprocess.run(
        [sys.executable, "-m", "daemon", "--config", str(config), "status"],
        env=memd_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "paths.state_db" in done.stderr


STATUS_NEVER_LOADS = (
    "anthropic",
    "apscheduler",
    "sqlalchemy",
    "pydantic",
    "watchfiles",
    "structlog",
    "pipeline.llm",
    "subprocess",
    "socket",
    "rich",
)
"""What `memd status --json` does without: the model client, the scheduler, the ORM, the settings
model, the watcher, logging, a subprocess or a socket, and the terminal renderer."""


async def test_status_imports_no_llm_scheduler_orm_settings_model_subprocess_or_socket(
    tmp_path: Path,
) -> None:
    env = memd_env(tmp_path)
    await beat(env, age=timedelta(seconds=5), pid=os.getpid())  # a store, so every section is read
    store = await open_store(load_settings(None, env=env).settings.paths.state_db)
    try:  # sessions of projects, so the usage section maps projects to scopes
        await populate_usage(store, FakeClock(datetime.now(UTC)))
    finally:
        await store.close()
    done = imported(["status", "--json"], env)
    assert done.loaded(STATUS_NEVER_LOADS) == []
    assert done.compiled_frozen == []  # issue 34: each frozen record it loads is a pipeline.frozen one
    assert '"usage"' in done.stdout


async def test_status_shows_publish_targets_republishes_and_memory_use(tmp_path: Path) -> None:
    env = memd_env(tmp_path)
    await beat(env, age=timedelta(seconds=3), pid=os.getpid())
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db)
    clock = FakeClock(datetime.now(UTC))
    try:
        shop = await populate_usage(store, clock)
        for verdict in ("helped", "helped", "misled"):
            await notes_db.add_feedback(
                store, scope=shop, file="a.md", verdict=verdict, note=None, session="s", now=clock.now()
            )
        async with store.write() as conn:
            await conn.execute(
                insert(publications).values(
                    machine=UNNAMED,
                    target="codex",
                    scope="global",
                    path="/h/.codex/memories",
                    outcome="unchanged",
                    published_at=clock.now() - timedelta(hours=2),
                    republished_at=clock.now() - timedelta(hours=2),
                    republish_reason="memd's files there were changed by someone else since the last publish",
                )
            )
    finally:
        await store.close()

    done = status(env, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (target,) = report["publish"]["targets"]
    assert (
        target["republish_reason"] == "memd's files there were changed by someone else since the last publish"
    )
    by_scope = {s["scope"]: s for s in report["usage"]["scopes"]}
    assert (by_scope[shop]["hit_rate"], by_scope[shop]["uses"]) == (0.333, 4)

    human = status(env)
    assert human.returncode == 0, human.stderr
    rows = [re.split(r"\s{2,}", line.strip()) for line in human.stdout.splitlines()]
    at = (clock.now() - timedelta(hours=2)).strftime("%Y-%m-%d %H:%MZ")
    header = [
        "target",
        "scope",
        "outcome",
        "project folder",
        "last published",
        "republished (outside change)",
    ]
    assert [*header, "reason"] in rows
    assert [
        "codex",
        "global",
        "unchanged",
        "-",  # global has no project folder
        at,
        at,
        "-",
    ] in rows  # no reason: shown as "-", like every absent value
    assert "memory use (last 30 days)" in human.stdout
    # scope, hit rate, helped / misled, sessions using, given, topics read, uses, last use, memories
    # used, project folder
    assert ["scope", "hit rate", "helped / misled", "sessions using"] in [row[:4] for row in rows]
    shop_row = next(row for row in rows if row[0] == shop)
    assert shop_row[1:7] == ["33%", "2 / 1", "1 of 3", "2", "2 of 2", "4"]
    assert shop_row[8] == "2 of 3 (3 uses)"
    assert shop_row[9] == SHOP
    assert by_scope[shop]["helped"] == 2
    assert by_scope[shop]["misled"] == 1


async def test_status_stays_healthy_before_the_first_consolidation(tmp_path: Path) -> None:
    env = memd_env(tmp_path)
    await beat(env, age=timedelta(seconds=3), pid=os.getpid())
    settings = load_settings(None, env=env).settings
    assert not settings.paths.memory_dir.exists()
    store = await open_store(settings.paths.state_db)
    clock = FakeClock(datetime.now(UTC))
    try:

        async def publish(*, dry_run: bool) -> object:
            return await publish_all(store, settings, clock, dry_run=dry_run)

        step = await run_step("publish", publish, clock=clock, dry_run=False)  # as the daemon runs it
        await kv.put(store, step.record_key(store.machine), step.to_json(), now=clock.now())
    finally:
        await store.close()

    done = status(env)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("publish "))
    assert line.endswith(f"skipped: nothing consolidated yet: {settings.paths.memory_dir} does not exist")
    assert "memory use: nothing published yet" in done.stdout
    report = json.loads(status(env, "--json").stdout)
    assert report["healthy"] is True
    assert report["publish"]["last_run"]["whole_run"]["outcome"] == "skipped"


async def test_a_step_past_its_deadline_is_stuck_with_its_name(tmp_path: Path) -> None:
    env = memd_env(tmp_path)
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db)
    now = datetime.now(UTC)
    status_json = {
        "state": "running",
        "step": "extract",
        "step_started_at": (now - timedelta(minutes=75)).isoformat(),
        "step_deadline_s": 3600,
    }
    try:
        await heartbeats.beat(
            store,
            instance="i",
            host=socket.gethostname(),
            pid=os.getpid(),
            version="0.1.0",
            started_at=now - timedelta(hours=2),
            now=now,  # a fresh heartbeat: the event loop runs, the step does not return
            status=status_json,
        )
    finally:
        await store.close()
    done = status(env, "--json")
    assert done.returncode == Exit.STUCK
    daemon = json.loads(done.stdout)["daemon"]
    assert daemon["state"] == "stuck"
    assert daemon["stuck_step"]["step"] == "extract"
    assert daemon["stuck_step"]["running_s"] >= 75 * 60
    human = status(env).stdout
    assert "daemon stuck" in human
    assert "extract has run for 1h 15m (deadline 1h 0m)" in human
    # Within its deadline the same step is a running daemon's current step.
    status_json["step_started_at"] = (now - timedelta(minutes=5)).isoformat()
    store = await open_store(settings.paths.state_db)
    try:
        await heartbeats.beat(
            store,
            instance="i",
            host=socket.gethostname(),
            pid=os.getpid(),
            version="0.1.0",
            started_at=now - timedelta(hours=2),
            now=now,
            status=status_json,
        )
    finally:
        await store.close()
    fine = status(env)
    assert fine.returncode == 0
    assert "now: extract" in fine.stdout


async def test_user_text_is_shown_as_written_not_as_markup(tmp_path: Path) -> None:
    env = memd_env(tmp_path, HOME=str(tmp_path / "home[b]"))
    await beat(env, age=timedelta(seconds=3), pid=os.getpid())
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db)
    clock = FakeClock(datetime.now(UTC))
    try:

        async def extract(*, dry_run: bool) -> object:
            raise NoAPIKey("ANTHROPIC_API_KEY")

        step = await run_step("extract", extract, clock=clock, dry_run=False)
        await kv.put(store, step.record_key(store.machine), step.to_json(), now=clock.now())
    finally:
        await store.close()

    done = status(env)
    assert done.returncode == 0, done.stderr
    assert "(or [llm] api_key_env)" in done.stdout
    assert "home[b]" in done.stdout  # the paths (config, memory) keep their brackets


async def test_status_shows_pending_batches_from_the_store(tmp_path: Path) -> None:
    from tests.pipeline.status.test_read import record_batches

    env = memd_env(tmp_path)
    await beat(env, age=timedelta(seconds=3), pid=os.getpid())
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db)
    try:
        await record_batches(store, FakeClock(datetime.now(UTC)))
    finally:
        await store.close()

    report = json.loads(status(env, "--json").stdout)
    assert (report["batches"]["pending"], report["batches"]["sessions"]) == (2, 8)
    human = status(env).stdout
    [line] = [line for line in human.splitlines() if line.startswith("batches")]
    assert "2 pending with 8 sessions" in line
    assert "oldest submitted 40m" in line
    assert "sess-0, sess-1, sess-2 and 5 more" in line


async def test_status_lists_every_agent_with_each_target_on_off_or_not_installed(tmp_path: Path) -> None:
    """Issue 36: a default that is off says so and the key that turns it on; an agent whose own
    folder is absent is "not installed"; the text and the JSON say the same."""
    env = memd_env(tmp_path, MEMD_PUBLISH__CODEX_GLOBAL="true")
    for folder in (".claude", ".codex"):
        (tmp_path / "home" / folder).mkdir(parents=True)
    await beat(env, age=timedelta(seconds=3), pid=os.getpid())
    done = status(env, "--json")
    assert done.returncode == 0, done.stderr
    agents = {a["name"]: a for a in json.loads(done.stdout)["agents"]}
    assert list(agents)[:2] == ["claude_code", "codex"]
    assert set(agents) >= {"gemini_cli", "pi", "opencode", "copilot_cli", "qwen_code"}

    def states(name: str) -> dict[str, str]:
        return {t["target"]: t["state"] for t in agents[name]["targets"]}

    assert states("claude_code") == {
        "claude_code": "on",
        "claude_code_global": "off (set [publish] claude_code_global = true)",
    }
    assert states("codex") == {
        "codex": "off (set [publish] codex = true)",
        "codex_global": "on",
        "agents_md": "off (set [publish] agents_md = true)",
    }
    assert agents["gemini_cli"]["installed"] is False
    assert set(states("gemini_cli").values()) == {"not installed"}
    assert agents["pi"]["installed"] is False
    assert set(states("pi").values()) == {"not installed"}  # pi_global, and agents_md it reads

    text = status(env).stdout
    assert "Codex CLI: codex off (set [publish] codex = true), codex_global on" in text
    assert "Claude Code: claude_code on, claude_code_global off" in text
    assert f"Gemini CLI: not installed ({tmp_path / 'home' / '.gemini'} is absent)" in text
