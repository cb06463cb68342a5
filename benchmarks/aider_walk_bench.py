"""Aider's walk: the bounded search of a home folder for ``.aider.chat.history.md`` files and their
split into sessions, against a bare ``os.walk`` of the same tree (the baseline, same run).

    .venv/bin/python benchmarks/aider_walk_bench.py [--projects 2000] [--histories 50] [--repeat 5]

A home is generated in a temporary directory: ``--projects`` repositories under ``~/code/<org>/``,
each with ``src/`` and a ``node_modules/`` tree (which the search skips), plus hidden folders
(``.cache``), and ``--histories`` of the projects hold a history of 3 sessions (~30 KB each).
Reported: the first walk (every history read), a re-walk with nothing changed (headers cached:
only the stat and the first bytes), a re-walk after 2 KB appended to one history, and the bare
walk; median of ``--repeat`` runs. Target: an unchanged re-walk <= the bare walk of the whole tree
(the search prunes what the bare walk enters).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.agents import aider

SESSION = (
    "\n# aider chat started at 2026-12-07 14:15:51\n\n> Aider v0.86.2  \n\n#### a question  \n\n"
    + "An answer line of the model.\n" * 300
    + "\n> Tokens: 1 sent, 1 received.  \n"
)


def build(home: Path, projects: int, histories: int) -> None:
    for n in range(projects):
        repo = home / "code" / f"org{n % 20}" / f"repo{n}"
        (repo / "src").mkdir(parents=True)
        (repo / "src" / "app.py").write_text("print(1)\n")
        nm = repo / "node_modules" / "pkg" / "lib"
        nm.mkdir(parents=True)
        (nm / "index.js").write_text("x\n")
        if n < histories:
            (repo / aider.HISTORY_FILE).write_text(SESSION * 3)
    for n in range(200):
        (home / ".cache" / f"c{n}").mkdir(parents=True)


def bare_walk(home: Path) -> int:
    return sum(len(files) for _root, _dirs, files in os.walk(home))


def timed(fn: Callable[[], object], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--projects", type=int, default=2000)
    parser.add_argument("--histories", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        build(home, args.projects, args.histories)
        aider._HEADERS.clear()
        started = time.perf_counter()
        sessions = aider.walk(home)
        first = time.perf_counter() - started
        unchanged = timed(lambda: aider.walk(home), args.repeat)
        grown = home / "code" / "org0" / "repo0" / aider.HISTORY_FILE

        def append_and_walk() -> None:
            with grown.open("a") as f:
                f.write("more\n" * 400)
            aider.walk(home)

        appended = timed(append_and_walk, args.repeat)
        baseline = timed(lambda: bare_walk(home), args.repeat)
        print(f"tree: {args.projects} projects, {args.histories} histories, {len(sessions)} sessions found")
        print(f"first walk (every history read) : {first * 1000:8.1f} ms")
        print(f"re-walk, nothing changed        : {unchanged * 1000:8.1f} ms")
        print(f"re-walk, 2 KB appended to one   : {appended * 1000:8.1f} ms")
        print(f"baseline: bare os.walk of it all: {baseline * 1000:8.1f} ms")
        ok = unchanged <= baseline and len(sessions) == 3 * args.histories
        print("target (unchanged re-walk <= bare walk, every session found):", "met" if ok else "MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
