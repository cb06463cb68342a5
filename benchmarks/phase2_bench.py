"""Phase 2's own cost (everything but the model), against the plain git and SDK baselines.

    .venv/bin/python benchmarks/phase2_bench.py [--repeat 7] [--scopes 40] [--topics 30] [--inputs 20] [--tool-calls 200]

Builds, in a temporary directory, a memory repository with ``--scopes`` project scopes of
``--topics`` topic files each, then times side by side, alternating, median of ``--repeat``:

- baseline: the same edit (one topic file changed, inputs rewritten) committed in place with
  ``git add -A && git commit`` (what an unsafe in-place run would cost);
- memd: a scratch clone, materializing ``--inputs`` inputs, the workspace diff, the post-agent check
  (provenance, validation with the real secret gate), the commit and the fast-forward landing.

Then the memory tool: ``--tool-calls`` ``str_replace`` calls through the SDK's ``BetaAsyncLocalFilesystemMemoryTool``
against the same calls through memd's ``ConfinedMemoryTool`` (the confinement's overhead per call).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.consolidate import workspace
from pipeline.consolidate.plan import ScopePlan
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import Caps
from pipeline.memory.inputs import InputRecord
from pipeline.redaction import Redactor
from pipeline.settings import MemoriesSettings

CAPS = Caps.of(MemoriesSettings())  # the caps a default installation runs with
T0 = datetime(2026, 11, 1, tzinfo=UTC)


WORDS = [f"{a}{b}" for a in ("build", "test", "lint", "ship", "cache", "sync") for b in range(60)]


def topic(i: int, sources: str) -> str:
    """A topic of 25 facts in words of its own (two topics never read as duplicates)."""
    pick = random.Random(i).choice
    body = "".join(
        f"- fact {i}.{j}: run `make {pick(WORDS)}` before {pick(WORDS)} {pick(WORDS)}; about {j} minutes\n"
        for j in range(25)
    )
    return (
        f"---\nname: Topic {i}\ndescription: facts about area {i}\ntype: project\ncreated: 2026-10-01\n"
        f"updated: 2026-10-01\nsources: [{sources}]\n---\n{body}"
    )


def build(root: Path, scopes: int, topics: int) -> MemoryRepo:
    repo = root / "memory"
    for s in range(scopes):
        folder = repo / "projects" / f"p{s}-0000000{s % 10}"
        (folder / "rollout_summaries").mkdir(parents=True)
        index = "# Index\n" + "".join(f"- [Topic {i}](t{i}.md) — area {i}\n" for i in range(topics))
        (folder / "MEMORY.md").write_text(index)
        (folder / "memory_summary.md").write_text("The user works on this project.\n" * 20)
        for i in range(topics):
            (folder / f"t{i}.md").write_text(topic(i, '"s0"'))
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    env = ["-c", "user.name=b", "-c", "user.email=b@x"]
    subprocess.run(["git", *env, "commit", "-q", "-m", "seed"], cwd=repo, check=True)
    return MemoryRepo(repo)


def inputs(scope: str, n: int, round_: int) -> list[InputRecord]:
    at = T0 + timedelta(minutes=round_)
    return [
        InputRecord(
            i,
            f"s{i}",
            "claude_code",
            "/p",
            scope,
            f"task {i}",
            f"summary {i} round {round_}\n" * 30,
            f"- memory {i} round {round_}\n" * 20,
            at,
            at,
            at,
        )
        for i in range(n)
    ]


async def memd_run(
    repo: MemoryRepo, scratch: Path, scope: str, n_inputs: int, round_: int, redactor: Redactor
) -> None:
    plan = ScopePlan(scope, "consolidate", inputs(scope, n_inputs, round_))
    base = await repo.head()
    assert base is not None
    async with repo.scratch(scratch, owner="bench", paths=[scope]) as clone:
        ws = await workspace.prepare(clone, plan, clean=lambda t: redactor.redact(t).text)
        (ws.scope_dir / "t0.md").write_text(topic(0, '"s0"') + f"- new fact {round_}\n")  # the "agent"
        checked = await workspace.check(
            ws, plan, caps=CAPS, finder=redactor, today=date(2026, 11, 1), forgotten=set()
        )
        assert not checked.findings, checked.findings
        await workspace.commit(ws, f"memd: bench {round_}\n")
        await repo.land(clone, base=base)


def baseline_run(repo: MemoryRepo, scope: str, n_inputs: int, round_: int) -> None:
    from pipeline.memory.inputs import materialize

    folder = repo.path / scope
    materialize(folder, inputs(scope, n_inputs, round_))
    (folder / "t0.md").write_text(topic(0, '"s0"') + f"- new fact {round_} baseline\n")
    subprocess.run(["git", "add", "-A"], cwd=repo.path, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "-m", "b"],
        cwd=repo.path,
        check=True,
    )


async def tool_calls(root: Path, n: int) -> tuple[float, float]:
    from anthropic.tools import BetaAsyncLocalFilesystemMemoryTool

    from pipeline.llm.memory_tool import ConfinedMemoryTool

    sdk_root = root / "sdk"
    (sdk_root / "memories").mkdir(parents=True)
    (sdk_root / "memories" / "t.md").write_text("x0\n")
    ours = root / "ours"
    ours.mkdir()
    (ours / "t.md").write_text("x0\n")
    sdk = BetaAsyncLocalFilesystemMemoryTool(str(sdk_root))
    confined = ConfinedMemoryTool(ours, max_bytes_for=CAPS.max_bytes_for)
    times = {}
    for name, tool in (("sdk", sdk), ("memd", confined)):
        start = time.perf_counter()
        for i in range(n):
            await tool.call(
                {
                    "command": "str_replace",
                    "path": "/memories/t.md",
                    "old_str": f"x{i}\n",
                    "new_str": f"x{i + 1}\n",
                }
            )
        times[name] = (time.perf_counter() - start) / n
    return times["sdk"], times["memd"]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scopes", type=int, default=40)
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--inputs", type=int, default=20)
    parser.add_argument("--tool-calls", type=int, default=200, help="str_replace calls timed per memory tool")
    args = parser.parse_args()
    redactor = Redactor(b"benchmark-key-0123456789")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = build(root, args.scopes, args.topics)
        scope = "projects/p0-00000000"
        files = sum(1 for _ in repo.path.rglob("*.md"))
        base_t, memd_t = [], []
        for r in range(args.repeat):
            start = time.perf_counter()
            baseline_run(repo, scope, args.inputs, 2 * r)
            base_t.append(time.perf_counter() - start)
            start = time.perf_counter()
            await memd_run(repo, root / "scratch", scope, args.inputs, 2 * r + 1, redactor)
            memd_t.append(time.perf_counter() - start)
        sdk_call, memd_call = await tool_calls(root / "tool", args.tool_calls)
    b, m = statistics.median(base_t), statistics.median(memd_t)
    print(
        f"repository: {args.scopes} scopes x {args.topics} topics ({files} .md files), {args.inputs} inputs per run"
    )
    print(
        f"one run, model excluded   baseline in-place git commit {b * 1000:8.1f} ms   memd scratch+check+land {m * 1000:8.1f} ms   ({m / b:.1f}x)"
    )
    print(
        f"memory tool str_replace   SDK tool {sdk_call * 1e6:8.0f} us/call             memd confined tool {memd_call * 1e6:8.0f} us/call   ({memd_call / sdk_call:.2f}x)"
    )


if __name__ == "__main__":
    asyncio.run(main())
