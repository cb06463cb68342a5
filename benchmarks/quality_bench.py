"""Memory quality, measured: fixed scenario sessions replayed through both phases (issue 27).

    .venv/bin/python benchmarks/quality_bench.py [--tiny] [--only NAME ...] [--live]

Runs every scenario module listed in ``benchmarks/quality/__init__.py`` ``SCENARIOS``, each in its
own temporary directory, with scripted model answers served by the loopback fake of the Messages
API (``tests/fakes/anthropic_api.py``), so the figures are computed from what memd's pipeline did
(the requests it made, the files it published), never written in. Each figure is printed beside a
baseline measured in the same run, with its target and whether memd met it; exit 1 when a target
was missed.

``--live`` runs, instead, every scenario whose outcome depends on the model (those with a ``live``
function: planted facts, newer wins) against the real API (``ANTHROPIC_API_KEY``; without it the
run says so and stops with exit 0; ``ANTHROPIC_BASE_URL``, when set, is the API it calls), adding
the tokens and cost per session and per consolidation; each other scenario says why it needs no
live run (its ``NO_LIVE``). It spends money, and is never run in CI (its code path is tested
against the loopback fake: ``tests/test_quality_bench.py``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quality import SCENARIOS, Figure

Runner = Callable[..., list[Figure]]


def verdict(figure: Figure) -> str:
    return "" if figure.met is None else ("yes" if figure.met else "NO")


def table(rows: list[tuple[str, Figure]]) -> list[str]:
    """One block per scenario: its name, then its figures in columns."""
    head = ("figure", "memd", "baseline", "target", "met?")
    cells = [head] + [(f.name, f.memd, f.baseline, f.target, verdict(f)) for _, f in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    out = [line(head), "-" * sum(widths + [2 * (len(head) - 1)])]
    scenario = None
    for (name, _), row in zip(rows, cells[1:], strict=True):
        if name != scenario:
            out.append(f"[{name}]")
            scenario = name
        out.append(line(row))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tiny", action="store_true", help="the smallest sessions (CI's size)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scenario modules")
    parser.add_argument("--live", action="store_true", help="against the real API (costs money)")
    args = parser.parse_args(argv)
    names = [n for n in SCENARIOS if not args.only or n in args.only]
    unknown = sorted(set(args.only or ()) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
    if args.live and not os.environ.get("ANTHROPIC_API_KEY"):
        print("--live skipped: ANTHROPIC_API_KEY is not set (the live evaluation calls the real API)")
        return 0

    from daemon.logs import configure_logging

    configure_logging(level="WARNING")  # the figures, not the pipeline's progress
    rows: list[tuple[str, Figure]] = []
    for name in names:
        module = importlib.import_module(f"benchmarks.quality.{name}")
        runner: Runner | None = getattr(module, "live" if args.live else "run", None)
        scenario = getattr(module, "NAME", name)
        if runner is None:
            print(f"{scenario}: no live run ({getattr(module, 'NO_LIVE', 'no live form')})")
            continue
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"quality-{name}-") as tmp:
            figures = runner(Path(tmp), tiny=args.tiny)
        print(f"{scenario}: {len(figures)} figures in {time.perf_counter() - started:.1f} s", flush=True)
        rows += [(scenario, f) for f in figures]
    print()
    print("\n".join(table(rows)) if rows else "no scenario ran")
    missed = [f"{s}: {f.name}" for s, f in rows if f.met is False]
    if missed:
        print(f"\n{len(missed)} target(s) missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
