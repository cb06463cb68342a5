"""How long each page of `memd ui` takes, next to a static file served by the same stack in the same run.

Builds a throwaway HOME (``seed``, which the browser test of the overview's height reuses) whose
state store holds --sessions sessions (`memd status`'s bench store, plus a month of model calls,
extracts with redaction counts, every scope published to three targets, a forgotten scope's
withdrawn copies and a pending inbox run) and whose memory repository holds --scopes scopes of
--topics topic files each (committed with git), starts `memd ui --port 0` as
installed, then asks every page in turn, --runs times each, over one keep-alive connection with the
page's cookie, and prints the median, the 95th percentile and the slowest answer of each page
beside the baseline (the stylesheet, through the same middleware and server). Target: every
page's 95th percentile within 200 ms.

    .venv/bin/python benchmarks/ui_bench.py [--runs 25] [--sessions 5000] [--scopes 40] [--topics 30]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

from sqlalchemy import insert

from benchmarks.bytecode import compile_sources
from benchmarks.status_bench import populate
from daemon.config import load_settings
from daemon.runtime import memory_repo
from pipeline.machine import machine_id
from pipeline.projects import scope_for
from pipeline.settings import Settings
from pipeline.store import open_store
from pipeline.store.schema import consolidation_runs, llm_calls, publications, stage1_outputs

TARGET_MS = 200.0
BASELINE = "/static/memd.css"
RUN_ID = "20261201T000000Z-bench0"


def topic_text(scope: int, topic: int, now: datetime) -> str:
    body = "\n".join(
        f"- Rule {i} of topic {topic}: run `make test-{i}` before pushing; see docs/{i}.md."
        for i in range(30)
    )
    return (
        f"---\nname: Topic {topic} of scope {scope}\ndescription: What to know about area {topic}\n"
        f"type: project\ncreated: {now.date()}\nupdated: {now.date()}\n"
        f'sources: ["s{scope}", "s{scope + 40}"]\n---\n# Area {topic}\n\n{body}\n'
    )


async def build_memory(settings: Settings, scopes: int, topics: int, now: datetime) -> tuple[str, str]:
    """The repository: ``scopes`` x ``topics`` files in two commits (so files have history), and an
    inbox branch changing one scope. Returns (first scope, its first topic)."""
    repo = memory_repo(settings)
    await repo.ensure()
    for rnd in range(2):
        for s in range(scopes):
            folder = repo.path / "projects" / scope_for(f"/bench/p{s}").split("/")[1]
            folder.mkdir(parents=True, exist_ok=True)
            for t in range(topics):
                text = topic_text(s, t, now) + (f"\nRevised in round {rnd}.\n" if rnd else "")
                (folder / f"topic-{t:02}.md").write_text(text)
            index = "".join(f"- [topic-{t:02}.md](topic-{t:02}.md) — area {t}\n" for t in range(topics))
            (folder / "MEMORY.md").write_text(f"# Memory index\n\n{index}")
            (folder / "memory_summary.md").write_text(f"# Summary\n\nScope {s} works on the bench.\n")
        await repo.git("add", "-A")
        await repo.git("commit", "-q", "-m", f"bench round {rnd}")
    first = scope_for("/bench/p0")
    await repo.git("checkout", "-q", "-b", f"inbox/{RUN_ID}")
    (repo.path / first / "topic-00.md").write_text(topic_text(0, 0, now) + "\nProposed change.\n")
    await repo.git("commit", "-q", "-am", f"memd: consolidate {first}\n\nMemd-Run: {RUN_ID}")
    await repo.git("checkout", "-q", "main")
    return first, "topic-00.md"


async def build_store(
    env: dict[str, str], settings: Settings, sessions: int, now: datetime, *, scopes: int = 40
) -> None:
    """`memd status`'s bench store (sessions, memory uses, publications, runs, a heartbeat), plus
    what the page shows beyond it: a month of model calls, extracts, every scope on three publish
    targets (some skipped), a forgotten scope's withdrawn copies, a run waiting in the inbox."""
    await populate(env, sessions)
    store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    try:
        async with store.write() as conn:
            await conn.execute(
                insert(stage1_outputs),
                [
                    {
                        "transcript_id": n + 1,
                        "source": "claude_code",
                        "session_id": f"s{n}",
                        "project": f"/bench/p{n % 20}",
                        "scope": scope_for(f"/bench/p{n % 20}"),
                        "range_start": 0,
                        "range_end": 100,
                        "rollout_slug": f"slug {n}",
                        "rollout_summary": "summary",
                        "raw_memory": "- a memory",
                        "memories": [],
                        "redactions": {"input": {"github-token": 1}, "output": {}},
                        "model": "claude-haiku-5-5",
                        "usage": {},
                        "created_at": now,
                    }
                    for n in range(0, sessions, 5)
                ],
            )
            await conn.execute(
                insert(llm_calls),
                [
                    {
                        "at": now - timedelta(hours=n % (30 * 24)),
                        "phase": "extract",
                        "model": "claude-haiku-5-5",
                        "job_key": f"extract:s{n}",
                        "input_tokens": 3000,
                        "output_tokens": 400,
                        "cost_usd": 0.004,
                        "outcome": "ok",
                    }
                    for n in range(sessions * 2)
                ],
            )
            await conn.execute(
                insert(publications),
                [
                    {
                        "machine": store.machine,
                        "target": target,
                        "scope": scope_for(folder),
                        "path": f"{folder}/{target}",
                        "published_at": now,
                        "outcome": outcome,
                        "reason": "disabled for this project" if outcome == "skipped" else None,
                    }
                    for target, first in (("claude_code", 20), ("codex", 0), ("gemini", 0))
                    for p in range(first, scopes)
                    for folder, outcome in [(f"/bench/p{p}", "skipped" if p % 7 == 0 else "unchanged")]
                ]
                + [
                    {
                        "machine": store.machine,
                        "target": target,
                        "scope": scope_for("/bench/forgotten"),
                        "path": f"/bench/forgotten/{target}",
                        "published_at": now,
                        "outcome": "withdrawn",
                        "reason": "the scope was forgotten",
                    }
                    for target in ("claude_code", "codex", "gemini")
                ],
            )
            await conn.execute(
                insert(consolidation_runs).values(
                    run_id=RUN_ID,
                    scope=scope_for("/bench/p0"),
                    mode="inbox",
                    started_at=now,
                    finished_at=now,
                    outcome="pending_review",
                    branch=f"inbox/{RUN_ID}",
                    inputs={"added": ["s0"], "removed": [], "ids": []},
                    usage={},
                )
            )
    finally:
        await store.close()


async def seed(
    env: dict[str, str], *, sessions: int, scopes: int, topics: int
) -> tuple[str, str, tuple[str, str]]:
    """The whole bench HOME of ``env``: (its first scope, that scope's first topic, the topic's two
    commits, older first)."""
    settings = load_settings(None, env=env).settings
    now = datetime.now(UTC)
    scope, topic = await build_memory(settings, scopes, topics, now)
    await build_store(env, settings, sessions, now, scopes=scopes)
    commits = await memory_repo(settings).log(scope, limit=2)
    return scope, topic, (commits[1].sha, commits[0].sha)


def pages(scope: str, topic: str, commits: tuple[str, str]) -> list[str]:
    at = {"scope": scope, "file": topic}
    return [
        BASELINE,
        "/",
        "/publish",
        "/usage",
        "/memory",
        "/memory/scope?" + urlencode({"scope": scope}),
        "/memory/topic?" + urlencode(at),
        "/memory/history?" + urlencode(at),
        "/memory/diff?" + urlencode({**at, "from": commits[0], "to": commits[1]}),
        "/memory/search?q=make+test-7",
        "/inbox",
        "/inbox/run?" + urlencode({"id": RUN_ID}),
        "/sessions",
        "/sessions?page=40",
        "/sessions?state=failed",
        "/sessions/detail?session=s40",
        "/forget?session=s40",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--scopes", type=int, default=40)
    parser.add_argument("--topics", type=int, default=30)
    args = parser.parse_args()
    compile_sources()  # as installed: see benchmarks/bytecode.py
    memd = Path(sys.executable).parent / "memd"
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_"))}
        env["HOME"] = tmp
        env["MEMD_REVIEW__MODE"] = "inbox"
        scope, topic, commits = asyncio.run(
            seed(env, sessions=args.sessions, scopes=args.scopes, topics=args.topics)
        )
        paths = pages(scope, topic, commits)
        out = Path(tmp) / "ui.out"
        with out.open("wb") as sink:
            proc = subprocess.Popen(
                [str(memd), "ui", "--port", "0"], env=env, stdout=sink, stderr=subprocess.STDOUT
            )
        try:
            samples = measure(proc, out, paths, args.runs)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    report(samples, args)


def measure(proc: subprocess.Popen[bytes], out: Path, paths: list[str], runs: int) -> dict[str, list[float]]:
    deadline = time.monotonic() + 60
    found = None
    while found is None and time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"open http://127\.0\.0\.1:(\d+)/\?token=(\S+)", out.read_text())
        time.sleep(0.05)
    if found is None:
        sys.exit(f"memd ui printed no address:\n{out.read_text()}")
    port, token = int(found.group(1)), found.group(2)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Cookie": f"memd_ui_{port}={token}"}

    def get(path: str) -> float:
        t0 = time.perf_counter()
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        elapsed = time.perf_counter() - t0
        if response.status != 200:
            sys.exit(f"{path}: HTTP {response.status}")
        return elapsed

    for path in paths:  # warm: first imports, the page cache, git's object cache
        get(path)
    samples: dict[str, list[float]] = {path: [] for path in paths}
    for _ in range(runs):
        for path in paths:
            samples[path].append(get(path))
    conn.close()
    return samples


def report(samples: dict[str, list[float]], args: argparse.Namespace) -> None:
    base = statistics.median(samples[BASELINE])
    print(
        f"runs: {args.runs} each, interleaved; store: {args.sessions} sessions; "
        f"memory: {args.scopes} scopes x {args.topics} topic files"
    )
    print(f"{'page':<58} {'median':>8} {'p95':>8} {'max':>8}  vs baseline")
    worst = 0.0
    for path, values in samples.items():
        values = sorted(values)
        median = statistics.median(values)
        p95 = values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]
        worst = max(worst, p95) if path != BASELINE else worst
        label = f"{path[:50]}{' (baseline)' if path == BASELINE else ''}"
        print(
            f"{label:<58} {median * 1000:6.1f}ms {p95 * 1000:6.1f}ms {values[-1] * 1000:6.1f}ms  {median / base:6.1f}x"
        )
    verdict = "ok" if worst * 1000 <= TARGET_MS else "OVER"
    print(f"slowest page's p95: {worst * 1000:.1f} ms (target <= {TARGET_MS:.0f} ms): {verdict}")


if __name__ == "__main__":
    main()
