"""How long `memd status` takes, next to a bare `python -c 'import json, sqlite3'` in the same run.

Builds a throwaway HOME whose state store holds --sessions transcripts (and a heartbeat, a few
runs and leases, 20 published project scopes and a memory use by every third session), then times both commands alternately, --runs times each, and prints the medians
and their ratio (the target is at most 10x).

    .venv/bin/python benchmarks/status_bench.py [--runs 21] [--sessions 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from benchmarks.bytecode import compile_sources
from daemon.config import load_settings
from daemon.instance import instance_lease
from pipeline.hits.rate import INDEX_KEY
from pipeline.machine import machine_id
from pipeline.projects import scope_for
from pipeline.store import heartbeats, kv, leases, open_store
from pipeline.store.readmodel import run_key
from pipeline.store.schema import memory_uses, publications, transcripts


async def populate(env: dict[str, str], sessions: int) -> None:
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    now = datetime.now(UTC)
    states = ["extracted", "active", "skipped", "eligible", "failed"]
    try:
        async with store.write() as conn:
            await conn.execute(
                insert(transcripts),
                [
                    {
                        "machine": store.machine,
                        "source": ("claude_code", "codex", "gemini_cli", "pi")[n % 4],
                        "path": f"/bench/{n}.jsonl",
                        "session_id": f"s{n}",
                        "state": states[n % len(states)],
                        "reason": "bench",
                        "eligible_at": now + timedelta(minutes=n),
                        "project": f"/bench/p{n % 20}",
                        "last_activity": now - timedelta(minutes=n),
                        "first_seen_at": now,
                        "updated_at": now,
                    }
                    for n in range(sessions)
                ],
            )
            # Usage: every third session read a topic file of its project's scope (the hit rate's rows).
            await conn.execute(
                insert(memory_uses),
                [
                    {
                        "scope": scope_for(f"/bench/p{n % 20}"),
                        "file": "t.md",
                        "transcript_id": n + 1,
                        "used_at": now - timedelta(minutes=n),
                    }
                    for n in range(0, sessions, 3)
                ],
            )
            await conn.execute(
                insert(publications),
                [
                    {
                        "machine": store.machine,
                        "target": "claude_code",
                        "scope": scope_for(f"/bench/p{p}"),
                        "path": f"/bench/p{p}",
                        "published_at": now,
                        "outcome": "unchanged",
                        "republished_at": now,
                    }
                    for p in range(20)
                ],
            )
        first = (now - timedelta(days=60)).isoformat()
        scopes = [scope_for(f"/bench/p{p}") for p in range(20)]
        index = {"files": {}, "sources": {f"{s}/t.md": ["x"] for s in scopes}}
        await kv.put(store, INDEX_KEY, index | {"first_published": dict.fromkeys(scopes, first)}, now=now)
        step = {"started_at": now.isoformat(), "finished_at": now.isoformat(), "outcome": "ok", "error": None}
        for name in ("scan", "extract", "consolidate", "publish"):
            await kv.put(
                store,
                run_key(name, skipped=False, machine=store.machine),
                {**step, "step": name, "report": {}},
                now=now,
            )
        await leases.acquire(
            store,
            instance_lease(store),
            owner="o",
            host="h",
            pid=os.getpid(),
            now=now,
            ttl=timedelta(minutes=2),
        )
        await heartbeats.beat(
            store,
            instance="o",
            host="h",
            pid=1,
            version="0",
            started_at=now,
            now=now,
            status={"state": "running"},
        )
    finally:
        await store.close()


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--sessions", type=int, default=5000)
    args = parser.parse_args()
    compile_sources()  # as installed: see benchmarks/bytecode.py
    memd = Path(sys.executable).parent / "memd"
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_"))}
        env["HOME"] = tmp
        asyncio.run(populate(env, args.sessions))
        commands = {
            "memd status": [str(memd), "status"],
            "memd status --json": [str(memd), "status", "--json"],
            "python -c 'import json, sqlite3'": [sys.executable, "-c", "import json, sqlite3"],
        }
        for argv in commands.values():  # warm the page cache and .pyc files
            timed(argv, env)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                samples[name].append(timed(argv, env))
    baseline = statistics.median(samples["python -c 'import json, sqlite3'"])
    print(f"runs: {args.runs} each, interleaved; store: {args.sessions} transcripts")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<34} median {median * 1000:7.1f} ms  ({median / baseline:4.1f}x baseline)")
    ratio = statistics.median(samples["memd status"]) / baseline
    print(f"memd status / baseline: {ratio:.1f}x (target <= 10x): {'ok' if ratio <= 10 else 'OVER'}")


if __name__ == "__main__":
    main()
