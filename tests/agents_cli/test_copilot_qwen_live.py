"""The real GitHub Copilot CLI and Qwen Code, run offline against the model stub: each writes a
session memd reads (its agent and project, the user's words, the instruction text kept out), and
each loads the memory memd published (memd's marker is in the request the stub receives).

Skipped, saying why, when the pinned CLI (tests/agents_cli/install.sh) or the stub is
not there."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daemon.config import load_settings
from pipeline.agents.qwen_code.publish import memory_folder
from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.scan.scanner import scan
from pipeline.settings import Settings
from pipeline.sources.registry import adapter_for
from pipeline.store import Store
from pipeline.transcript import UserMessage
from tests.agents_cli.live import clis_dir, only_publishing, require_cli, run_cli
from tests.pipeline.publish.support import add_scope, git, write_scope

pytestmark = [pytest.mark.timeout(240)]
PROMPT = "Please list the files here. memd live test."


def _workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    repo = tmp_path / "work" / "repo"
    (repo / "sub").mkdir(parents=True)
    home.mkdir()
    git(repo, "init", "-q")
    (repo / "README.md").write_text("demo\n")
    return home, repo, repo / "sub"


def _settings(home: Path, tmp_path: Path, **publish: str) -> Settings:
    env = {
        "HOME": str(home),
        "MEMD_PATHS__MEMORY_DIR": str(tmp_path / "memory"),
        "MEMD_PATHS__STATE_DIR": str(tmp_path / "state"),
        "MEMD_PATHS__STATE_DB": f"sqlite:///{tmp_path / 'state.db'}",
        "MEMD_MEMORIES__INCLUDE_NON_INTERACTIVE": "true",
        **only_publishing(),
        **{f"MEMD_PUBLISH__{k.upper()}": v for k, v in publish.items()},
    }
    return load_settings(None, env).settings


async def _publish(store: Store, settings: Settings, project: Path, clock: FakeClock) -> tuple[str, str]:
    """Memory for the project and the global scope, each with its own marker, published."""
    project_marker, global_marker = (
        f"MEMD_PROJECT_{uuid.uuid4().hex[:8]}",
        f"MEMD_GLOBAL_{uuid.uuid4().hex[:8]}",
    )
    scope = await add_scope(store, str(project), clock.now())
    write_scope(settings.paths.memory_dir, scope, summary=f"Run the tests with make check. {project_marker}")
    write_scope(settings.paths.memory_dir, "global", summary=f"The user likes short answers. {global_marker}")
    report = await publish_all(store, settings, clock)
    assert all(r.outcome == "published" for r in report.results), [
        (r.target, r.reason) for r in report.results
    ]
    return project_marker, global_marker


async def _scanned(store: Store, settings: Settings, source: str, project: Path) -> str:
    """The session the CLI wrote, as `memd scan` records it: its agent, project and readiness."""
    later = FakeClock(datetime.now(UTC) + timedelta(hours=7))
    report = await scan(store, settings, later)
    (session,) = [s for s in report.sessions if s.source == source]
    assert session.project == str(project)
    assert session.state == "eligible", session.reason
    return session.path


async def test_copilot_cli_writes_a_session_memd_reads_and_loads_what_memd_published(
    tmp_path: Path, sqlite_store: Store, clock: FakeClock
) -> None:
    copilot = require_cli("github-copilot-1.0.102", "copilot")
    home, repo, cwd = _workspace(tmp_path)
    (home / ".copilot").mkdir()
    settings = _settings(home, tmp_path, copilot_global="true", agents_md="true")
    project_marker, global_marker = await _publish(sqlite_store, settings, repo, clock)
    assert project_marker in (repo / "AGENTS.md").read_text()

    run = run_cli(
        tmp_path,
        api="anthropic",
        script={
            "steps": [{"name": "bash", "input": {"command": "ls", "description": "List"}}],
            "final": "Done.",
        },
        argv=[str(copilot), "-p", PROMPT, "--allow-all-tools", "--no-ask-user"],
        cwd=cwd,
        env={
            "HOME": str(home),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:{port}",
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": "sk-ant-fake",
            "COPILOT_MODEL": "claude-sonnet-4-20250514",
            "COPILOT_PKG_CACHE_HOME": str(clis_dir() / "copilot-pkg-cache"),
        },
    )
    assert run.returncode == 0, run.stderr[-2000:]
    # Copilot loaded both: the project's AGENTS.md and the user's copilot-instructions.md.
    assert project_marker in run.bodies()
    assert global_marker in run.bodies()

    path = await _scanned(sqlite_store, settings, "copilot_cli", repo)
    assert Path(path).parent.parent == home / ".copilot" / "session-state"
    raw = Path(path).read_text()
    assert project_marker in raw  # the system message holds the instruction files' text...
    t = adapter_for("copilot_cli").parse(Path(path)).transcript
    assert t is not None
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [PROMPT]
    assert t.non_interactive
    assert project_marker not in str(t.items)  # ...which memd keeps out of what it extracts
    assert global_marker not in str(t.items)


async def test_qwen_code_writes_a_session_memd_reads_and_loads_what_memd_published(
    tmp_path: Path, sqlite_store: Store, clock: FakeClock
) -> None:
    qwen = require_cli("qwen-code-qwen-code-0.24.4", "qwen")
    home, repo, cwd = _workspace(tmp_path)
    (home / ".qwen").mkdir()
    (home / ".qwen" / "settings.json").write_text(
        '{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},'
        ' "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}'
    )
    settings = _settings(home, tmp_path, qwen_code="true")
    project_marker, _ = await _publish(sqlite_store, settings, repo, clock)
    index = memory_folder(home / ".qwen", str(repo)) / "MEMORY.md"
    assert project_marker in index.read_text()

    step = {"name": "run_shell_command", "input": {"command": "ls", "description": "List"}}
    run = run_cli(
        tmp_path,
        api="openai",
        script={"steps": [step], "final": "Done."},
        argv=[str(qwen), "-p", PROMPT, "--yolo"],
        cwd=cwd,
        env={
            "HOME": str(home),
            "OPENAI_API_KEY": "sk-fake",
            "OPENAI_BASE_URL": "http://127.0.0.1:{port}/v1",
            "OPENAI_MODEL": "qwen3-coder-plus",
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        },
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert project_marker in run.bodies()  # Qwen put its MEMORY.md, memd's block in it, into the prompt

    path = await _scanned(sqlite_store, settings, "qwen_code", repo)
    assert Path(path).parent.name == "chats"
    t = adapter_for("qwen_code").parse(Path(path)).transcript
    assert t is not None
    assert t.cwd == str(cwd)
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [PROMPT]
    assert project_marker not in str(t.items)
