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
are read from the topic file the publish step wrote to Claude Code's memory folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

from benchmarks.quality import Figure
from pipeline.memory.current import FORMER, stated_lines
from pipeline.vocabulary import SourceName
from tests.daemon.cycle_support import Answers, agent_folder, home_env, running, settings_of
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse
from tests.pipeline.consolidate.support import done, last_user_text, mem, tool_results, turn
from tests.pipeline.extract.support import extract_output
from tests.pipeline.sources.shell_sessions import Exchange, write_exchanges

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
        self.repairs = 0

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
            self.repairs += 1
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


async def replay(workdir: Path, *, checked: bool) -> tuple[str | None, int]:
    """The three sessions, one cycle each; the last published topic and the repair turns taken."""
    api = FakeAnthropicAPI().start()
    model = Appender()
    api.responder = Answers(extract=extract, consolidate=model)
    try:
        # each session is consolidated in its own cycle, as it would be days apart
        env = home_env(workdir, api.base_url, MEMD_SCHEDULE__CONSOLIDATE_COOLDOWN_MINUTES="0")
        project = workdir / "work" / "shop"
        project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
        settings = settings_of(env)
        published: str | None = None
        with contextlib.nullcontext() if checked else unchecked():
            async with running(settings, env) as cycle:
                for n, (value, day) in enumerate(zip(VALUES, DAYS, strict=True)):
                    at = datetime(2026, 11, day, 10, 0, tzinfo=UTC)
                    said = Exchange(f"The staging port is now {value}.", (("make staging", "ok"),), at=at)
                    write_exchanges(
                        SourceName.CLAUDE_CODE,
                        agent_folder(env, SourceName.CLAUDE_CODE),
                        [said],
                        sid=f"5e55c0de-0000-4000-8000-00000000000{n}",
                        cwd=str(project),
                    )
                    result = await cycle()
                    failed = [f"{r.name}: {r.error}" for r in result.results if r.failed]
                    if failed:
                        raise RuntimeError(f"cycle {n + 1} failed: {failed}")
                    published = published_topic(result) or published
        return published, model.repairs
    finally:
        api.stop()


def stated(text: str | None) -> list[str]:
    """The values a published topic states as current (a line marked as former does not count)."""
    if text is None:
        return []
    lines = [line for line in stated_lines(text) if not FORMER.search(line)]
    return [v for v in VALUES if any(re.search(rf"(?<!\w){v}(?!\w)", line) for line in lines)]


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    memd, repairs = asyncio.run(replay(workdir / "memd", checked=True))
    base, base_repairs = asyncio.run(replay(workdir / "baseline", checked=False))
    ours, theirs = stated(memd), stated(base)
    last = VALUES[-1]
    return [
        Figure(
            "values the published topic states (changed twice over 3 sessions)",
            ", ".join(ours) or "none",
            ", ".join(theirs) or "none",
            f"only the last: {last}",
            ours == [last],
        ),
        Figure("repair turns taken over the 3 runs", str(repairs), str(base_repairs)),
    ]
