"""Nothing changed, nothing paid: what a whole cycle with no new, changed or removed input costs.

Two sessions (Claude Code and Codex CLI) go through a first cycle (the work); then a second cycle in
the same runtime and a third after a restart (a fresh runtime on the same store and memory) find
nothing new. Figures: the requests the fake Messages API received and the memory commits each idle
cycle made, beside the first cycle's (``tests/daemon/test_nothing_changed.py`` is the guard test).
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from benchmarks.quality import Figure
from pipeline.settings import Settings
from tests.daemon.cycle_support import Answers, Cycle, agent_folder, home_env, running, settings_of
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sources.shell_sessions import Exchange, write_exchanges
from tests.source_names import SourceName

NAME = "nothing changed, nothing paid"
NO_LIVE = "an idle cycle makes no request, so no model answer counts"
"""Why ``--live`` does not run it: its outcome does not depend on the model."""


def commits(settings: Settings) -> int:
    done = subprocess.run(
        ["git", "-C", str(settings.paths.memory_dir), "rev-list", "--count", "--all"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return int(done.stdout.strip() or 0)


async def replay(workdir: Path) -> list[tuple[int, int]]:
    """(requests, commits) of the first cycle, an idle one, and an idle one after a restart."""
    api = FakeAnthropicAPI().start()
    api.responder = Answers()
    try:
        env = home_env(workdir, api.base_url)
        for n, source in enumerate((SourceName.CLAUDE_CODE, SourceName.CODEX)):
            said = [Exchange(f"Use port {8000 + n} for staging.", (("make staging", "ok"),))]
            write_exchanges(
                source, agent_folder(env, source), said, sid=f"0c0c0000-0000-4000-8000-00000000000{n}"
            )
        settings = settings_of(env)
        seen: list[tuple[int, int]] = []

        async def one(cycle: Cycle) -> None:
            before = (len(api.requests), commits(settings))
            await cycle()
            seen.append((len(api.requests) - before[0], commits(settings) - before[1]))

        async with running(settings, env) as cycle:
            await one(cycle)
            await one(cycle)
        async with running(settings, env) as cycle:
            await one(cycle)
        return seen
    finally:
        api.stop()


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    (work, work_commits), (idle, idle_commits), (restarted, restarted_commits) = asyncio.run(replay(workdir))
    first = f"first cycle {work} requests, {work_commits} commits"
    return [
        Figure(
            "idle cycle: API requests, memory commits",
            f"{idle}, {idle_commits}",
            first,
            "0, 0",
            (idle, idle_commits) == (0, 0),
        ),
        Figure(
            "idle cycle after a restart: API requests, memory commits",
            f"{restarted}, {restarted_commits}",
            first,
            "0, 0",
            (restarted, restarted_commits) == (0, 0),
        ),
    ]
