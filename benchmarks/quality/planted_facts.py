"""Planted facts and dead ends: what reaches the published memory, and what it costs.

Each session (Claude Code's format, one project, days apart) plants two facts the user states, each
carrying a unique token (the release branch ``rel-<token>``; the deploy command ``make ship-<token>``),
and one dead end: the agent runs ``./scripts/deploy-<token>.sh``, which does not exist, and the user
drops it. One whole cycle (scan, extract, consolidate, publish: ``tests/daemon/cycle_support.py``)
runs, and every file the publish step wrote is read back.

Figures: facts whose token reaches the published memory, out of those planted; dead ends kept as
facts (a published line with a dead end's token and no word saying it failed or is to be avoided,
``AVOIDED``), out of those planted. ``--live`` (``live``) runs it against the real API and adds
the tokens and cost per session (phase 1) and per consolidation (phase 2), beside the whole session
sent as it is (``benchmarks/quality/spend.py``). Offline (``run``), the model is scripted and naive:
phase 1 keeps every user turn, phase 2 keeps every raw note, so the figures check memd's own path
(render, redaction, consolidation, publishing), not a model.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import subprocess
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.quality import Figure, spend
from benchmarks.quality.spend import Spent
from tests.daemon.cycle_support import Answers, agent_folder, home_env, running, settings_of
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import done, mem, tool_results, turn
from tests.pipeline.extract.support import extract_output
from tests.pipeline.sources.shell_sessions import Exchange, write_exchanges
from tests.source_names import SourceName

NAME = "planted facts"
AVOIDED = re.compile(
    r"\b(?:not|no|never|don't|do not|doesn't|does not|didn't|avoid|dead end|failed|fails|missing|"
    r"instead|stop|stopped|forget|wrong|abandon\w*|exist)\b",
    re.IGNORECASE,
)
FILLER = "\n".join(f"  origin/feature-{n:03d}" for n in range(40))


@dataclass(frozen=True)
class Planted:
    facts: tuple[str, ...]
    dead_ends: tuple[str, ...]
    paths: tuple[Path, ...]


def plant(env: dict[str, str], project: Path, sessions: int) -> Planted:
    facts: list[str] = []
    dead: list[str] = []
    paths: list[Path] = []
    for n in range(sessions):
        branch, ship, deploy = (f"zq{secrets.token_hex(3)}" for _ in range(3))
        at = datetime(2026, 11, 1 + 4 * n, 10, 0, tzinfo=UTC)
        said = [
            Exchange(
                f"Remember for this project: the release branch is named rel-{branch}.",
                (("git branch -a", FILLER),),
                f"Noted: releases go on rel-{branch}.",
                at=at,
            ),
            Exchange(
                "Deploy it to staging please.",
                (
                    (
                        f"./scripts/deploy-{deploy}.sh staging",
                        f"bash: ./scripts/deploy-{deploy}.sh: No such file or directory",
                    ),
                ),
                f"The script deploy-{deploy}.sh does not exist, so that approach is a dead end; I stopped there.",
                at=at.replace(minute=5),
            ),
            Exchange(
                f"Forget that script. We deploy with `make ship-{ship}` instead.",
                ((f"make ship-{ship}", "shipped to staging"),),
                f"Deployed with make ship-{ship}.",
                at=at.replace(minute=10),
            ),
        ]
        paths.append(
            write_exchanges(
                SourceName.CLAUDE_CODE,
                agent_folder(env, SourceName.CLAUDE_CODE),
                said,
                sid=f"91a27ed0-0000-4000-8000-{n:012d}",
                cwd=str(project),
            )
        )
        facts += [branch, ship]
        dead.append(deploy)
    return Planted(tuple(facts), tuple(dead), tuple(paths))


USER_TURN = re.compile(r"^\[user [^\]]*\]\n(.+)$", re.M)


def naive_extract(body: dict[str, Any]) -> dict[str, Any]:
    """Phase 1, scripted and naive: every user turn of the request becomes a note."""
    said = USER_TURN.findall(str(body["messages"][0]["content"]))
    return extract_output(raw_memory="".join(f"- {s}\n" for s in said))


def naive_consolidate(body: dict[str, Any]) -> list[FakeResponse]:
    """Phase 2, scripted and naive: every note of ``raw_memories.md`` goes into one topic."""
    assistants = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if assistants == 0:
        return [turn(mem("view", path="/memories/raw_memories.md"))]
    if assistants > 1:
        return [done()]
    raw = "\n".join(str(r.get("content", "")) for r in tool_results(body))
    notes = [m.group(1) for m in re.finditer(r"^\s*\d*\s*(- (?:Remember|Forget|Deploy).*)$", raw, re.M)]
    topic = (
        "---\nname: Notes\ndescription: what the sessions taught\ntype: project\n---\n"
        + "\n".join(notes)
        + "\n"
    )
    index = "# Memory index\n\n- [Notes](notes.md) — what the sessions taught\n"
    return [
        turn(
            mem("create", path="/memories/notes.md", file_text=topic),
            mem("create", path="/memories/MEMORY.md", file_text=index),
            mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nA shop.\n"),
        )
    ]


@dataclass(frozen=True)
class Outcome:
    planted: Planted
    published: str
    spent: Spent


async def replay(workdir: Path, base_url: str | None, api_key: str, sessions: int) -> Outcome:
    env = home_env(workdir, base_url, api_key=api_key)
    project = workdir / "work" / "shop"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    planted = plant(env, project, sessions)
    settings = settings_of(env)
    async with running(settings, env) as cycle:
        result = await cycle()
    failed = [f"{r.name}: {r.error}" for r in result.results if r.failed]
    if failed:
        raise RuntimeError(f"the cycle failed: {failed}")
    written: set[str] = set()
    for step in result.results:
        for target in getattr(step.report, "results", ()):
            written.update(getattr(target, "written", ()))
    paths = list(planted.paths)
    spent = Spent(
        await spend.sessions(settings.paths.state_db, paths),
        spend.whole_tokens(paths),
        spend.consolidations(result, settings.llm.consolidation_model),
    )
    published = "\n".join(Path(p).read_text(encoding="utf-8") for p in sorted(written) if Path(p).is_file())
    return Outcome(planted, published, spent)


def _kept_as_fact(text: str, token: str) -> bool:
    return any(token in line and not AVOIDED.search(line) for line in text.splitlines())


def figures(outcome: Outcome, *, costs: bool) -> list[Figure]:
    p = outcome.planted
    reached = sum(1 for t in p.facts if t in outcome.published)
    kept = sum(1 for t in p.dead_ends if _kept_as_fact(outcome.published, t))
    out = [
        Figure(
            "planted facts in the published memory",
            f"{reached}/{len(p.facts)}",
            f"{len(p.facts)} planted",
            "all",
            reached == len(p.facts),
        ),
        Figure(
            "dead ends kept as facts",
            f"{kept}/{len(p.dead_ends)}",
            f"{len(p.dead_ends)} planted",
            "0",
            kept == 0,
        ),
    ]
    return out + spend.figures(outcome.spent) if costs else out


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    api = FakeAnthropicAPI().start()
    api.responder = Answers(extract=naive_extract, consolidate=naive_consolidate)
    try:
        outcome = asyncio.run(replay(workdir, api.base_url, FAKE_API_KEY, 2 if tiny else 4))
    finally:
        api.stop()
    return [replace(f, name=f"{f.name} (scripted model)") for f in figures(outcome, costs=False)]


def live(workdir: Path, *, tiny: bool) -> list[Figure]:
    base_url, key = spend.live_api()
    return figures(asyncio.run(replay(workdir, base_url, key, 2 if tiny else 4)), costs=True)
