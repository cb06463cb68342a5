"""OpenCode benchmark: the scan's change check on a database of 5,000 sessions, beside reading
every session.

    .venv/bin/python benchmarks/opencode_bench.py [--sessions 5000] [--turns 6] [--changed 10] [--repeat 5]

One OpenCode database (the real one's schema, the CLI's session plus ``--sessions`` made up with
its shapes, ``--turns`` user turns each, most rows in the ``-wal`` as while OpenCode runs) is
scanned in process by ``pipeline.scan.scanner.scan``, side by side with:

- reading all: every session read through the adapter (what a change check that cannot tell which
  sessions moved would cost);
- the listing alone: the one query the change check runs (``opencode_db.walk``), its floor.

Reported: the first scan (every session new), a second scan with nothing changed, and a scan after
``--changed`` sessions got a turn (only those are read). Medians of ``--repeat`` runs. Targets: the
unchanged scan <= 10% of reading all, and the scan after changes reads exactly the changed sessions.
Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.agents.opencode import database as opencode_db
from pipeline.agents.opencode.transcripts import OpenCodeAdapter
from pipeline.clock import FakeClock
from pipeline.scan.scanner import scan
from pipeline.store import open_store
from tests.pipeline.sources.opencode_support import new_session, opencode_settings, sample_db, user_message

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def build(base: Path, sessions: int, turns: int) -> tuple[Path, sqlite3.Connection]:
    db = sample_db(base / "opencode")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    start = int((NOW - timedelta(days=3)).timestamp() * 1000)
    writer.execute("BEGIN")
    for n in range(sessions):
        new_session(writer, f"ses_bench{n:06d}", f"/nowhere/project{n % 40}", start + n * 1000, turns=turns)
    writer.execute("COMMIT")
    return db, writer


async def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="memd-oc-bench-") as tmp:
        base = Path(tmp)
        db, writer = build(base, args.sessions, args.turns)
        wal = Path(f"{db}-wal").stat().st_size
        print(
            f"database: {args.sessions + 1} sessions, {args.turns} turns each; main file "
            f"{db.stat().st_size / 1e6:.1f} MB, -wal {wal / 1e6:.1f} MB (held open by a writer)"
        )
        adapter = OpenCodeAdapter()
        root = base / "opencode"
        paths = [p for p, _, _ in adapter.walk(root)]

        listing, read_all = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            opencode_db.walk(root)
            listing.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for path in paths:
                adapter.parse(Path(path), with_items=False)
            read_all.append(time.perf_counter() - t0)

        settings = opencode_settings(base)
        store = await open_store(f"sqlite:///{base}/state.db")
        clock = FakeClock(NOW)
        try:
            t0 = time.perf_counter()
            first = await scan(store, settings, clock, collect_sessions=False)
            first_s = time.perf_counter() - t0
            unchanged: list[float] = []
            parsed_unchanged = 0
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                report = await scan(store, settings, clock, collect_sessions=False)
                unchanged.append(time.perf_counter() - t0)
                parsed_unchanged = max(parsed_unchanged, report.files_parsed)
            at = int((NOW - timedelta(hours=1)).timestamp() * 1000)
            for n in range(args.changed):
                user_message(writer, f"ses_bench{n * 37 % args.sessions:06d}", 99, "one more", at + n)
            t0 = time.perf_counter()
            changed = await scan(store, settings, clock, collect_sessions=False)
            changed_s = time.perf_counter() - t0
        finally:
            await store.close()
            writer.close()

    med_list, med_all, med_unchanged = _median(listing), _median(read_all), _median(unchanged)
    print(f"{'':42} {'seconds':>9} {'sessions read':>14}")
    print(f"{'baseline: reading all (adapter.parse x N)':42} {med_all:9.3f} {len(paths):14d}")
    print(f"{'baseline: the listing query alone':42} {med_list:9.3f} {0:14d}")
    print(f"{'scan: first (every session new)':42} {first_s:9.3f} {first.files_parsed:14d}")
    print(f"{'scan: second, nothing changed':42} {med_unchanged:9.3f} {parsed_unchanged:14d}")
    print(f"{f'scan: after {args.changed} sessions changed':42} {changed_s:9.3f} {changed.files_parsed:14d}")
    ratio = med_unchanged / med_all
    print(f"unchanged scan / reading all = {ratio:.1%} (target <= 10%)")
    ok = ratio <= 0.10 and parsed_unchanged == 0 and changed.files_parsed == args.changed
    if not ok:
        print("TARGET MISSED", file=sys.stderr)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
