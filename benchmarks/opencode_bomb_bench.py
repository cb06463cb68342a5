"""OpenCode bomb benchmark: what a hostile database costs a scan, beside the plain database it was
made from.

    .venv/bin/python benchmarks/opencode_bomb_bench.py [--size 700000000] [--huge-mb 64] [--repeat 3]

Each database is read in a fresh child process exactly as the scan reads it (``walk`` of the data
folder, then ``parse`` of its session): the child reports the growth of its peak resident memory
(``ru_maxrss``) and the wall time of the read. The baseline is the plain database the CLI wrote (the
test fixture), measured in the same run. The bombs:

- ``generated``: ``part.data`` a VIRTUAL generated column of ``zeroblob(--size)`` (the issue's
  272 KB file that took 7.6 GB and 66 s before memd refused it by its schema);
- ``view``: ``project`` a view computing a 300 MB value per row;
- ``huge-row``: a real part of ``--huge-mb`` MB stored in the file (skipped unread).

Target: no bomb grows the child's peak memory by more than 200 MB, nor takes more than ten times
the baseline's time plus one second. Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pipeline.sources import opencode_bombs
from tests.pipeline.sources.opencode_support import SAMPLE_SESSION, sample_db

ROOT = Path(__file__).resolve().parents[1]

GROWTH_TARGET_MB = 200

CHILD = """
import json, resource, sys, time
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
from pipeline.agents.opencode import database as opencode_db
from pipeline.agents.opencode.transcripts import OpenCodeAdapter
adapter = OpenCodeAdapter()
root = Path(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
walked = adapter.walk(root)
result = adapter.parse(Path(opencode_db.session_path(str(root / "opencode.db"), sys.argv[2])))
seconds = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
reason = next((e for _, _, e in walked if e), None) or (str(result.problem) if result.problem else None)
errors = result.transcript.parse_errors.count if result.transcript else 0
print("RESULT " + json.dumps({"growth_mb": (after - before) / 1024, "seconds": seconds,
                              "reason": reason, "row_errors": errors}))
"""


def measure(folder: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), SAMPLE_SESSION],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        return {
            "growth_mb": float("inf"),
            "seconds": float("inf"),
            "reason": done.stderr[-300:],
            "row_errors": 0,
        }
    found: dict[str, object] = json.loads(lines[0].removeprefix("RESULT "))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=700_000_000, help="bytes of the generated zeroblob")
    parser.add_argument("--huge-mb", type=int, default=64, help="MB of the real oversized row")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    cases: dict[str, Callable[[Path], Path]] = {
        "baseline: the plain database": sample_db,
        "generated zeroblob column": lambda f: opencode_bombs.generated_bomb(f, size=args.size),
        "view computing 300 MB a row": lambda f: opencode_bombs.view_in_place(f, "project"),
        f"real row of {args.huge_mb} MB": lambda f: opencode_bombs.huge_row(f, args.huge_mb << 20),
    }
    rows: list[tuple[str, float, float, int, str]] = []
    with tempfile.TemporaryDirectory(prefix="memd-oc-bomb-") as tmp:
        for n, (label, build) in enumerate(cases.items()):
            folder = Path(tmp) / f"case{n}"
            db = build(folder)
            runs = [measure(folder) for _ in range(args.repeat)]
            growth = max(float(r["growth_mb"]) for r in runs)  # type: ignore[arg-type]
            seconds = statistics.median(float(r["seconds"]) for r in runs)  # type: ignore[arg-type]
            size_kb = db.stat().st_size / 1024
            reason = str(runs[0]["reason"] or "read")
            rows.append(
                (label, growth, seconds, int(size_kb), reason + f" ({runs[0]['row_errors']} rows skipped)")
            )

    print(f"{'database':32} {'file KB':>9} {'peak RSS +MB':>13} {'seconds':>9}  outcome")
    for label, growth, seconds, size_kb, reason in rows:
        print(f"{label:32} {size_kb:>9,} {growth:>13.1f} {seconds:>9.3f}  {reason[:90]}")
    base_seconds = rows[0][2]
    missed = [
        label
        for label, growth, seconds, _, _ in rows[1:]
        if growth > GROWTH_TARGET_MB or seconds > 10 * base_seconds + 1.0
    ]
    print(
        f"targets: peak RSS growth <= {GROWTH_TARGET_MB} MB and time <= 10x the baseline + 1 s: "
        + ("met" if not missed else f"missed by {', '.join(missed)}")
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
