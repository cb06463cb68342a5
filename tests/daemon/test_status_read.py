from __future__ import annotations

import asyncio
import os
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, text

from daemon import status_read, status_rows
from daemon.status_config import StatusSettings
from pipeline.clock import FakeClock
from pipeline.store import Store, heartbeats, kv, leases
from pipeline.store.schema import consolidation_runs, jobs, llm_calls, publications, scopes, transcripts


async def populate(store: Store, clock: FakeClock) -> None:
    now = clock.now()
    hour = timedelta(hours=1)
    async with store.write() as conn:
        for n, (source, state, reason, eligible_at) in enumerate(
            [
                ("claude_code", "eligible", None, now - hour),
                ("claude_code", "active", "idle in 2h", now + 2 * hour),
                ("claude_code", "active", "idle in 5h", now + 5 * hour),
                ("codex", "failed", "model output invalid after 2 tries", None),
            ]
        ):
            await conn.execute(
                insert(transcripts).values(
                    source=source,
                    path=f"/t/{n}.jsonl",
                    session_id=f"s{n}",
                    project="/home/dev/shop",
                    state=state,
                    reason=reason,
                    eligible_at=eligible_at,
                    first_seen_at=now,
                    updated_at=now,
                )
            )
        await conn.execute(
            insert(jobs).values(
                kind="extract",
                key="9",
                state="failed",
                last_error="API rejected: too long",
                created_at=now,
                updated_at=now,
            )
        )
        for at, tokens, cost in ((now - 2 * hour, 1000, 0.01), (now - timedelta(minutes=5), 3000, 0.05)):
            await conn.execute(
                insert(llm_calls).values(
                    at=at,
                    phase="extract",
                    model="m",
                    job_key=f"j{tokens}",
                    input_tokens=tokens,
                    cost_usd=cost,
                    outcome="ok",
                )
            )
        await conn.execute(
            insert(scopes).values(key="global", last_success_at=now - hour, last_commit="abc", updated_at=now)
        )
        for run_id, outcome, reason in (
            ("r1", "failed", "index over its cap"),
            ("r2", "pending_review", None),
        ):
            await conn.execute(
                insert(consolidation_runs).values(
                    run_id=run_id,
                    scope="global",
                    mode="inbox",
                    started_at=now - hour,
                    finished_at=now - hour,
                    outcome=outcome,
                    reason=reason,
                )
            )
        await conn.execute(
            insert(publications).values(
                target="claude_code",
                scope="projects/shop-1",
                path="/p/MEMORY.md",
                published_at=now,
                outcome="published",
            )
        )
    step = {
        "started_at": (now - timedelta(minutes=10)).isoformat(),
        "finished_at": now.isoformat(),
        "error": None,
    }
    await kv.put(
        store,
        "run.extract",
        {**step, "step": "extract", "outcome": "ok", "report": {"extracted": 1}},
        now=now,
    )
    await kv.put(
        store,
        "run.consolidate.skipped",
        {
            **step,
            "step": "consolidate",
            "outcome": "skipped",
            "report": {"reason": "no scope has new extracts"},
        },
        now=now,
    )
    reset = (now + timedelta(minutes=30)).isoformat()
    await kv.put(
        store,
        "rate_limit",
        {
            "observed_at": now.isoformat(),
            "families": {"tokens": {"limit": 100, "remaining": 10, "reset": reset}},
        },
        now=now,
    )
    await leases.acquire(
        store, "instance", owner="o", host="h1", pid=os.getpid(), now=now, ttl=timedelta(minutes=2)
    )
    await heartbeats.beat(
        store,
        instance="o",
        host="h1",
        pid=os.getpid(),
        version="0.1.0",
        started_at=now - hour,
        now=now - timedelta(seconds=5),
        status={"state": "running", "step": None, "last_cycle": "12:00Z scan ok"},
    )


def git_repo(path: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=path, check=True, capture_output=True, text=True
        ).stdout.strip()

    path.mkdir(parents=True)
    git("init", "-q", "-b", "main")
    (path / "MEMORY.md").write_text("# memory\n")
    git("add", "MEMORY.md")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    git("branch", "inbox/r2")
    git("pack-refs", "--all")  # HEAD's branch is now only in packed-refs
    assert not (path / ".git" / "refs" / "heads" / "main").exists()
    return git("rev-parse", "HEAD")


async def current_schema(store: Store) -> str | None:
    if store.dialect != "postgresql":
        return None
    async with store.read() as conn:
        return str((await conn.execute(text("SELECT current_schema()"))).scalar_one())


async def read_report(store: Store, clock: FakeClock, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    settings = StatusSettings(
        config_path=tmp_path / "c.toml",
        config_exists=False,
        state_db=store.url,
        state_dir=tmp_path,
        memory_dir=tmp_path / "memory",
        daily_token_budget=3500,
    )
    schema = await current_schema(store)

    def read() -> dict[str, Any]:
        rows = status_rows.open_rows(store.url, pg_schema=schema)
        try:
            return status_read.collect(
                rows,
                settings,
                now=clock.now(),
                host=kw.get("host", "h1"),
                pid_alive=kw.get("pid_alive", lambda pid: True),
            )
        finally:
            rows.close()

    return await asyncio.to_thread(read)  # the reader runs its own loop for PostgreSQL


async def test_every_section_is_read(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    await populate(store, clock)
    head = git_repo(tmp_path / "memory")
    report = await read_report(store, clock, tmp_path)

    daemon = report["daemon"]
    assert daemon["running"] is True
    assert daemon["state"] == "running"
    assert daemon["pid"] == os.getpid()
    assert daemon["heartbeat_age_s"] == 5.0
    assert daemon["uptime_s"] == 3600.0
    assert daemon["last_cycle"] == "12:00Z scan ok"

    t = report["transcripts"]
    assert t["total"] == 4
    assert t["by_source"] == {"claude_code": {"active": 2, "eligible": 1}, "codex": {"failed": 1}}
    assert t["next_idle"]["session_id"] == "s1"
    assert t["next_idle"]["in_s"] == 7200.0
    assert t["failures"][0]["reason"] == "model output invalid after 2 tries"

    p1 = report["phase1"]
    assert p1["last_run"]["outcome"] == "ok"
    assert (p1["last_run"]["tokens"], p1["last_run"]["cost_usd"], p1["last_run"]["sessions"]) == (
        3000,
        0.05,
        1,
    )
    reasons = {f["reason"] for f in p1["failures"]}
    assert reasons == {"model output invalid after 2 tries", "API rejected: too long"}

    p2 = report["phase2"]
    assert p2["last_run"] is None
    assert p2["last_check"]["reason"] == "no scope has new extracts"
    assert p2["failures"] == [
        {"scope": "global", "run": "r1", "reason": "index over its cap", "at": p2["failures"][0]["at"]}
    ]

    rl = report["rate_limit"]
    assert rl["remaining_percent"] == 10.0
    assert rl["gated"] is True
    assert "tokens 10% remaining" in rl["reason"]
    assert "daily token budget used" in rl["reason"]
    assert rl["reset_at"] == "2026-11-02T00:00:00+00:00"  # the latest reset: the budget's, at UTC midnight

    budget = report["budget"]
    assert (budget["used_today_tokens"], budget["daily_token_budget"], budget["exhausted"]) == (
        4000,
        3500,
        True,
    )

    memory = report["memory"]
    assert (memory["head"], memory["branch"]) == (head, "main")
    assert memory["scopes"][0]["scope"] == "global"
    assert memory["pending_inbox_runs"] == 1

    assert report["publish"]["targets"][0]["target"] == "claude_code"
    assert [(lease["name"], lease["expired"]) for lease in report["leases"]] == [("instance", False)]


async def test_stale_heartbeat_is_stuck_and_a_dead_pid_is_down(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await populate(store, clock)
    clock.advance(timedelta(minutes=10))
    report = await read_report(store, clock, tmp_path)
    assert report["daemon"]["state"] == "stuck"
    report = await read_report(store, clock, tmp_path, pid_alive=lambda pid: False)
    assert report["daemon"]["state"] == "dead"
    assert report["daemon"]["running"] is False
    report = await read_report(store, clock, tmp_path, host="elsewhere", pid_alive=lambda pid: False)
    assert report["daemon"]["state"] == "stuck"  # another host: a stale heartbeat is all we can see
    await heartbeats.stopped(store, instance="o", now=clock.now(), status={"state": "stopped"})
    assert (await read_report(store, clock, tmp_path))["daemon"]["state"] == "stopped"


async def test_an_empty_store_reads_as_never_started(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    report = await read_report(store, clock, tmp_path)
    assert report["daemon"] == {"running": False, "state": "never started"}
    assert report["transcripts"]["total"] == 0
    assert report["memory"]["head"] is None


def test_a_missing_sqlite_store_is_reported_not_created(tmp_path: Path) -> None:
    with pytest.raises(status_rows.StoreUnavailable, match="has not run yet"):
        status_rows.open_rows(f"sqlite:///{tmp_path}/none.db")
    assert not (tmp_path / "none.db").exists()


def test_passwords_are_hidden() -> None:
    assert status_rows.describe("postgresql://memd:s3cret@db/memd") == "postgresql://memd:***@db/memd"
    assert status_rows.describe("sqlite:////x/state.db") == "sqlite:////x/state.db"
