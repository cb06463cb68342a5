from __future__ import annotations

import asyncio
import os
import subprocess
from datetime import datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy import insert, text

from daemon.config import load_settings
from daemon.service.cycle import run_step
from pipeline.clock import FakeClock
from pipeline.hits.rate import INDEX_KEY
from pipeline.hits.record import usage_summary
from pipeline.machine import UNNAMED
from pipeline.projects import scope_for
from pipeline.publish.run import publish_all
from pipeline.settings import Settings, default_values
from pipeline.status import read as status_read
from pipeline.status.report import as_json
from pipeline.store import Store, heartbeats, kv, leases
from pipeline.store.read import rows as status_rows
from pipeline.store.read.keys import machine_key
from pipeline.store.schema import (
    consolidation_runs,
    jobs,
    llm_calls,
    memory_uses,
    publications,
    scopes,
    stage1_outputs,
    transcripts,
)


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
                    machine=UNNAMED,
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
                machine=UNNAMED,
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
        machine_key("run.extract", store.machine),
        {**step, "step": "extract", "outcome": "ok", "report": {"extracted": 1}},
        now=now,
    )
    await kv.put(
        store,
        machine_key("run.consolidate.skipped", store.machine),
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


def status_settings(state_db: str, tmp_path: Path, **sections: dict[str, Any]) -> Settings:
    """The settings `memd status` reads with: the store at ``state_db``, the state and memory under
    ``tmp_path``, the defaults but for ``sections`` (``llm={...}``; a None value: the default)."""
    values: dict[str, Any] = default_values({"HOME": str(tmp_path)})
    values["paths"] = {
        "state_db": state_db,
        "state_dir": str(tmp_path),
        "memory_dir": str(tmp_path / "memory"),
    }
    for name, keys in sections.items():
        values[name] = {k: v for k, v in keys.items() if v is not None}
    return Settings.model_validate(values)


async def read_sections(store: Store, clock: FakeClock, tmp_path: Path, **kw: Any) -> Any:
    """The report's sections, read as `memd status` reads them."""
    settings = status_settings(
        store.url,
        tmp_path,
        llm={"daily_token_budget": 3500, "daily_budget_usd": kw.get("daily_budget_usd")},
        sync={"remote": kw.get("sync_remote")},
    )
    schema = await current_schema(store)

    def read() -> Any:
        rows = status_rows.open_rows(store.url, pg_schema=schema)
        try:
            return status_read.collect(
                rows,
                settings,
                now=clock.now(),
                pid_alive=kw.get("pid_alive", lambda pid: True),
                machine=kw.get("machine"),
            )
        finally:
            rows.close()

    return await asyncio.to_thread(read)  # the reader runs its own loop for PostgreSQL


async def read_report(store: Store, clock: FakeClock, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    """The report's sections as `memd status --json` shows them."""
    return as_json(await read_sections(store, clock, tmp_path, **kw))


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
    report = await read_report(store, clock, tmp_path, machine="elsewhere", pid_alive=lambda pid: False)
    # Read from another machine sharing the store: that daemon's pid means nothing here, and a
    # stale heartbeat is all it can see; this machine has no daemon of its own.
    assert report["daemon"]["state"] == "never started"
    [other] = report["machines"]
    assert (other["this_machine"], other["state"], other["running"]) == (False, "stuck", True)
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


SHOP = "/home/dev/shop"


async def insert_session(conn: Any, tid: int, project: str | None, at: datetime) -> None:
    """An extracted Claude Code session ``s<tid>`` of ``project``, last active ``at``."""
    await conn.execute(
        insert(transcripts).values(
            machine=UNNAMED,
            id=tid,
            source="claude_code",
            path=f"/t/{tid}.jsonl",
            session_id=f"s{tid}",
            project=project,
            state="extracted",
            last_activity=at,
            first_seen_at=at,
            updated_at=at,
        )
    )


async def populate_usage(store: Store, clock: FakeClock) -> str:
    """Sessions, memory uses and extracts for one project scope and the global scope; returns the project's."""
    now, day = clock.now(), timedelta(days=1)
    shop = scope_for(SHOP)
    await kv.put(
        store,
        INDEX_KEY,
        {
            "files": {f"/p/memd-{n}": [shop, n] for n in ("a.md", "b.md")},
            "sources": {f"{shop}/a.md": ["s101"], f"{shop}/b.md": ["s102"], "global/g.md": ["s105"]},
            # The project scope was first published 10 days ago: older sessions had no chance to use it.
            "first_published": {shop: (now - 10 * day).isoformat(), "global": (now - 40 * day).isoformat()},
        },
        now=now,
    )
    async with store.write() as conn:
        for tid, project, age in (
            (101, SHOP, day),
            (102, SHOP, 2 * day),
            (103, SHOP, 3 * day),
            (104, SHOP, 20 * day),  # before the project scope's first publish
            (105, "/home/dev/other", day),
            (106, SHOP, 45 * day),  # outside the 30-day window
        ):
            await insert_session(conn, tid, project, now - age)
        for scope, file, tid, used_at in (
            (shop, "a.md", 101, now - day),  # a topic read: a hit
            (shop, "b.md", 101, now - day + timedelta(minutes=1)),  # the same session: still one hit
            (shop, "MEMORY.md", 102, now - 2 * day),  # the index loaded: given, not a hit
            (shop, "<recall>", 103, now - 3 * day),  # a recall block: given, not a hit
            ("global", "g.md", 105, now - day),
            (shop, "a.md", 106, now - 45 * day),  # outside the window
        ):
            await conn.execute(
                insert(memory_uses).values(scope=scope, file=file, transcript_id=tid, used_at=used_at)
            )
        for n, (uses, last_used, superseded_by, forgotten_at) in enumerate(
            (
                (2, now - day, None, None),
                (1, now - 5 * day, None, None),
                (0, None, None, None),
                (9, now - day, 1, None),  # superseded by a newer extract: not live
                (4, now - day, None, now - day),  # forgotten: not live
            )
        ):
            await conn.execute(
                insert(stage1_outputs).values(
                    transcript_id=101,
                    source="claude_code",
                    session_id=f"s10{n}",
                    project=SHOP,
                    scope=shop,
                    range_start=0,
                    range_end=1,
                    rollout_slug="x",
                    rollout_summary="x",
                    raw_memory="x",
                    memories=[],
                    model="m",
                    usage={},
                    created_at=now - 6 * day,
                    superseded_by=superseded_by,
                    forgotten_at=forgotten_at,
                    use_count=uses,
                    last_used_at=last_used,
                )
            )
    return shop


async def test_usage_shows_each_scopes_hit_rate_and_use_counts(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    shop = await populate_usage(store, clock)
    now, day = clock.now(), timedelta(days=1)
    usage = (await read_report(store, clock, tmp_path))["usage"]
    assert usage["window_days"] == 30
    by_scope = {s["scope"]: s for s in usage["scopes"]}
    assert list(by_scope) == ["global", shop]
    assert by_scope[shop] == {
        "scope": shop,
        "since": (now - 10 * day).isoformat(),
        "hit_rate": 0.333,  # 1 of the 3 sessions since the first publish read a topic file
        "sessions": 3,
        "sessions_reading": 1,
        "sessions_given": 2,
        "uses": 4,
        "last_used_at": (now - day + timedelta(minutes=1)).isoformat(),
        "topics_published": 2,
        "topics_read": 2,
        "memories": {"live": 3, "used": 2, "use_count": 3, "last_used_at": (now - day).isoformat()},
        "folders": [SHOP],
        "helped": 0,
        "misled": 0,
    }
    glob = by_scope["global"]
    assert glob["folders"] == []
    # Every session of the window counts for the global scope (not the 45-day-old one).
    assert (glob["sessions"], glob["sessions_reading"], glob["hit_rate"], glob["uses"]) == (5, 1, 0.2, 1)
    assert glob["memories"] == {"live": 0, "used": 0, "use_count": 0, "last_used_at": None}


async def test_usage_counts_each_session_once_whatever_its_project_and_agrees_with_usage_summary(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    now, day = clock.now(), timedelta(days=1)
    shop, gone = scope_for(SHOP), scope_for("/home/dev/gone")  # gone: no session of its own
    await kv.put(
        store,
        INDEX_KEY,
        {
            "files": {},
            "sources": {},
            "first_published": dict.fromkeys((shop, gone), (now - 10 * day).isoformat()),
        },
        now=now,
    )
    async with store.write() as conn:
        for tid, project, age in (
            (201, SHOP, day),  # the scope's own session, no use
            (202, "/home/dev/other", day),  # another project's session read a topic
            (203, None, day),  # a session without a project was given the index
            (204, SHOP, 20 * day),  # an own session from before the first publish read a topic
        ):
            await insert_session(conn, tid, project, now - age)
        for scope, file, tid in (
            (shop, "a.md", 202),
            (shop, "MEMORY.md", 203),
            (shop, "a.md", None),
            (shop, "b.md", 204),
            (gone, "c.md", 202),
        ):
            await conn.execute(
                insert(memory_uses).values(scope=scope, file=file, transcript_id=tid, used_at=now - day)
            )
    by_scope = {s["scope"]: s for s in (await read_report(store, clock, tmp_path))["usage"]["scopes"]}
    seen = by_scope[shop]
    # 201 is the scope's own; 202, 203 and 204 used it; the use without a session counts as a use only.
    assert (seen["sessions"], seen["sessions_reading"], seen["sessions_given"]) == (4, 2, 1)
    assert (seen["uses"], seen["topics_read"], seen["hit_rate"]) == (4, 2, 0.5)
    assert (by_scope[gone]["sessions"], by_scope[gone]["sessions_reading"]) == (1, 1)
    summary = {s.scope: s for s in await usage_summary(store, now)}
    assert (summary[shop].sessions, summary[shop].sessions_reading, summary[shop].sessions_given) == (4, 2, 1)
    assert (summary[shop].uses, summary[gone].sessions, summary[gone].sessions_reading) == (4, 1, 1)


async def test_nothing_published_yet_has_no_usage(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    assert (await read_report(store, clock, tmp_path))["usage"] == {"window_days": 30, "scopes": []}


async def test_publish_shows_each_target_and_the_last_republish_after_an_outside_change(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    now, hour = clock.now(), timedelta(hours=1)
    async with store.write() as conn:
        for target, scope, outcome, reason, published_at, republished_at, republish_reason in (
            (
                "claude_code",
                "projects/shop-1",
                "skipped",
                "/h/.claude does not exist: Claude Code is not set up for this user",
                None,
                None,
                None,
            ),
            (
                "codex",
                "global",
                "unchanged",
                None,
                now - 2 * hour,
                now - 2 * hour,
                "memd's files there were changed by someone else since the last publish",
            ),
        ):
            await conn.execute(
                insert(publications).values(
                    machine=UNNAMED,
                    target=target,
                    scope=scope,
                    path=f"/p/{target}",
                    outcome=outcome,
                    reason=reason,
                    published_at=published_at,
                    republished_at=republished_at,
                    republish_reason=republish_reason,
                )
            )
    results = [
        {"target": "claude_code", "scope": "projects/shop-1", "outcome": "skipped"},
        {"target": "codex", "scope": "global", "outcome": "unchanged"},
    ]
    await kv.put(store, machine_key("run.publish", store.machine), publish_run(now, results), now=now)
    publish = (await read_report(store, clock, tmp_path))["publish"]
    assert publish["targets"] == [
        {
            "target": "claude_code",
            "scope": "projects/shop-1",
            "path": "/p/claude_code",
            "published_at": None,
            "outcome": "skipped",
            "reason": "/h/.claude does not exist: Claude Code is not set up for this user",
            "republished_at": None,
            "republish_reason": None,
            "folders": [],
        },
        {
            "target": "codex",
            "scope": "global",
            "path": "/p/codex",
            "published_at": (now - 2 * hour).isoformat(),
            "outcome": "unchanged",
            "reason": None,
            "republished_at": (now - 2 * hour).isoformat(),
            "republish_reason": "memd's files there were changed by someone else since the last publish",
            "folders": [],
        },
    ]
    assert publish["last_run"]["results"] == {"skipped": 1, "unchanged": 1}
    assert publish["last_run"]["whole_run"] is None


def publish_run(now: datetime, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "step": "publish",
        "outcome": "ok",
        "started_at": now.isoformat(),
        "finished_at": now.isoformat(),
        "duration_s": 0.1,
        "error": None,
        "report": {"dry_run": False, "results": results},
    }


async def test_publishing_before_the_first_consolidation_keeps_status_healthy(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await heartbeats.beat(
        store,
        instance="o",
        host="h1",
        pid=os.getpid(),
        version="0.1.0",
        started_at=clock.now() - timedelta(minutes=1),
        now=clock.now(),
        status={"state": "running"},
    )
    settings = load_settings(None, env={"HOME": str(tmp_path / "home")}).settings
    settings = settings.model_copy(
        update={"paths": settings.paths.model_copy(update={"memory_dir": tmp_path / "memory"})}
    )

    async def publish(*, dry_run: bool) -> object:
        return await publish_all(store, settings, clock, dry_run=dry_run)

    # The publish step as the daemon runs and records it.
    step = await run_step("publish", publish, clock=clock, dry_run=False)
    await kv.put(store, step.record_key(store.machine), step.to_json(), now=clock.now())

    report = await read_report(store, clock, tmp_path)
    assert report["daemon"]["state"] == "running"
    assert [
        name for name, section in report.items() if isinstance(section, dict) and "error" in section
    ] == []
    last = report["publish"]["last_run"]
    assert last["outcome"] == "ok"
    assert last["results"] == {"skipped": 1}
    assert last["whole_run"] == {
        "outcome": "skipped",
        "reason": f"nothing consolidated yet: {tmp_path / 'memory'} does not exist",
    }
    assert report["publish"]["targets"] == []
    assert report["memory"]["exists"] is False


@pytest.mark.parametrize("outcome", ["accepted", "rejected", "unchanged", "cleared"])
async def test_a_consolidation_run_that_ended_without_failing_is_no_phase2_failure(
    store: Store, clock: FakeClock, tmp_path: Path, outcome: str
) -> None:
    """A run rejected in the inbox (or accepted, unchanged, cleared) was not a failure of phase 2."""
    from pipeline.store import consolidation

    now = clock.now()
    await consolidation.start_run(store, run_id="r1", scope="global", mode="inbox", now=now, inputs={})
    await consolidation.finish_run(store, "r1", outcome=outcome, now=now, reason="reviewed in the inbox")
    assert (await read_report(store, clock, tmp_path))["phase2"]["failures"] == []


async def record_batches(store: Store, clock: FakeClock) -> None:
    """Two open batches (one submitted 40 minutes ago with 7 sessions, one mid-submission 5 minutes
    ago with 1) and a collected one, which is not pending."""
    from pipeline.store import stage1
    from pipeline.vocabulary import BatchState

    def entries(*session_ids: str) -> dict[str, Any]:
        return {
            f"x{n}-{n}": {"session_id": sid, "params": {"model": "m"}} for n, sid in enumerate(session_ids)
        }

    now = clock.now()
    await stage1.record_batch(
        store,
        "msgbatch_old",
        phase="phase1",
        entries=entries(*(f"sess-{n}" for n in range(7))),
        now=now - timedelta(minutes=40),
    )
    await stage1.record_batch(
        store,
        "pending-batch-x",
        phase="phase1",
        entries=entries("sess-new"),
        now=now - timedelta(minutes=5),
        state=BatchState.SUBMITTING,
    )
    await stage1.record_batch(
        store, "msgbatch_done", phase="phase1", entries=entries("sess-done"), now=now - timedelta(hours=2)
    )
    await stage1.close_batch(store, "msgbatch_done", state=BatchState.COLLECTED, now=now - timedelta(hours=1))


async def test_pending_batches_are_read_from_the_store_with_their_age_and_sessions(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await record_batches(store, clock)
    batches = (await read_report(store, clock, tmp_path))["batches"]
    assert (batches["pending"], batches["sessions"]) == (2, 8)
    assert batches["oldest_age_s"] == 2400.0
    [old, new] = batches["batches"]
    assert (old["batch_id"], old["age_s"], old["sessions"]) == ("msgbatch_old", 2400.0, 7)
    assert old["session_ids"] == [f"sess-{n}" for n in range(7)]
    assert (new["state"], new["sessions"], new["session_ids"]) == ("submitting", 1, ["sess-new"])


async def test_no_batch_pending_reads_as_none(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    batches = (await read_report(store, clock, tmp_path))["batches"]
    assert batches == {"pending": 0, "sessions": 0, "oldest_at": None, "oldest_age_s": None, "batches": []}


async def test_a_runs_duplicates_found_and_fixed_show_in_status(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from daemon.cli.status import _duplicates_line
    from pipeline.status.report import Phase2
    from pipeline.store import consolidation

    now = clock.now()
    await consolidation.start_run(store, run_id="r1", scope="global", mode="INIT", now=now, inputs={})
    await consolidation.finish_run(
        store, "r1", outcome="committed", now=now, usage={"duplicates_found": 2, "duplicates_fixed": 2}
    )
    await consolidation.start_run(store, run_id="r2", scope="global", mode="INIT", now=now, inputs={})
    await consolidation.finish_run(store, "r2", outcome="committed", now=now, usage={"turns": 3})
    recent = (await read_report(store, clock, tmp_path))["phase2"]["recent"]
    by_run = {r["run"]: r for r in recent}
    assert (by_run["r1"]["duplicates_found"], by_run["r1"]["duplicates_fixed"]) == (2, 2)
    assert "duplicates_found" not in by_run["r2"]

    from pipeline.status.report import RecentRun

    section = Phase2(
        last_run=None,
        recent=[RecentRun("global", "r1", "committed", None, None, duplicates_found=2, duplicates_fixed=1)],
        failures=[],
        last_check=None,
    )
    assert (
        _duplicates_line(section)
        == "2 found, 1 fixed in the last 1 runs (last: global r1, 2 found, 1 fixed, committed)"
    )


async def test_topics_published_marked_stale_show_in_status(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from daemon.cli.status import _rows
    from pipeline.store.cites import save

    report = await read_report(store, clock, tmp_path)
    assert "stale" not in report["memory"]
    since = clock.now().isoformat()
    stale = {"projects/app-1a2b3c4d/port.md": {"reason": "src/app.py changed (lines 2-2)", "since": since}}
    await save(store, {}, stale, now=clock.now())
    report = await read_report(store, clock, tmp_path)
    assert report["memory"]["stale"] == [
        {
            "topic": "projects/app-1a2b3c4d/port.md",
            "reason": "src/app.py changed (lines 2-2)",
            "since": since,
            "folders": [],
        }
    ]
    sections = await read_sections(store, clock, tmp_path)
    lines = [value for label, value in _rows(sections) if label == "stale"]
    assert len(lines) == 1
    assert lines[0].startswith("projects/app-1a2b3c4d/port.md: src/app.py changed (lines 2-2)")


async def test_stale_and_flagged_ids_show_their_project_folder(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """As `memd memories show` and the page do: the folder beside the key, in the text and the JSON."""
    from daemon.cli.status import _rows
    from daemon.cli.status_tables import flagged_table
    from pipeline.store import notes
    from pipeline.store.cites import save

    shop = scope_for(SHOP)
    async with store.write() as conn:
        await insert_session(conn, 1, SHOP, clock.now())
    since = clock.now().isoformat()
    await save(
        store,
        {},
        {
            f"{shop}/port.md": {"reason": "src/app.py changed (lines 2-2)", "since": since},
            "global/prefs.md": {"reason": "~/.vimrc is gone", "since": since},
        },
        now=clock.now(),
    )
    await notes.add_feedback(
        store, scope=shop, file="deploy.md", verdict="wrong", note=None, session="s1", now=clock.now()
    )
    report = await read_report(store, clock, tmp_path)
    assert [(t["topic"], t["folders"]) for t in report["memory"]["stale"]] == [
        ("global/prefs.md", []),
        (f"{shop}/port.md", [SHOP]),
    ]
    assert [(f["id"], f["folders"]) for f in report["flagged"]] == [(f"{shop}/deploy.md", [SHOP])]

    sections = await read_sections(store, clock, tmp_path)
    out = StringIO()
    flagged_table(Console(file=out, width=200), sections.flagged)
    rows, table = _rows(sections), out.getvalue()
    lines = [value for label, value in rows if label == "stale"]
    assert lines[1].startswith(f"{shop}/port.md ({SHOP}): src/app.py changed")
    assert lines[0].startswith("global/prefs.md: ~/.vimrc is gone")
    assert f"{shop}/deploy.md ({SHOP})" in table


async def test_today_s_and_this_month_s_spend_stand_beside_the_dollar_budget(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """Issue 36: cost in plain sight; the dollar budget closes the gate as phases 1 and 2 see it."""
    await populate(store, clock)  # today (1 November, UTC): $0.01 and $0.05
    async with store.write() as conn:
        for at, cost in ((clock.now() - timedelta(days=1), 2.0), (clock.now() - timedelta(days=40), 9.0)):
            await conn.execute(
                insert(llm_calls).values(at=at, phase="phase2", model="m", cost_usd=cost, outcome="ok")
            )
    report = await read_report(store, clock, tmp_path, daily_budget_usd=0.05)
    budget = report["budget"]
    assert (budget["cost_today_usd"], budget["cost_month_usd"], budget["daily_budget_usd"]) == (
        0.06,
        0.06,
        0.05,
    )
    assert budget["exhausted"] is True
    assert "daily budget reached: $0.06 of $0.05 spent today (UTC)" in report["rate_limit"]["reason"]
    clock.advance(timedelta(days=2))  # 3 November: October's calls are no part of the month
    later = (await read_report(store, clock, tmp_path, daily_budget_usd=0.05))["budget"]
    assert (later["cost_today_usd"], later["cost_month_usd"], later["exhausted"]) == (0.0, 0.06, False)


async def test_the_sync_section_is_the_sync_s_own_record(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """Every field the sync records is shown as it recorded it (``SyncState``, no copy missing any),
    with the configured remote (no credential) and branch; another remote's record is not this one's."""
    from dataclasses import asdict

    from pipeline.sync.state import SyncState, save

    remote = "https://example.com/memory.git"
    state = SyncState(
        remote=remote,
        branch="main",
        outcome="synced",
        at=clock.now().isoformat(),
        remote_head="a" * 40,
        local_head="b" * 40,
        ahead=1,
        behind=0,
    )
    await save(store, state, now=clock.now())
    report = await read_report(store, clock, tmp_path, sync_remote="https://u:tok@example.com/memory.git")
    assert report["sync"] == asdict(state)
    other = await read_report(store, clock, tmp_path, sync_remote="https://example.com/other.git")
    assert other["sync"] == asdict(SyncState(remote="https://example.com/other.git", branch="main"))
    assert "sync" not in {k for k, v in (await read_report(store, clock, tmp_path)).items() if v is not None}
