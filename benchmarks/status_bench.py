"""How long `memd status` takes, next to a bare `python -c pass` and to another checkout's `memd status`
(``--main``, main's, say) in the same run.

For each store size of --sessions, builds a throwaway HOME whose state store holds that many
transcripts (and a heartbeat, a few runs and leases, 20 published project scopes and a memory use
by every third session), then times the commands alternately, --runs times each, and prints the
medians (wall time, and CPU time, steadier on a loaded machine) and their ratio to the bare
interpreter (the target is at most 1.5x at every size). With more than one size it ends with the
sweep: the ratio at each size, and the largest over the smallest (the target is flat, at most 1.2).
Every `memd status` runs as ``python -m daemon status`` on the same interpreter, this checkout's and
``--main``'s by ``PYTHONPATH``, on the same store.

    .venv/bin/python benchmarks/status_bench.py [--runs 21] [--sessions 100,10000] [--main /work/main]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from benchmarks.bytecode import ROOT, compile_sources
from daemon.config import load_settings
from daemon.service.instance import instance_lease
from pipeline.hits.rate import INDEX_KEY
from pipeline.machine import machine_id
from pipeline.projects import scope_for
from pipeline.store import heartbeats, kv, leases, open_store
from pipeline.store.read.keys import run_key
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


def timed(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Seconds of wall time and of CPU time (user and system) of one run, in ``cwd``: ``python -m``
    puts its working directory before ``PYTHONPATH``, so each checkout runs in its own."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


TARGET_RATIO = 1.5
"""`memd status` at most this many times the bare interpreter, at every size."""
TARGET_FLAT = 1.2
"""The ratio at the largest store at most this many times the ratio at the smallest."""
BASELINE = "python -c pass"
STATUS = "memd status"


def measure(sessions: int, runs: int, main: Path | None) -> dict[str, tuple[float, float]]:
    """The median wall and CPU seconds of each command over ``runs`` interleaved runs, on a store
    of ``sessions``."""
    status = [sys.executable, "-m", "daemon", "status"]
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "PYTHONPATH"))}
        env["HOME"] = tmp
        asyncio.run(populate(env, sessions))
        commands: dict[str, tuple[list[str], str]] = {
            STATUS: (status, str(ROOT)),
            f"{STATUS} --json": ([*status, "--json"], str(ROOT)),
            BASELINE: ([sys.executable, "-c", "pass"], str(ROOT)),
        }
        if main is not None:
            commands[f"{STATUS} (--main)"] = (status, str(main))
            commands[f"{STATUS} --json (--main)"] = ([*status, "--json"], str(main))
        for argv, path in commands.values():  # warm the page cache and .pyc files
            timed(argv, {**env, "PYTHONPATH": path}, path)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, (argv, path) in commands.items():
                samples[name].append(timed(argv, {**env, "PYTHONPATH": path}, path))
    return {
        name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for name, values in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument(
        "--sessions", default="100,10000", help="store sizes, comma-separated (default: %(default)s)"
    )
    parser.add_argument("--main", type=Path, help="another checkout to time beside this one (main's, say)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sessions.split(",")]
    compile_sources()  # as installed: see benchmarks/bytecode.py
    if args.main is not None:
        compile_sources(args.main)
    ratios: dict[int, tuple[float, float]] = {}
    others: dict[int, tuple[float, float]] = {}
    for sessions in sizes:
        medians = measure(sessions, args.runs, args.main)
        wall0, cpu0 = medians[BASELINE]
        print(f"runs: {args.runs} each, interleaved; store: {sessions} transcripts")
        for name, (wall, cpu) in medians.items():
            print(
                f"{name:<34} median {wall * 1000:7.1f} ms ({wall / wall0:4.1f}x baseline), "
                f"CPU {cpu * 1000:6.1f} ms ({cpu / cpu0:4.1f}x)"
            )
        wall, cpu = medians[STATUS]
        ratios[sessions] = (wall / wall0, cpu / cpu0)
        if f"{STATUS} (--main)" in medians:
            wall_main, cpu_main = medians[f"{STATUS} (--main)"]
            others[sessions] = (wall_main / wall0, cpu_main / cpu0)
            print(
                f"--main's memd status / baseline: {others[sessions][0]:.1f}x (CPU {others[sessions][1]:.1f}x); "
                f"this checkout / --main: {wall / wall_main:.2f} (CPU {cpu / cpu_main:.2f})"
            )
        verdict = "ok" if ratios[sessions][0] <= TARGET_RATIO else "OVER"
        print(f"memd status / baseline: {ratios[sessions][0]:.1f}x (target <= {TARGET_RATIO:g}x): {verdict}")
    if len(sizes) > 1:
        print("sweep: " + ", ".join(f"{n} sessions {w:.1f}x (CPU {c:.1f}x)" for n, (w, c) in ratios.items()))
        if others:
            print(
                "--main's sweep: "
                + ", ".join(f"{n} sessions {w:.1f}x (CPU {c:.1f}x)" for n, (w, c) in others.items())
            )
        flat = ratios[sizes[-1]][0] / ratios[sizes[0]][0]
        flat_cpu = ratios[sizes[-1]][1] / ratios[sizes[0]][1]
        verdict = "ok" if flat <= TARGET_FLAT else "OVER"
        print(
            f"{sizes[-1]} / {sizes[0]} sessions: {flat:.2f}, CPU {flat_cpu:.2f} (target <= {TARGET_FLAT:g}): "
            f"{verdict}"
        )


if __name__ == "__main__":
    main()
