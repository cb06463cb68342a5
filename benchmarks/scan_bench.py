"""Scanner benchmark: an unchanged re-scan of 20,000 transcripts against a bare stat walk, and the
cost of parsing appended bytes against the size of the file they were appended to.

    .venv/bin/python benchmarks/scan_bench.py [--files 20000] [--repeat 5] [--append-max-mb 50]
        [--sizes 1000,5000] [--baseline /path/to/another/checkout]

Everything runs in one process, side by side, on a corpus generated in a temporary directory:

1. Re-scan with nothing changed (the state store already knows every file), against a bare Python
   walk that stats every file (``os.walk`` + ``os.stat``), median of ``--repeat`` runs each,
   alternating. Target: a second ``memd scan``, as a whole process, <= 3x ``python3 -c <walk>``
   as a whole process; and ``pipeline.scan.scanner.scan`` in process (what the daemon runs) <= 3x the
   walk in process. ``memd scan --json`` (which prints every session) is timed for reference.
2. Appends: sessions of 100 KB, 1 MB, 10 MB and 50 MB (those up to ``--append-max-mb``) each get
   2 KB appended; the re-scan's parse time and bytes parsed are reported per size. Target: the cost follows the appended bytes, not the
   file size.

3. A second ``memd scan`` with nothing changed, as a user runs it (``python -m daemon scan``, a
   whole process), at each of ``--sizes`` transcript files, beside ``python3 -c <walk>`` of the same
   files and, with ``--baseline``, the same command run from another checkout (its own ``.venv``,
   e.g. main's) on the same files with its own state: median of ``--repeat`` runs (at least 5),
   alternating. Every process gets one bytecode cache in the run's temporary directory
   (``PYTHONPYCACHEPREFIX``, written by a warm-up run), so no checkout is written to and none pays
   the compiler. The baseline's output is compared with this checkout's (the duration aside).
   Target: <= 1.5x the walk at every size.

Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bytecode import compile_sources
from pipeline.clock import FakeClock
from pipeline.machine import machine_id
from pipeline.scan.scanner import scan
from pipeline.settings import Settings
from pipeline.sources import registry
from pipeline.store import Store, open_store
from tests.source_names import SourceName

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
APPEND_SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000, "50 MB": 50_000_000}
"""The sessions appended to: the target holds over the whole 500x range."""


def _line(kind: str, sid: str, cwd: str, n: int, text: str) -> str:
    at = (NOW - timedelta(hours=10) + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    if kind == "user":
        message: dict[str, object] = {"role": "user", "content": text}
    else:
        message = {
            "id": f"msg_{sid[:8]}_{n}",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
        }
    return json.dumps(
        {
            "type": kind,
            "sessionId": sid,
            "cwd": cwd,
            "uuid": f"{sid[:8]}-{n}",
            "timestamp": at,
            "message": message,
        }
    )


def _session_text(sid: str, cwd: str, turns: int, filler: int = 200) -> str:
    pad = "x" * filler
    lines = []
    for n in range(turns):
        lines.append(_line("user", sid, cwd, 2 * n, f"request {n} {pad}"))
        lines.append(_line("assistant", sid, cwd, 2 * n + 1, f"answer {n} {pad}"))
    return "\n".join(lines) + "\n"


def make_corpus(root: Path, files: int) -> Path:
    projects = root / "claude" / "projects"
    per_dir = 50
    for i in range(files):
        folder = projects / f"-home-u-proj{i // per_dir:04d}"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        sid = f"{i:08x}-0000-4000-8000-{i:012x}"
        (folder / f"{sid}.jsonl").write_text(_session_text(sid, f"/home/u/proj{i // per_dir:04d}", 3))
    return projects


def settings_for(root: Path) -> Settings:
    return Settings.model_validate(
        {
            "paths": {
                "memory_dir": str(root / "mem"),
                "state_db": f"sqlite:///{root / 'state.db'}",
                "state_dir": str(root / "state"),
            },
            "sources": {
                # Claude Code reads the corpus; every other registered source is off.
                name: {"root": str(root / "claude" / "projects")}
                if name == SourceName.CLAUDE_CODE
                else {"root": str(root / "none"), "enabled": False}
                for name in registry.names()
            },
        }
    )


def bare_walk(top: Path) -> int:
    n = 0
    for dirpath, _dirs, names in os.walk(top):
        for name in names:
            os.stat(os.path.join(dirpath, name))
            n += 1
    return n


WALK_SNIPPET = (
    "import os,sys\n"
    "n=0\n"
    "for d,_,fs in os.walk(sys.argv[1]):\n"
    "    for f in fs:\n"
    "        os.stat(os.path.join(d,f)); n+=1\n"
    "print(n)\n"
)


async def rescan_benchmark(root: Path, files: int, repeat: int) -> bool:
    print(f"generating {files} transcripts ...", flush=True)
    t0 = time.perf_counter()
    projects = make_corpus(root, files)
    print(f"  done in {time.perf_counter() - t0:.1f}s")
    settings = settings_for(root)
    clock = FakeClock(NOW)
    store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    try:
        t0 = time.perf_counter()
        first = await scan(store, settings, clock, collect_sessions=False)
        print(
            f"first scan: {first.files_seen} files, {first.files_parsed} parsed in {time.perf_counter() - t0:.2f}s"
        )
        walk_times, scan_times = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            n = bare_walk(projects)
            walk_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            report = await scan(store, settings, clock, collect_sessions=False)
            scan_times.append(time.perf_counter() - t0)
            assert report.files_parsed == 0, report.files_parsed
            assert report.files_seen == n == files
    finally:
        await store.close()

    env = {**os.environ, "HOME": str(root), "MEMD_CONFIG": str(root / "memd.toml")}
    (root / "memd.toml").write_text(
        f'[paths]\nstate_db = "{settings.paths.state_db}"\nmemory_dir = "{root / "mem"}"\n'
        f'[sources.claude_code]\nroot = "{projects}"\n'
        + "".join(
            f"[sources.{name}]\nenabled = false\n"
            for name in registry.names()
            if name != SourceName.CLAUDE_CODE
        )
    )
    memd = [sys.executable, "-m", "daemon", "scan"]
    memd_json = [*memd, "--json"]
    # The first `memd scan` records its settings in the scan index; the measured ones are second scans.
    subprocess.run(memd, check=True, capture_output=True, env=env, cwd=Path(__file__).resolve().parents[1])
    proc_walk, proc_scan, proc_json = [], [], []
    for _ in range(max(5, repeat)):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", WALK_SNIPPET, str(projects)], check=True, capture_output=True)
        proc_walk.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(
            memd, check=True, capture_output=True, env=env, cwd=Path(__file__).resolve().parents[1]
        )
        proc_scan.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(
            memd_json, check=True, capture_output=True, env=env, cwd=Path(__file__).resolve().parents[1]
        )
        proc_json.append(time.perf_counter() - t0)

    walk, rescan = statistics.median(walk_times), statistics.median(scan_times)
    pw, ps, pj = statistics.median(proc_walk), statistics.median(proc_scan), statistics.median(proc_json)
    ratio = rescan / walk
    proc_ratio = ps / pw
    print()
    print(f"{'unchanged re-scan of ' + str(files) + ' files':<46}{'median s':>10}{'ratio':>8}")
    print(f"{'  bare walk (os.walk + os.stat), in process':<46}{walk:>10.3f}{1.0:>8.2f}")
    print(f"{'  memd scan(), in process':<46}{rescan:>10.3f}{ratio:>8.2f}   target <= 3.00")
    print(f"{'  python3 -c <walk>, whole process':<46}{pw:>10.3f}{1.0:>8.2f}")
    print(f"{'  memd scan (a second one), whole process':<46}{ps:>10.3f}{proc_ratio:>8.2f}   target <= 3.00")
    print(
        f"{'  memd scan --json, whole process':<46}{pj:>10.3f}{pj / pw:>8.2f}   (reference: JSON of every session)"
    )
    return ratio <= 3.0 and proc_ratio <= 3.0


async def append_benchmark(root: Path, max_bytes: int) -> bool:
    root.mkdir(parents=True, exist_ok=True)
    settings = settings_for(root)
    projects = root / "claude" / "projects" / "-home-u-big"
    projects.mkdir(parents=True)
    sizes = {label: size for label, size in APPEND_SIZES.items() if size <= max_bytes}
    paths = {}
    for label, size in sizes.items():
        sid = f"{size:08x}-0000-4000-8000-000000000000"
        turns = max(1, size // 1000)
        text = _session_text(sid, "/home/u/big", turns, filler=430)
        path = projects / f"{sid}.jsonl"
        path.write_text(text)
        paths[label] = (sid, path)
    clock = FakeClock(NOW)
    store: Store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    rows = []
    try:
        t0 = time.perf_counter()
        await scan(store, settings, clock, collect_sessions=False)
        full = time.perf_counter() - t0
        for label, (sid, path) in paths.items():
            before = path.stat().st_size
            extra = "".join(
                _line("user", sid, "/home/u/big", 10_000_000 + k, "appended " + "y" * 900) + "\n"
                for k in range(2)
            )
            with path.open("a") as f:
                f.write(extra)
            t0 = time.perf_counter()
            report = await scan(store, settings, clock, collect_sessions=False)
            elapsed = time.perf_counter() - t0
            rows.append((label, before, len(extra.encode()), report.bytes_parsed, elapsed))
    finally:
        await store.close()
    print()
    print(f"first full parse of all four files: {full:.2f}s")
    print(f"{'file size':<10}{'bytes on disk':>15}{'appended':>10}{'parsed':>10}{'re-scan s':>11}")
    for label, before, appended, parsed, elapsed in rows:
        print(f"{label:<10}{before:>15,}{appended:>10,}{parsed:>10,}{elapsed:>11.4f}")
    parsed_ok = all(parsed == appended for _, _, appended, parsed, _ in rows)
    times = [r[4] for r in rows]
    flat = max(times) <= 5 * min(times)
    print(
        f"parsed bytes == appended bytes: {parsed_ok}; slowest/fastest re-scan: {max(times) / min(times):.2f}x (target <= 5x over a {max(sizes.values()) // min(sizes.values())}x size range)"
    )
    return parsed_ok and flat


def _second_scan_config(root: Path, projects: Path, name: str) -> Path:
    """A config (state of its own under ``root/name``) that reads only Claude Code's ``projects``."""
    state = root / name
    path = root / f"{name}.toml"
    path.write_text(
        f'[paths]\nstate_db = "sqlite:///{state / "state.db"}"\nmemory_dir = "{state / "mem"}"\n'
        f'state_dir = "{state / "state"}"\n[sources.claude_code]\nroot = "{projects}"\n'
        + "".join(
            f"[sources.{name}]\nenabled = false\n"
            for name in registry.names()
            if name != SourceName.CLAUDE_CODE
        )
    )
    return path


def _without_duration(out: bytes) -> bytes:
    """A scan's output without the one figure that differs between two runs (its duration)."""
    first, _, rest = out.partition(b"\n")
    return first.rsplit(b", ", 1)[0] + b"\n" + rest


def _timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, bytes]:
    """One process: its wall time, its CPU time (user + system) and its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(args, check=True, capture_output=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, used, done.stdout


def second_scan_benchmark(root: Path, sizes: list[int], repeat: int, baseline: Path | None) -> bool:
    """The whole-process second `memd scan` (nothing changed) beside a bare walk and a baseline."""
    here = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    runs: dict[str, tuple[list[str], Path]] = {
        "walk": ([sys.executable, "-c", WALK_SNIPPET], root),
        "this checkout": ([sys.executable, "-m", "daemon", "scan"], here),
    }
    if baseline is not None:
        runs["baseline"] = ([str(baseline / ".venv" / "bin" / "python"), "-m", "daemon", "scan"], baseline)
    rows = []
    same = True
    for files in sizes:
        top = root / f"files-{files}"
        print(f"generating {files} transcripts ...", flush=True)
        projects = make_corpus(top, files)
        for name in runs:
            _second_scan_config(top, projects, name.replace(" ", "-"))
        times: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        outputs: dict[str, bytes] = {}

        def args_of(name: str, projects: Path = projects) -> list[str]:
            return [*runs[name][0], str(projects)] if name == "walk" else runs[name][0]

        def env_of(name: str, top: Path = top) -> dict[str, str]:
            return {**env, "HOME": str(top), "MEMD_CONFIG": str(top / f"{name.replace(' ', '-')}.toml")}

        for name in runs:  # the first scan, and the bytecode cache's warm-up
            _timed(args_of(name), runs[name][1], env_of(name))
            _timed(args_of(name), runs[name][1], env_of(name))
        for _ in range(max(5, repeat)):
            for name in runs:
                wall, used, outputs[name] = _timed(args_of(name), runs[name][1], env_of(name))
                times[name].append(wall)
                cpu[name].append(used)
        if baseline is not None:
            match = _without_duration(outputs["this checkout"]) == _without_duration(outputs["baseline"])
            same = same and match
        rows.append(
            (
                files,
                {name: statistics.median(ts) for name, ts in times.items()},
                {name: statistics.median(ts) for name, ts in cpu.items()},
            )
        )

    print()
    print(
        "second `memd scan`, nothing changed, whole process: median wall s and CPU s (user+sys), x the walk's"
    )
    header = f"{'files':>7}  {'':<5}" + "".join(f"{name:>22}" for name in runs)
    print(header)
    ok = True
    for files, walls, cpus in rows:
        for label, medians in (("wall", walls), ("cpu", cpus)):
            walk = medians["walk"]
            cells = "".join(f"{medians[name]:>13.3f} {medians[name] / walk:>6.2f}x " for name in runs)
            print(f"{files:>7}  {label:<5}{cells}")
        ok = ok and walls["this checkout"] <= 1.5 * walls["walk"]
    print("target: this checkout's wall time <= 1.50x the walk's at every size")
    if baseline is not None:
        print(f"same output as the baseline (duration aside): {same}")
    return ok and same


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--append-max-mb", type=float, default=50, help="the largest file appended to (100 KB, 1, 10, 50 MB)"
    )
    parser.add_argument(
        "--sizes", default="1000,5000", help="transcript files of the second-scan runs, comma-separated"
    )
    parser.add_argument(
        "--baseline", type=Path, default=None, help="another checkout (with its .venv) timed beside this one"
    )
    parser.add_argument("--only-second-scan", action="store_true", help="run part 3 alone")
    args = parser.parse_args()
    compile_sources()  # as installed: see benchmarks/bytecode.py
    sizes = [int(n) for n in args.sizes.split(",") if n]
    with tempfile.TemporaryDirectory(prefix="memd-scan-bench-") as tmp:
        ok1 = ok2 = True
        if not args.only_second_scan:
            ok1 = asyncio.run(rescan_benchmark(Path(tmp) / "rescan", args.files, args.repeat))
            ok2 = asyncio.run(append_benchmark(Path(tmp) / "append", int(args.append_max_mb * 1_000_000)))
        ok3 = second_scan_benchmark(Path(tmp) / "second", sizes, args.repeat, args.baseline)
    print()
    ok = ok1 and ok2 and ok3
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
