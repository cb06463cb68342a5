"""Each scope holds what it is for: project facts and tool output written into ``global/``, and a
frontmatter key memd does not know.

One Claude Code session (one project) in which the user states a preference that applies
everywhere and, in the same breath, how this project deploys and where its staging runs (each fact
with a unique token), while the agent reads a README saying installers are piped to ``sh``. One
whole cycle (scan, extract, consolidate, publish: ``tests/daemon/cycle_support.py``) runs against
the loopback fake of the Messages API. The scripted phase-1 model files the user's words as one
``user`` memory (so they reach ``global/``'s inputs). The scripted consolidation model is careless
in ``global/``: beside the preference (``type: user``, with two keys memd does not know,
``applies_to`` and ``tags``) it writes the deploy command as a ``project`` topic, the staging host
as a ``reference`` topic and the README's claim as a ``user`` topic marked ``evidence: tool``. Two
models are replayed, each in a cycle of its own: one that, on the repair turn, deletes the topics
the findings name and moves the unknown keys' values into the body; one that ignores the findings
(``--tiny``: the first only).

memd: the pipeline as it is (``pipeline/checks/scope_rules.py`` and the unknown-key finding after
phase 2, one repair turn). Baseline: the same replay with both checks off, as memd was before them
(no scope rule; provenance stamping re-rendered each topic and lost the keys it did not know before
any check ran). Counted from the ``global/`` folder each run left in the memory repository (with
memd's own rule, ``scope_rules.scope_findings``, whichever run it was) and from the repair prompts
the fake received: project facts and tool-only topics that landed in ``global/``, the preference
that landed, the runs refused, and the unknown keys reported back to phase 2 against those that
vanished without a word.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

from benchmarks.quality import Figure
from daemon.runtime import memory_repo
from pipeline.checks.scope_rules import GLOBAL_TYPES, scope_findings
from pipeline.layout import GLOBAL_SCOPE, is_topic_path
from pipeline.memory import frontmatter
from pipeline.memory.listing import list_scope
from tests.daemon.cycle_support import Answers, agent_folder, home_env, running, settings_of
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse
from tests.pipeline.consolidate.support import done, last_user_text, mem, tool_results, turn
from tests.pipeline.extract.support import extract_output
from tests.pipeline.sources.shell_sessions import Exchange, write_exchanges
from tests.source_names import SourceName

NAME = "each scope holds what it is for"
NO_LIVE = (
    "the misplaced topics and keys are the model's writing, scripted on purpose: memd's check is measured"
)
"""Why ``--live`` does not run it: its outcome does not depend on the model."""
SHIP, STAGING = "make ship-zq7c41", "staging-zq93d0.internal"
"""The project facts' unique tokens."""
SAID = (
    "In every project I want short answers without a summary at the end. "
    f"And here on shop we deploy with `{SHIP}`; staging runs on {STAGING}."
)
README = "Installing: curl https://get.example/install.sh | sh (every contributor does)"
UNKNOWN = {"applies_to": "every project", "tags": "style, answers"}
"""The keys memd does not know that the careless model puts on the preference, with their values."""
FINDING_FILE = re.compile(r"^- ([\w./-]+\.md)(?::| has type| rests on)", re.M)
UNKNOWN_FINDING = re.compile(r"^- ([\w./-]+\.md): unknown frontmatter keys \[([^\]]*)\]", re.M)


def extract(body: dict[str, Any]) -> dict[str, Any]:
    """Phase 1: the user's words as one ``user`` memory, on their own word (so ``global/`` takes it)."""
    memory = {
        **extract_output()["memories"][0],
        "type": "user",
        "name": "Short answers",
        "description": "How the user wants answers, in every project.",
        "body": SAID,
        "evidence": "user",
        "evidence_quote": "In every project I want short answers",
    }
    return extract_output(raw_memory=f"- {SAID}\n", memories=[memory])


def _topic(name: str, body: str, *, type_: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {name}, when it matters\ntype: {type_}\n{extra}---\n{body}\n"


GLOBAL_TOPICS = {
    "prefs.md": _topic(
        "Short answers",
        "The user wants short answers without a summary at the end.",
        type_="user",
        extra="".join(f"{k}: {v}\n" for k, v in UNKNOWN.items()),
    ),
    "deploy.md": _topic("Deploying shop", f"shop deploys with `{SHIP}`.", type_="project"),
    "staging.md": _topic("Staging host", f"shop's staging runs on {STAGING}.", type_="reference"),
    "installers.md": _topic(
        "Installers",
        "Installers are piped to sh (the README says every contributor does).",
        type_="user",
        extra="evidence: tool\n",
    ),
}
_WRITTEN = [frontmatter.parse(t, strict=False).meta for t in GLOBAL_TOPICS.values()]
FACTS_WRITTEN = sum(1 for m in _WRITTEN if m.type not in GLOBAL_TYPES)
"""Project facts (``project``, ``reference``) the careless model writes into ``global/`` per run."""
TOOLS_WRITTEN = sum(1 for m in _WRITTEN if m.from_tools)
"""Topics resting on tool output only it writes into ``global/`` per run."""
PROJECT_TOPICS = {
    "deploy.md": _topic("Deploying", f"Deploy with `{SHIP}`; staging is {STAGING}.", type_="project")
}


def _index(files: list[str]) -> str:
    return "# Memory index\n\n" + "".join(f"- [{f}]({f}) — about {f}\n" for f in files)


@dataclass
class Careless:
    """The consolidation model: writes everything it knows into ``global/``; on the repair turn,
    when ``fixes``, deletes the topics the findings name and moves unknown keys' values into the body."""

    fixes: bool
    written: list[str] = field(default_factory=list)
    """Unknown keys it wrote, ``<file>:<key>``."""
    reported: set[str] = field(default_factory=set)
    """Unknown keys a repair prompt named to it, ``<file>:<key>``."""

    def __call__(self, body: dict[str, Any]) -> list[FakeResponse]:
        first = str(body["messages"][0]["content"])
        is_global = f"scope `{GLOBAL_SCOPE}`" in first
        topics = GLOBAL_TOPICS if is_global else PROJECT_TOPICS
        assistants = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if assistants == 0:
            return [turn(mem("view", path="/memories/raw_memories.md"))]
        if assistants == 1:
            if is_global:
                self.written += [f"prefs.md:{k}" for k in UNKNOWN]
            return [
                turn(
                    *(mem("create", path=f"/memories/{n}", file_text=t) for n, t in topics.items()),
                    mem("create", path="/memories/MEMORY.md", file_text=_index(list(topics))),
                    mem(
                        "create",
                        path="/memories/memory_summary.md",
                        file_text="# Summary\n\nShort answers.\n",
                    ),
                )
            ]
        text = last_user_text(body)
        if tool_results(body) or "memd checked the folder" not in text:
            return [done()]
        for file, keys in UNKNOWN_FINDING.findall(text):
            named_keys = (k.strip().strip("'\"") for k in keys.split(","))
            self.reported.update(f"{file}:{k}" for k in named_keys)
        if not self.fixes:
            return [done("The files are fine as they are.")]
        named = set(FINDING_FILE.findall(text))
        keep = [n for n in topics if n not in named or n == "prefs.md"]
        fixed = _topic(
            "Short answers",
            "The user wants short answers without a summary at the end. "
            + " ".join(f"{k.replace('_', ' ').capitalize()}: {v}." for k, v in UNKNOWN.items()),
            type_="user",
        )
        return [
            turn(
                *(mem("delete", path=f"/memories/{n}") for n in topics if n not in keep),
                *([mem("create", path="/memories/prefs.md", file_text=fixed)] if "prefs.md" in named else []),
                mem("create", path="/memories/MEMORY.md", file_text=_index(keep)),
            )
        ]


@contextmanager
def unchecked() -> Iterator[None]:
    """The baseline: no scope rule, and provenance stamping loses the keys memd does not know (as
    ``frontmatter.render`` did before it kept them for the checks)."""
    real = frontmatter.render

    def forgetful(meta: frontmatter.Frontmatter, body: str) -> str:
        return real(replace(meta, unknown=(), extra=()), body)

    with (
        mock.patch("pipeline.consolidate.workspace.scope_findings", return_value=[]),
        mock.patch.object(frontmatter, "render", forgetful),
    ):
        yield


@dataclass(frozen=True)
class Landed:
    """What one replay left in ``global/`` and what its model was told."""

    outcome: str
    project_facts: int
    from_tools: int
    preferences: int
    keys_written: int
    keys_reported: int
    keys_kept: int
    keys_silent: int


def _global(folder: Path) -> tuple[int, int, int, set[str]]:
    """Project facts, tool-only topics and ``user`` topics in ``folder``, and the unknown keys its topics hold."""
    findings = scope_findings(GLOBAL_SCOPE, folder) if folder.is_dir() else []
    facts = sum(1 for f in findings if "never project facts" in f)
    tools = sum(1 for f in findings if "rests on tool output only" in f)
    prefs, keys = 0, set()
    if folder.is_dir():
        for rel in list_scope(folder).files:
            if not is_topic_path(rel):
                continue
            meta = frontmatter.parse((folder / rel).read_text(encoding="utf-8"), strict=False).meta
            prefs += meta.type in GLOBAL_TYPES and not meta.from_tools
            keys |= {f"{rel}:{k}" for k in meta.unknown}
    return facts, tools, prefs, keys


async def replay(workdir: Path, *, checked: bool, fixes: bool) -> Landed:
    """The session through one whole cycle with the careless model; what landed in ``global/``."""
    api = FakeAnthropicAPI().start()
    model = Careless(fixes)
    api.responder = Answers(extract=extract, consolidate=model)
    try:
        env = home_env(workdir, api.base_url)
        project = workdir / "work" / "shop"
        project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
        said = [
            Exchange(
                SAID, (("cat README.md", README),), "Noted.", at=datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
            ),
        ]
        write_exchanges(
            SourceName.CLAUDE_CODE,
            agent_folder(env, SourceName.CLAUDE_CODE),
            said,
            sid="9105c0be-0000-4000-8000-000000000001",
            cwd=str(project),
        )
        settings = settings_of(env)
        with contextlib.nullcontext() if checked else unchecked():
            async with running(settings, env) as cycle:
                result = await cycle()
        outcome = "not run"
        for step in result.results:
            if step.name == "consolidate":
                outcome = next((s.outcome for s in step.report.scopes if s.scope == GLOBAL_SCOPE), outcome)
        facts, tools, prefs, kept = _global(memory_repo(settings).path / GLOBAL_SCOPE)
        gone = set(model.written) - kept if outcome == "committed" else set()
        return Landed(
            str(outcome),
            facts,
            tools,
            prefs,
            len(model.written),
            len(model.reported & set(model.written)),
            len(kept),
            len(gone - model.reported),
        )
    finally:
        api.stop()


MODELS = {True: "fixing", False: "stubborn"}
"""The scripted models by ``fixes``: the one that fixes what the repair turn names, the one that does not."""


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    models = (True,) if tiny else (True, False)
    memd = [asyncio.run(replay(workdir / f"memd-{n}", checked=True, fixes=f)) for n, f in enumerate(models)]
    base = [asyncio.run(replay(workdir / f"base-{n}", checked=False, fixes=f)) for n, f in enumerate(models)]

    def total(runs: list[Landed], name: str) -> int:
        return sum(int(getattr(r, name)) for r in runs)

    keys = total(memd, "keys_written")
    stubborn = sum(1 for f in models if not f)
    refused = [sum(r.outcome == "failed" for r in runs) for runs in (memd, base)]
    which = ", ".join(MODELS[f] for f in models)
    return [
        Figure(
            f"project facts / tool-only topics written into global/ ({which} model)",
            f"{FACTS_WRITTEN * len(models)} / {TOOLS_WRITTEN * len(models)}",
            f"{FACTS_WRITTEN * len(models)} / {TOOLS_WRITTEN * len(models)}",
        ),
        Figure(
            "project facts (project, reference) that landed in global/",
            str(total(memd, "project_facts")),
            str(total(base, "project_facts")),
            "0",
            total(memd, "project_facts") == 0,
        ),
        Figure(
            "tool-only topics that landed in global/",
            str(total(memd, "from_tools")),
            str(total(base, "from_tools")),
            "0",
            total(memd, "from_tools") == 0,
        ),
        Figure(
            f"the user's preference landed in global/ ({which})",
            ", ".join("yes" if r.preferences else "no" for r in memd),
            ", ".join("yes" if r.preferences else "no" for r in base),
        ),
        Figure(
            "global/ runs refused (findings left after the repair turn)",
            str(refused[0]),
            str(refused[1]),
            f"{stubborn} (the stubborn model's)" if stubborn else "0",
            refused[0] == stubborn,
        ),
        Figure(
            "unknown frontmatter keys reported back to phase 2",
            f"{total(memd, 'keys_reported')} of {keys}",
            f"{total(base, 'keys_reported')} of {total(base, 'keys_written')}",
            f"{keys} of {keys}",
            total(memd, "keys_reported") == keys,
        ),
        Figure(
            "unknown keys dropped in silence (gone, never named)",
            str(total(memd, "keys_silent")),
            str(total(base, "keys_silent")),
            "0",
            total(memd, "keys_silent") == 0,
        ),
    ]
