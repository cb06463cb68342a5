"""No duplicates land: phase 2 replayed with scripted models that write one fact in several topic
files (the "one fact written 64 times" of anthropics/claude-code#79217).

Each scenario scope gets one session and a scripted consolidation: the model writes its topics,
some of them copies of another (under another name, or under the same name in another file, or the
index listing one topic twice); most scripted models merge them when memd's repair turn names them,
one model does not. The same scripts run twice in this run: through memd as it is, and with the
duplicate check switched off (the baseline: what a pipeline that leaves duplicates to the prompt
commits). Figures, counted from the memory repository each run left and from the runs' records:
duplicate topics that landed, the duplicates found and fixed, the runs refused.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.quality import Figure
from daemon.runtime import memory_repo
from pipeline.checks import duplicates
from pipeline.clock import FakeClock
from pipeline.consolidate.run import run_phase2
from pipeline.llm.client import build_client
from pipeline.memory.listing import list_scope
from pipeline.redaction import Redactor
from pipeline.store import consolidation as db
from pipeline.store import open_store
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, done, make_settings, mem, topic, turn, write_memory

NAME = "no duplicates land"
NO_LIVE = "the duplicates are the model's writing, scripted on purpose: memd's check of them is measured"
"""Why ``--live`` does not run it: its outcome does not depend on the model."""
COUNT = duplicates.check
"""The check as memd has it, to count what landed in both runs (the baseline switches it off)."""
FACTS = [
    "Run the test suite with make test from the repository root; it needs Docker running and the "
    "fixtures database seeded first with make seed, or the integration tests fail at once.",
    "Deploys go through the staging cluster first and reach production only after a day of soak; "
    "the release branch is tagged by the release script, never by hand.",
    "The API server reads its settings from config/app.toml and the environment; a value in the "
    "environment wins, and the server refuses to start on a key it does not know.",
    "Database migrations live in db/migrations and run with make migrate; a migration is never "
    "edited after it was merged, a new one is added instead.",
]


def _topics(fact_count: int, copies: int) -> tuple[dict[str, str], int]:
    """Topic files for ``fact_count`` facts, the first ``copies`` of them also written a second
    time under another file name (half of those under the same name); and the duplicates made."""
    topics: dict[str, str] = {}
    for i in range(fact_count):
        topics[f"fact-{i}.md"] = topic(f"Fact {i}", FACTS[i % len(FACTS)] + f" (case {i})")
    for i in range(copies):
        name = f"Fact {i}" if i % 2 else f"Notes about fact {i}"
        topics[f"copy-of-{i}.md"] = topic(name, "As noted: " + FACTS[i % len(FACTS)] + f" (case {i})")
    return topics, copies


def _script(topics: dict[str, str], copies: int, fixes: bool) -> list[FakeResponse]:
    script = write_memory(topics)
    if fixes:
        index = "# Memory index\n\n" + "".join(
            f"- [{n}]({n}) — about {n}\n" for n in topics if not n.startswith("copy-of-")
        )
        script += [
            turn(
                *(mem("delete", path=f"/memories/copy-of-{i}.md") for i in range(copies)),
                mem("create", path="/memories/MEMORY.md", file_text=index),
            ),
            done("Merged the duplicates."),
        ]
    else:
        script.append(done("The files are fine as they are."))
    return script


@contextmanager
def _no_check() -> Iterator[None]:
    """The baseline: the duplicate check finds nothing."""
    real = duplicates.check
    duplicates.check = lambda scope_dir, listing: []  # type: ignore[assignment]
    try:
        yield
    finally:
        duplicates.check = real


async def _replay(workdir: Path, cases: list[tuple[dict[str, str], int, bool]]) -> dict[str, Any]:
    api = FakeAnthropicAPI().start()
    store = await open_store(f"sqlite:///{workdir / 'state.db'}")
    clock = FakeClock(datetime(2026, 11, 1, 12, 0, tzinfo=UTC))
    settings = make_settings(workdir, api.base_url)
    llm = build_client(
        settings, store=store, clock=clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY}, rng=random.Random(1)
    )
    env = Env(workdir, store, clock, api, settings, llm, Redactor(b"quality-bench-key-0123456789abcd"))
    landed = found = fixed = refused = committed = 0
    try:
        for n, (topics, copies, fixes) in enumerate(cases):
            await env.add_extract(f"sess-{n}", project=f"/work/project-{n}")
            api.responder = ScriptedResponder(_script(topics, copies, fixes))
            [scope] = (await run_phase2(store, settings, env.repo, clock, llm, env.redactor)).scopes
            committed += scope.outcome == "committed"
            refused += scope.outcome == "failed"
            [run] = await db.list_runs(store, scope=scope.scope, limit=1)
            found += int(run.usage.get("duplicates_found", 0))
            fixed += int(run.usage.get("duplicates_fixed", 0))
            folder = memory_repo(settings).path / scope.scope
            if folder.is_dir():
                landed += duplicates.count(COUNT(folder, list_scope(folder)))
    finally:
        await llm.aclose()
        await store.close()
        api.stop()
    return {"landed": landed, "found": found, "fixed": fixed, "refused": refused, "committed": committed}


def _cases(tiny: bool) -> list[tuple[dict[str, str], int, bool]]:
    shapes = (
        [(3, 1, True), (4, 2, False)] if tiny else [(3, 1, True), (4, 2, True), (4, 3, True), (4, 2, False)]
    )
    return [(*_topics(facts, copies), fixes) for facts, copies, fixes in shapes]


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    cases = _cases(tiny)
    made = sum(copies for _, copies, _ in cases)
    (workdir / "memd").mkdir()
    (workdir / "baseline").mkdir()
    memd = asyncio.run(_replay(workdir / "memd", cases))
    with _no_check():
        base = asyncio.run(_replay(workdir / "baseline", cases))
    return [
        Figure("duplicates the scripted models wrote", str(made), str(made)),
        Figure(
            "duplicate topics that landed", str(memd["landed"]), str(base["landed"]), "0", memd["landed"] == 0
        ),
        Figure(
            "duplicates found / fixed by the repair turn",
            f"{memd['found']} / {memd['fixed']}",
            "not checked",
            f"found {made}",
            memd["found"] == made,
        ),
        Figure(
            "runs refused (duplicates left after the repair turn)",
            str(memd["refused"]),
            str(base["refused"]),
            "the one unfixed",
            memd["refused"] == sum(1 for *_, fixes in cases if not fixes),
        ),
        Figure("runs committed", str(memd["committed"]), str(base["committed"])),
    ]
