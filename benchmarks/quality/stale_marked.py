"""Stale memory is marked: topics citing a project's code, then the code changes under them.

A project of small source files and a scope whose topics each cite a few lines of one file
(``cites: ["src/mod_3.py:4-6"]``) are published once (memd records what the cited lines hold). Then
the project changes: some cited lines are edited, some cited files deleted, one replaced by a
symlink to an identical file outside the project, and lines no topic cites are edited in every
file (noise). A second publish follows. Counted from the published ``MEMORY.md`` (Claude Code's
folder) and the store: the topics marked stale against the topics whose code truly changed, the
topics marked stale whose cited lines did not change, and whether the scope waits for a phase-2
run. The baseline is the same publish with the stale check off (what memd published before it
checked cites: every topic current).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.quality import Figure
from pipeline.clock import FakeClock
from pipeline.publish import run as publish_run
from pipeline.publish.run import publish_all
from pipeline.store import consolidation as db
from pipeline.store import open_store
from tests.pipeline.publish.support import add_scope, make_env, topic_text, write_scope

NAME = "stale memory is marked"
NO_LIVE = "it publishes only; no model is called"
"""Why ``--live`` does not run it: its outcome does not depend on the model."""


def _source(i: int, version: int = 0) -> str:
    lines = [f"# module {i}", f"NOISE = {version}"]
    lines += [f"VALUE_{i}_{n} = {i * 100 + n}" for n in range(12)]
    return "\n".join(lines) + "\n"


def _topic(i: int) -> str:
    text = topic_text(f"Module {i}", body=f"module {i}'s values are set in src/mod_{i}.py lines 4-6.")
    return text.replace("\n---\nmodule", f'\ncites: ["src/mod_{i}.py:4-6"]\n---\nmodule')


@contextmanager
def _no_check() -> Iterator[None]:
    real = publish_run.check_stale

    async def nothing(*args: Any, **kwargs: Any) -> dict[str, str]:
        return {}

    publish_run.check_stale = nothing  # type: ignore[assignment]
    try:
        yield
    finally:
        publish_run.check_stale = real


async def _replay(workdir: Path, count: int) -> dict[str, Any]:
    env = make_env(workdir)
    clock = FakeClock(datetime(2026, 11, 1, 12, 0, tzinfo=UTC))
    store = await open_store(f"sqlite:///{workdir / 'state.db'}")
    try:
        project = env.project("app")
        (project / "src").mkdir()
        for i in range(count):
            (project / "src" / f"mod_{i}.py").write_text(_source(i))
        scope = await add_scope(store, str(project), clock.now())
        await db.save_success(store, scope, inputs=[], commit=None, project=str(project), now=clock.now())
        write_scope(
            env.memory_dir, scope, summary="Digest.", topics={f"mod-{i}.md": _topic(i) for i in range(count)}
        )
        settings = env.settings(gemini=False)
        await publish_all(store, settings, clock)

        edited = set(range(0, count, 4))
        deleted = set(range(1, count, 4))
        linked = {2} if count > 2 else set()
        outside = workdir / "outside"
        outside.mkdir()
        for i in range(count):
            path = project / "src" / f"mod_{i}.py"
            if i in deleted:
                path.unlink()
            elif i in linked:
                (outside / path.name).write_text(path.read_text())
                path.unlink()
                path.symlink_to(outside / path.name)
            else:
                text = _source(i, version=1)  # noise: an uncited line
                if i in edited:
                    text = text.replace(f"VALUE_{i}_2 = {i * 100 + 2}", f"VALUE_{i}_2 = {i * 100 + 99}")
                path.write_text(text)
        clock.advance(3600)
        report = await publish_all(store, settings, clock)
        [result] = [r for r in report.results if r.target == "claude_code"]
        index = (Path(result.path) / "MEMORY.md").read_text()
        marked = {
            i
            for i in range(count)
            if any("STALE" in line for line in index.splitlines() if f"memd-mod-{i}.md" in line)
        }
        state = await db.get_scope(store, scope)
        return {
            "truly": edited | deleted | linked,
            "marked": marked,
            "offered": bool(state and state.stale),
        }
    finally:
        await store.close()


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    count = 8 if tiny else 60
    (workdir / "memd").mkdir()
    (workdir / "baseline").mkdir()
    memd = asyncio.run(_replay(workdir / "memd", count))
    with _no_check():
        base = asyncio.run(_replay(workdir / "baseline", count))
    truly = memd["truly"]

    def caught(r: dict[str, Any]) -> str:
        return f"{len(r['marked'] & truly)} of {len(truly)}"

    return [
        Figure("topics citing code", str(count), str(count)),
        Figure(
            "stale topics marked in the published index",
            caught(memd),
            caught(base),
            f"{len(truly)} of {len(truly)}",
            memd["marked"] >= truly,
        ),
        Figure(
            "current topics marked stale (noise lines changed)",
            str(len(memd["marked"] - truly)),
            str(len(base["marked"] - truly)),
            "0",
            not memd["marked"] - truly,
        ),
        Figure(
            "scope waits for a phase-2 run to fix or drop them",
            "yes" if memd["offered"] else "no",
            "yes" if base["offered"] else "no",
            "yes",
            memd["offered"],
        ),
    ]
