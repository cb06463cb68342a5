"""Newer wins, by rule: a value changed twice across three sessions, and what gets published.

Three Claude Code sessions of one project, days apart, each with the user stating the staging port
(8000, then 8001, then 8443), arrive one per cycle; each cycle runs the whole pipeline (scan,
extract, consolidate, publish: ``tests/daemon/cycle_support.py``) against the loopback fake of the
Messages API. The scripted phase-1 model returns the value the user's turn in its request stated,
keyed ``staging-port``; the scripted consolidation model is the careless one users complain about:
it reads ``raw_memories.md`` and appends every session's statement to ``staging.md`` (it never reads
memd's "Changed values" block), and in a repair turn drops the lines stating a value the findings name.

memd: the pipeline as it is (changed values marked, the check after phase 2, one repair turn).
Baseline: the same run with the check switched off (what the model alone publishes). The figures
are read from the topic file the publish step wrote to Claude Code's memory folder, and from the
consolidation runs (repair turns taken, runs refused).

``--live`` (``live``) replays the same sessions through the real model in both phases, with the
check and without: whether a model told the changed values still publishes a superseded one, and
what memd's replay spent per session and per consolidation (``benchmarks/quality/spend.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

from structlog.testing import capture_logs

from benchmarks.quality import Figure, spend
from benchmarks.quality.spend import Spent
from pipeline.memory.current import FORMER, stated_lines
from tests.daemon.cycle_support import Answers, agent_folder, home_env, running, settings_of
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import done, last_user_text, mem, tool_results, turn
from tests.pipeline.extract.support import extract_output
from tests.pipeline.sources.shell_sessions import Exchange, write_exchanges
from tests.source_names import SourceName

NAME = "newer wins"
VALUES = ("8000", "8001", "8443")
DAYS = (1, 5, 9)
TOPIC = "staging.md"
STATED = re.compile(r"staging port is now (\S+?)\.?$", re.M)
FINDING = re.compile(rf"{re.escape(TOPIC)} line \d+ states \S+ as '([^']+)', superseded")


def extract(body: dict[str, Any]) -> dict[str, Any]:
    """A phase-1 answer from the request: the value the user's turn states, keyed, with its date."""
    text = str(body["messages"][0]["content"])
    value = STATED.findall(text)[-1]
    day = re.search(r"^- Last activity: (\d{4}-\d\d-\d\d)", text, re.M)
    memory = {
        **extract_output()["memories"][0],
        "type": "project",
        "name": "Staging port",
        "description": "Which port the staging server listens on.",
        "body": f"The staging port is {value}.",
        "key": "staging-port",
        "value": value,
        "dates": [day.group(1)] if day else [],
        "evidence_quote": f"staging port is now {value}",
    }
    return extract_output(raw_memory=f"- The staging port is {value}.", memories=[memory])


def _topic(lines: list[str]) -> str:
    head = "---\nname: Staging\ndescription: the staging server\ntype: project\n---\n"
    return head + "".join(line + "\n" for line in lines)


class Appender:
    """The careless consolidation model: every session's statement appended, flagged lines dropped."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, body: dict[str, Any]) -> list[FakeResponse]:
        assistants = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if assistants == 0:
            return [turn(mem("view", path="/memories/raw_memories.md"))]
        if assistants == 1:
            raw = "\n".join(str(r.get("content", "")) for r in tool_results(body))
            self.lines = [
                f"- The staging port is {v}." for v in re.findall(r"The staging port is (\S+?)\.", raw)
            ]
            index = f"# Memory index\n\n- [Staging]({TOPIC}) — the staging server\n"
            return [
                turn(
                    mem("create", path=f"/memories/{TOPIC}", file_text=_topic(self.lines)),
                    mem("create", path="/memories/MEMORY.md", file_text=index),
                    mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nA shop.\n"),
                )
            ]
        flagged = set(FINDING.findall(last_user_text(body)))
        if flagged and not tool_results(body):  # the repair prompt, not a tool's answer
            self.lines = [x for x in self.lines if not any(f" {v}." in x for v in flagged)]
            return [turn(mem("create", path=f"/memories/{TOPIC}", file_text=_topic(self.lines)))]
        return [done()]


def published_topic(result: object) -> str | None:
    """The topic the publish step wrote to Claude Code's memory folder in this cycle, if any."""
    for step in getattr(result, "results", []):
        report = step.report
        for target in getattr(report, "results", ()):
            for path in getattr(target, "written", ()):
                if target.target == "claude_code" and path.endswith(f"memd-{Path(TOPIC).stem}.md"):
                    return Path(path).read_text(encoding="utf-8")
    return None


@contextmanager
def unchecked() -> Iterator[None]:
    """The baseline: phase 2 without memd's check of superseded values."""
    with mock.patch("pipeline.consolidate.workspace.superseded_findings", return_value=[]):
        yield


@dataclass
class Replayed:
    published: str | None
    """The topic the last publish wrote to Claude Code's memory folder."""
    repairs: int
    """Repair turns the consolidation runs took (memd logs each)."""
    refused: int
    """Consolidation runs refused (findings left after the repair turn)."""
    spent: Spent


async def cycles(workdir: Path, base_url: str | None, api_key: str, *, checked: bool) -> Replayed:
    """The three sessions, one cycle each, against the API at ``base_url`` (None: the real one)."""
    # each session is consolidated in its own cycle, as it would be days apart
    env = home_env(workdir, base_url, api_key=api_key, MEMD_SCHEDULE__CONSOLIDATE_COOLDOWN_MINUTES="0")
    project = workdir / "work" / "shop"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    settings = settings_of(env)
    published: str | None = None
    paths: list[Path] = []
    spent = Spent()
    refused = 0
    with contextlib.nullcontext() if checked else unchecked(), capture_logs() as logged:
        async with running(settings, env) as cycle:
            for n, (value, day) in enumerate(zip(VALUES, DAYS, strict=True)):
                at = datetime(2026, 11, day, 10, 0, tzinfo=UTC)
                said = Exchange(f"The staging port is now {value}.", (("make staging", "ok"),), at=at)
                paths.append(
                    write_exchanges(
                        SourceName.CLAUDE_CODE,
                        agent_folder(env, SourceName.CLAUDE_CODE),
                        [said],
                        sid=f"5e55c0de-0000-4000-8000-00000000000{n}",
                        cwd=str(project),
                    )
                )
                result = await cycle()
                failed = [
                    f"{r.name}: {r.error}" for r in result.results if r.failed and r.name != "consolidate"
                ]
                if failed:
                    raise RuntimeError(f"cycle {n + 1} failed: {failed}")
                refused += sum(
                    1
                    for step in result.results
                    if step.name == "consolidate"
                    for s in getattr(step.report, "scopes", ())
                    if s.outcome == "failed"
                )
                spent.consolidations += spend.consolidations(result, settings.llm.consolidation_model)
                published = published_topic(result) or published
    spent.sessions = await spend.sessions(settings.paths.state_db, paths)
    spent.whole = spend.whole_tokens(paths)
    repairs = sum(1 for e in logged if e.get("event") == "consolidation_repair_turn")
    return Replayed(published, repairs, refused, spent)


async def replay(workdir: Path, *, checked: bool) -> tuple[str | None, int]:
    """Offline: the three sessions with the scripted models; the last published topic and the
    repair turns taken."""
    api = FakeAnthropicAPI().start()
    api.responder = Answers(extract=extract, consolidate=Appender())
    try:
        done = await cycles(workdir, api.base_url, FAKE_API_KEY, checked=checked)
    finally:
        api.stop()
    return done.published, done.repairs


def stated(text: str | None) -> list[str]:
    """The values a published topic states as current (a line marked as former does not count)."""
    if text is None:
        return []
    lines = [line for line in stated_lines(text) if not FORMER.search(line)]
    return [v for v in VALUES if any(re.search(rf"(?<!\w){v}(?!\w)", line) for line in lines)]


def _figures(memd: Replayed, base: Replayed) -> list[Figure]:
    ours, theirs = stated(memd.published), stated(base.published)
    last = VALUES[-1]
    return [
        Figure(
            "values the published topic states (changed twice over 3 sessions)",
            ", ".join(ours) or "none",
            ", ".join(theirs) or "none",
            f"only the last: {last}",
            ours == [last],
        ),
        Figure("repair turns taken over the 3 runs", str(memd.repairs), str(base.repairs)),
        Figure("runs refused over the 3 runs", str(memd.refused), str(base.refused)),
    ]


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    api = FakeAnthropicAPI().start()
    api.responder = Answers(extract=extract, consolidate=Appender())
    try:
        memd = asyncio.run(cycles(workdir / "memd", api.base_url, FAKE_API_KEY, checked=True))
        base = asyncio.run(cycles(workdir / "baseline", api.base_url, FAKE_API_KEY, checked=False))
    finally:
        api.stop()
    return [replace(f, name=f"{f.name} (scripted model)") for f in _figures(memd, base)]


def live(workdir: Path, *, tiny: bool) -> list[Figure]:
    """The same sessions through the real model, with the check and without; what memd's run spent."""
    base_url, key = spend.live_api()
    memd = asyncio.run(cycles(workdir / "memd", base_url, key, checked=True))
    base = asyncio.run(cycles(workdir / "baseline", base_url, key, checked=False))
    return _figures(memd, base) + spend.figures(memd.spent)
