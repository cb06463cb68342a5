"""The real Aider, run offline against the model stub (OpenAI chat completions, streamed): its first
session is one memd finds by searching HOME and reads (the user's words, headless, the repository
root as project); memd then publishes, and Aider's second session, appended to the same file,
sends memd's memory to the model (the stub sees its marker) and is read as a session of its own.

Skipped, saying why, when the pinned Aider (tests/agents_cli/install.sh) or the stub is not there."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daemon.config import load_settings
from pipeline.agents.aider import HISTORY_FILE, MEMORY_FILE, PROJECT_FILE
from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.scan.scanner import scan
from pipeline.settings import Settings
from pipeline.sources.registry import adapter_for
from pipeline.store import Store
from pipeline.transcript import UserMessage
from tests.agents_cli.live import Run, only_publishing, require_venv_cli, run_cli
from tests.pipeline.publish.support import add_scope, git, write_scope

pytestmark = [pytest.mark.timeout(240)]
FIRST = "Which package manager do we use? memd live test."
SECOND = "Remind me of the package manager."


def _settings(home: Path, tmp_path: Path) -> Settings:
    env = {
        "HOME": str(home),
        "MEMD_PATHS__MEMORY_DIR": str(tmp_path / "memory"),
        "MEMD_PATHS__STATE_DIR": str(tmp_path / "state"),
        "MEMD_PATHS__STATE_DB": f"sqlite:///{tmp_path / 'state.db'}",
        "MEMD_MEMORIES__INCLUDE_NON_INTERACTIVE": "true",
        **only_publishing("aider_global"),
        # aider_global is on by default; aider_project is not
        "MEMD_PUBLISH__AIDER_PROJECT": "true",
    }
    return load_settings(None, env).settings


def _aider(aider: Path, tmp_path: Path, home: Path, cwd: Path, prompt: str, name: str) -> Run:
    run_dir = tmp_path / name
    run_dir.mkdir()
    return run_cli(
        run_dir,
        api="openai",
        script={"steps": [], "final": "We use pnpm, not npm."},
        argv=[
            str(aider),
            "--model",
            "openai/stub-model",
            "--message",
            prompt,
            "--yes-always",
            "--no-check-update",
            "--no-show-model-warnings",
            "--no-analytics",
        ],
        cwd=cwd,
        env={
            "HOME": str(home),
            "OPENAI_API_BASE": "http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": "sk-fake",
        },
    )


async def test_aider_writes_sessions_memd_reads_and_loads_what_memd_published(
    tmp_path: Path, sqlite_store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    aider = require_venv_cli("aider-chat-0.86.2", "aider")
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))  # memd publishes in the user's home: Aider's here
    repo = home / "code" / "shop"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "README.md").write_text("shop\n")
    settings = _settings(home, tmp_path)

    first = _aider(aider, tmp_path, home, repo / "src", FIRST, "run1")
    assert first.returncode == 0, first.stderr[-2000:]
    history = repo / HISTORY_FILE
    assert history.is_file()

    later = FakeClock(datetime.now(UTC) + timedelta(hours=7))
    report = await scan(sqlite_store, settings, later)
    (session,) = [s for s in report.sessions if s.source == "aider"]
    assert session.project == str(repo)
    assert session.state == "eligible", session.reason
    t = adapter_for("aider").parse(Path(session.path)).transcript
    assert t is not None
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [FIRST]
    assert t.non_interactive

    marker = f"MEMD_GLOBAL_{uuid.uuid4().hex[:8]}"
    write_scope(settings.paths.memory_dir, "global", summary=f"The user uses pnpm. {marker}")
    project_marker = f"MEMD_PROJECT_{uuid.uuid4().hex[:8]}"
    scope = await add_scope(sqlite_store, str(repo), clock.now())
    write_scope(settings.paths.memory_dir, scope, summary=f"The shop ships with make. {project_marker}")
    results = (await publish_all(sqlite_store, settings, clock)).results
    assert sorted((r.target, r.outcome) for r in results) == [
        ("aider_global", "published"),
        ("aider_project", "published"),
    ], results
    global_file = home / ".aider" / "memd" / MEMORY_FILE
    assert str(global_file) in (home / ".aider.conf.yml").read_text()
    assert str(global_file) in (repo / ".aider.conf.yml").read_text()  # the root's list hides HOME's

    second = _aider(aider, tmp_path, home, repo / "src", SECOND, "run2")
    assert second.returncode == 0, second.stderr[-2000:]
    assert marker in second.bodies()  # Aider sent memd's files to the model as read-only files,
    assert project_marker in second.bodies()  # the project's through the root's .aider.conf.yml

    report = await scan(sqlite_store, settings, FakeClock(datetime.now(UTC) + timedelta(hours=7)))
    paths = sorted(s.path for s in report.sessions if s.source == "aider")
    assert len(paths) == 2
    assert all(p.startswith(f"{history}#") for p in paths)
    newest = max(paths, key=lambda p: int(p.rpartition("#")[2]))
    t2 = adapter_for("aider").parse(Path(newest)).transcript
    assert t2 is not None
    assert [i.text for i in t2.items if isinstance(i, UserMessage)] == [SECOND]
    assert sorted(Path(r.path).name for r in t2.memory_reads) == sorted([PROJECT_FILE, MEMORY_FILE])
    assert {r.via for r in t2.memory_reads} == {"injected"}
    assert marker not in str(t2.items)  # Aider logs only that it added the file, never its text
