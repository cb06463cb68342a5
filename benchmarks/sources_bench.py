"""Transcript adapter benchmark: full-parse throughput per format, and the cost of an incremental
parse of appended bytes next to a full parse of the same file, side by side in one run.

    .venv/bin/python benchmarks/sources_bench.py [--sizes-mb 1,10,50] [--append-kb 2] [--repeat 5]

Corpus: the project's fixtures (tests/fixtures/transcripts), their conversation lines repeated
until the file reaches the size. Figures are medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.sources.registry import adapter_for
from tests.source_names import SourceName

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "transcripts"
CASES: list[tuple[SourceName, Path]] = [
    (
        SourceName.CLAUDE_CODE,
        FIX / "claude_code/projects/-home-dev-shop/0b5c7d7e-2f1a-4c3e-9d41-7a2b9e0c1f11.jsonl",
    ),
    (
        SourceName.CODEX,
        FIX
        / "codex/sessions/2026/10/02/rollout-2026-10-02T09-14-03-019a0b1c-2d3e-7f40-8a51-b2c3d4e5f601.jsonl",
    ),
    (SourceName.GEMINI_CLI, FIX / "gemini_cli/tmp/shop/chats/session-2026-10-05T08-00-6c1d2e3f.jsonl"),
    (
        SourceName.PI,
        FIX
        / "pi/sessions/--home-dev-shop--/2026-10-06T10-00-00-000Z_0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl",
    ),
]


def grow(fixture: Path, target: Path, size: int) -> None:
    lines = fixture.read_bytes().splitlines(keepends=True)
    head, body = lines[:1], lines[1:]
    with target.open("wb") as out:
        out.writelines(head)
        written = sum(map(len, head))
        while written < size:
            out.writelines(body)
            written += sum(map(len, body))


def median_time(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mb", default="1,10,50")
    ap.add_argument("--append-kb", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(float(s) * 1024 * 1024) for s in args.sizes_mb.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="memd-sources-bench-"))
    try:
        print(
            f"{'format':<12}{'size MB':>8}{'lines':>8}{'full s':>9}{'MB/s':>7}{'no items s':>11}{'MB/s':>7}{'lines/s':>9}"
        )
        for source, fixture in CASES:
            adapter = adapter_for(source)
            path = tmp / fixture.name
            grow(fixture, path, sizes[0] * 4)
            mb = path.stat().st_size / 1e6
            lines = path.read_bytes().count(b"\n")
            full = median_time(functools.partial(adapter.parse, path), args.repeat)
            bare = median_time(functools.partial(adapter.parse, path, with_items=False), args.repeat)
            row = (
                f"{source:<12}{mb:>8.1f}{lines:>8}{full:>9.3f}{mb / full:>7.1f}{bare:>11.3f}{mb / bare:>7.1f}"
            )
            print(f"{row}{lines / bare:>9.0f}")
        print()
        print(
            f"appending {args.append_kb:g} KB to a Claude Code session (incremental vs full parse, median s)"
        )
        print(f"{'size MB':>8}{'full parse':>12}{'incremental':>13}{'bytes read':>12}{'ratio':>8}")
        source, fixture = CASES[0]
        adapter = adapter_for(source)
        append = fixture.read_bytes().splitlines(keepends=True)[-1]
        append = append * max(1, int(args.append_kb * 1024 / len(append)))
        incremental_times = []
        for size in sizes:
            path = tmp / f"s{size}-{fixture.name}"
            grow(fixture, path, size)
            first = adapter.parse(path, with_items=False)
            with path.open("ab") as handle:
                handle.write(append)
            full = median_time(functools.partial(adapter.parse, path, with_items=False), args.repeat)
            inc = median_time(
                functools.partial(adapter.parse, path, first.new_offset, first.state, with_items=False),
                args.repeat,
            )
            result = adapter.parse(path, first.new_offset, first.state, with_items=False)
            incremental_times.append(inc)
            read = result.new_offset - first.new_offset
            print(f"{path.stat().st_size / 1e6:>8.1f}{full:>12.4f}{inc:>13.5f}{read:>12,}{full / inc:>8.0f}x")
        spread = max(incremental_times) / min(incremental_times)
        print(
            f"incremental cost across a {sizes[-1] // sizes[0]}x size range: {spread:.2f}x (flat = follows appended bytes)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
