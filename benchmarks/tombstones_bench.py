"""How long a sync takes to refuse forged tombstones, next to refusing one forged tombstone in the same run.

A trusted machine (its own HOME, state store and memory repository, a bare path remote it synced
with) meets a remote an intruder pushed --tombstones unsigned tombstones to (the issue's attack:
100,000 were accepted in 6 s before). Each round makes a fresh remote for both cases and times only
the sync; it prints the medians of --repeat rounds, and the ratio. The target: refused (nothing
withdrawn), and at most 10x the one-tombstone refusal (memd checks signatures before it reads a
tree, so the count of tombstones costs only their fetch).

    .venv/bin/python benchmarks/tombstones_bench.py [--tombstones 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from daemon.config import load_settings
from daemon.runtime import memory_repo
from pipeline.clock import SystemClock
from pipeline.machine import machine_id
from pipeline.memory import tombstones
from pipeline.store import open_store
from pipeline.sync.run import sync
from pipeline.vocabulary import SyncOutcome

TARGET_RATIO = 10.0


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=x", "-c", "user.email=x@x", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=600,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"},
    )


async def one(root: Path, count: int) -> float:
    """Seconds the trusted machine's sync takes to refuse ``count`` forged tombstones."""
    remote = root / "remote.git"
    remote.mkdir(parents=True)
    git(remote, "init", "-q", "--bare", "-b", "main")
    home = root / "home"
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "MEMD_SYNC__REMOTE": str(remote)}
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    try:
        repo = memory_repo(settings)
        first = await sync(store, settings, repo, SystemClock(), None)
        assert first.outcome == SyncOutcome.SYNCED, first.reason
        intruder = root / "intruder"
        git(root, "clone", "-q", str(remote), str(intruder))
        graves = intruder / tombstones.TOMBSTONE_DIR
        graves.mkdir()
        for n in range(count):
            (graves / f"{n:032x}").write_bytes(tombstones.TOMBSTONE_TEXT)
        git(intruder, "add", tombstones.TOMBSTONE_DIR)
        git(intruder, "commit", "-qm", "memd: forget")
        git(intruder, "push", "-q", "origin", "HEAD:main")
        head = await repo.head()
        started = time.perf_counter()
        report = await sync(store, settings, repo, SystemClock(), None)
        took = time.perf_counter() - started
        assert report.outcome == SyncOutcome.STOPPED, report.reason
        assert await repo.head() == head, "the forged tombstones were merged"
        return took
    finally:
        await store.close()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tombstones", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base: list[float] = []
    many: list[float] = []
    for _ in range(args.repeat):
        for count, into in ((1, base), (args.tombstones, many)):
            tmp = Path(tempfile.mkdtemp(prefix="memd-tombstones-bench."))
            try:
                into.append(await one(tmp, count))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    b, m = statistics.median(base), statistics.median(many)
    ratio = m / b if b else float("inf")
    print(f"refusing 1 forged tombstone:        {b * 1000:8.1f} ms (median of {args.repeat})")
    print(
        f"refusing {args.tombstones} forged tombstones: {m * 1000:8.1f} ms ({ratio:.1f}x, target <= {TARGET_RATIO:g}x)"
    )
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
