"""`memd recall` latency, the session-start hook's cost, against bare interpreter start-ups.

    .venv/bin/python benchmarks/recall_bench.py [--repeat 15] [--topics 80]

Builds, in a temporary directory, a git repository with a worktree and a memory repository whose
project scope holds ``--topics`` topic files and a full digest, then times whole processes side by
side, alternating, median of ``--repeat`` runs each:

- ``python3 -c pass`` (the floor), ``python3 -c 'import json, sqlite3'`` (the `memd status` baseline);
- ``python -m daemon.cli.recall --format claude-hook`` with the hook's JSON on stdin (the command
  ``memd hooks install claude-code`` writes), and ``memd recall`` through the full CLI for comparison;
- the hook with the state store locked exclusively by another connection (it must not matter).

Also prints the in-process time of ``build_recall`` alone. Target: the hook at most 10x the
``import json, sqlite3`` baseline and well under a second. Exits non-zero when the target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.projects import scope_for
from pipeline.publish.recall import build_recall

TARGET_RATIO = 10.0


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.email=b@example.com",
            "-c",
            "user.name=b",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _setup(root: Path, topics: int) -> tuple[Path, Path, Path]:
    repo = root / "src" / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "f").write_text("x\n")
    _git(repo, "add", "f")
    _git(repo, "commit", "-q", "-m", "init")
    worktree = root / "src" / "repo-wt"
    _git(repo, "worktree", "add", "-q", str(worktree), "-b", "wt")
    memory = root / "memory"
    scope = memory / scope_for(str(repo.resolve()))
    scope.mkdir(parents=True)
    (scope / "memory_summary.md").write_text("The project digest line.\n" * 60)
    for i in range(topics):
        (scope / f"topic-{i:03d}.md").write_text(
            f"---\nname: Topic {i}\ndescription: what topic {i} holds and when to open it\ntype: project\n"
            f'created: 2026-10-01\nupdated: 2026-10-{1 + i % 28:02d}\nsources: ["s{i}"]\n---\n'
            + "body\n"
            * 40
        )
    (memory / "global").mkdir()
    (memory / "global" / "memory_summary.md").write_text("User prefers short answers.\n")
    db = root / "state.db"
    config = root / "memd.toml"
    config.write_text(f'[paths]\nmemory_dir = "{memory}"\nstate_db = "sqlite:///{db}"\n')
    return worktree, config, db


def _time(argv: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr}")
    return elapsed, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--topics", type=int, default=80)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    with tempfile.TemporaryDirectory() as tmp:
        worktree, config, db = _setup(Path(tmp), args.topics)
        py = sys.executable
        hook = [py, "-m", "daemon.cli.recall", "--config", str(config), "--format", "claude-hook"]
        full = [py, "-m", "daemon", "--config", str(config), "recall", "--format", "claude-hook"]
        stdin = json.dumps({"session_id": "x", "cwd": str(worktree), "hook_event_name": "SessionStart"})
        cases = {
            "python3 -c pass": ([py, "-c", "pass"], None),
            "python3 -c 'import json, sqlite3'": ([py, "-c", "import json, sqlite3"], None),
            "hook: python -m daemon.cli.recall": (hook, stdin),
            "memd recall --format claude-hook": (full, stdin),
        }
        times: dict[str, list[float]] = {name: [] for name in [*cases, "memd recall, store locked"]}
        out = ""
        for _ in range(args.repeat):
            for name, (argv, data) in cases.items():
                elapsed, stdout = _time(argv, env, data)
                times[name].append(elapsed)
                out = stdout or out
            locker = sqlite3.connect(db, isolation_level=None)
            locker.execute("CREATE TABLE IF NOT EXISTS t (x)")
            locker.execute("BEGIN EXCLUSIVE")
            try:
                elapsed, stdout = _time(hook, env, stdin)
                assert stdout == out, "a locked store changes nothing"
                times["memd recall, store locked"].append(elapsed)
            finally:
                locker.execute("ROLLBACK")
                locker.close()
        started = time.perf_counter()
        for _ in range(args.repeat):
            result = build_recall(Path(tmp) / "memory", str(worktree), today=date(2026, 11, 1))
        in_process = (time.perf_counter() - started) / args.repeat
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    print(
        f"recall output: {len(context)} characters, {context.count(chr(10))} lines ({args.topics} topic files)"
    )
    print(f"{'case':<40} {'median ms':>10} {'min ms':>8}")
    for name, values in times.items():
        print(f"{name:<40} {statistics.median(values) * 1000:>10.1f} {min(values) * 1000:>8.1f}")
    print(f"{'build_recall in process':<40} {in_process * 1000:>10.1f}")
    assert result.text
    baseline = statistics.median(times["python3 -c 'import json, sqlite3'"])
    ratio = statistics.median(times["hook: python -m daemon.cli.recall"]) / baseline
    print(f"hook / import-json-sqlite3 baseline: {ratio:.1f}x (target <= {TARGET_RATIO:g}x)")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
