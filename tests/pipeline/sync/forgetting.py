"""What the forget tests share (not a test module): a consolidation agent that copies a session's
own words into its topic (so a forgotten text is in the inputs as well as the topic), forgetting
as `memd memories forget` does, and where a forgotten text still is (a branch, published copies,
the remote, every commit and object of a repository)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from daemon.runtime import Runtime
from daemon.usecases.memories import SteerDone, forget_memory
from pipeline.settings import Settings
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeResponse
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import done, mem, topic, turn
from tests.pipeline.sync.support import Machine, _tool_text, git

FORGOTTEN = "Deploy the billing service with the orange lever script every Friday at noon"


def agent(body: dict[str, Any], _headers: dict[str, str]) -> FakeResponse:
    """Consolidation that writes one topic per session of ``raw_memories.md``, in the session's own
    words (its raw memory's lines): a model that copies what it read."""
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turns == 0:
        return turn(mem("view", path="/memories/raw_memories.md"))
    if turns == 1:
        found: dict[str, str] = {}
        current = None
        for line in re.sub(r"(?m)^\s*\d+\t", "", _tool_text(body)).splitlines():  # the view numbers lines
            head = re.match(r"## Session `([^`]+)`", line)
            if head:
                current = head.group(1)
                found.setdefault(current, "")
            elif current is not None and line.startswith("- "):
                found[current] += line + "\n"
        names = {f"s-{re.sub(r'[^a-z0-9]+', '-', s.lower())}.md": s for s in sorted(found)}
        creates = [
            mem(
                "create",
                path=f"/memories/{n}",
                file_text=topic(f"Session {s}", found[s].strip() or f"What {s} taught.", type_="project"),
            )
            for n, s in names.items()
        ]
        index = "# Memory index\n\n" + "".join(f"- [{n}]({n}): what {s} taught\n" for n, s in names.items())
        return turn(
            *creates,
            mem("create", path="/memories/MEMORY.md", file_text=index),
            mem("create", path="/memories/memory_summary.md", file_text="# Summary\n\nSessions.\n"),
        )
    return done()


async def learn(m: Machine, session: str, raw: str) -> None:
    await m.env.add_extract(session, project=str(m.project), raw=f"- {raw}", summary=f"{raw}.")
    await m.consolidate()


def offline(settings: Settings) -> Settings:
    """``settings`` with the remote out of reach (a laptop offline): nothing listens there."""
    sync = settings.sync.model_copy(update={"remote": "git://127.0.0.1:9/memory.git", "timeout_s": 5})
    return settings.model_copy(update={"sync": sync})


async def forget(m: Machine, memory_id: str, *, online: bool = True) -> SteerDone:
    settings = m.settings if online else offline(m.settings)
    rt = Runtime(m.store, lambda: settings, clock=m.env.clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY})
    try:
        done_ = await forget_memory(rt, memory_id)
    finally:
        await rt.aclose()
    assert done_.steered.commit is not None
    assert done_.synced is not None
    assert (done_.synced.outcome == SyncOutcome.SYNCED) == online, done_.synced.lines()
    return done_


def holding(m: Machine) -> list[str]:
    """Where the forgotten text still is on ``m``: the branch's files, the published copies."""
    found = [f"tree:{p}" for p, text in m.tree().items() if FORGOTTEN in text]
    found += [f"published:{p}" for p, text in m.published().items() if FORGOTTEN in text]
    return found


def served_holds(tmp_path: Path) -> bool:
    served = tmp_path / "served" / "memory.git"
    return FORGOTTEN in git(served, "grep", "-I", "-e", FORGOTTEN, "main", "--", ".", check=False)


async def synced(m: Machine) -> list[str]:
    report = await m.sync()
    assert report.outcome == SyncOutcome.SYNCED, report.lines()
    await m.publish()
    return report.lines()


def history_holds(path: Path) -> list[str]:
    """Every commit reachable from any ref of the repository at ``path`` whose tree holds the text,
    and whether any object of its store (``git cat-file --batch-all-objects``) still does."""
    commits = git(path, "rev-list", "--all").split()
    # one `git grep` over every commit's tree (it prints ``<commit>:<path>`` for each file holding it)
    listed = (
        git(path, "grep", "-I", "-l", "-e", FORGOTTEN, *commits, "--", ".", check=False) if commits else ""
    )
    holding = {line.split(":", 1)[0] for line in listed.splitlines()}
    found = [c for c in commits if c in holding]
    every = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=path,
        capture_output=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(path), "GIT_CONFIG_NOSYSTEM": "1"},
    ).stdout
    return found + (["an object of the store"] if FORGOTTEN.encode() in every else [])


def served(tmp_path: Path) -> Path:
    """The bare remote the two machines of ``two_machines`` sync with."""
    return tmp_path / "served" / "memory.git"


def reaching(path: Path, text: str) -> list[str]:
    """Where ``text`` is still in the repository at ``path``: a commit any ref reaches, a reflog
    entry, an object of its store."""
    found = []
    if text in git(path, "log", "-p", "--all"):
        found.append("a commit")
    if git(path, "reflog", "--all", check=False).strip() and text in git(
        path, "log", "-p", "-g", "--all", check=False
    ):
        found.append("a reflog")
    every = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=path,
        capture_output=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(path), "GIT_CONFIG_NOSYSTEM": "1"},
    ).stdout
    if text.encode() in every:
        found.append("an object")
    return found


def host_gc(remote: Path) -> None:
    """What the remote's host does on its own schedule (git's housekeeping): objects no ref reaches go."""
    git(remote, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    git(remote, "gc", "-q", "--prune=now")
