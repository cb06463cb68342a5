"""The real Cline CLI (npm ``cline`` 3.0.65), offline against the model stub (OpenAI chat completions).

1. `cline PROMPT` run in the repository's ``src/`` writes a session; memd reads it: the user's words,
   each command of ``run_commands`` a call with its own result, the project (the git root), the
   headless mark.
2. memd publishes (``cline`` and ``cline_global`` on) and `memd mcp install cline` writes Cline's MCP
   settings; a second `cline PROMPT` in ``src/`` receives the project's and the global memory in its
   system prompt (from the rule files memd wrote there and in ``~/.cline/rules``) and calls memd's
   ``memory_search`` through the config memd wrote; `memd mcp uninstall cline` gives the user's file
   back byte for byte.

Cline runs with ``CLINE_SESSION_BACKEND_MODE=local`` (no hub daemon outliving the run); whatever it
left running with this test's private HOME is stopped by its pid. Skipped, saying why, when the
pinned CLI (tests/agents_cli/install.sh) is not installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from daemon.config import load_settings
from pipeline.clock import FakeClock
from pipeline.projects import resolve_project, scope_for
from pipeline.publish.run import publish_all
from pipeline.sources.registry import adapter_for
from pipeline.store import Store
from pipeline.transcript import ToolCall, ToolResult, UserMessage
from tests.agents_cli.live import Run, free_port, only_publishing, require_cli, run_cli
from tests.configs import write_config
from tests.pipeline.publish.support import add_scope

pytestmark = [pytest.mark.timeout(240)]
CLINE = ("cline-3.0.65", "cline")
CLI_TIMEOUT_S = 90
USER_SETTINGS = (
    '{\n  "mcpServers": {\n    "web": {"transport": {"type": "stdio", "command": "w", "args": []}}\n  }\n}\n'
)


@dataclass
class World:
    home: Path
    repo: Path
    src: Path
    config: Path
    topic_id: str
    project_marker: str
    global_marker: str


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "work" / "shop"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("print('shop')\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    scope = scope_for(resolve_project(str(repo)))
    project_marker, global_marker = f"MEMDPROJ{uuid.uuid4().hex[:8]}", f"MEMDGLOB{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "memory" / scope
    folder.mkdir(parents=True)
    (folder / "memory_summary.md").write_text(f"The shop uses pnpm, never npm ({project_marker}).\n")
    (folder / "pnpm.md").write_text(
        "---\nname: Package manager\ndescription: The shop installs packages with pnpm\n"
        "type: project\ncreated: 2026-11-01\nupdated: 2026-11-20\nsources: [cline:s-1]\n---\n"
        "Run `pnpm install`; npm's lock file is not kept.\n"
    )
    (folder / "MEMORY.md").write_text("- pnpm.md\n")
    (tmp_path / "memory" / "global").mkdir()
    (tmp_path / "memory" / "global" / "memory_summary.md").write_text(
        f"The user writes tests first ({global_marker}).\n"
    )
    yield World(
        home, repo, repo / "src", write_config(tmp_path), f"{scope}/pnpm.md", project_marker, global_marker
    )
    _stop_left_over(home)


def _stop_left_over(home: Path) -> None:
    """Stop any process Cline left running with this test's private HOME (only those: found by their
    environment, stopped by pid)."""
    wanted = f"HOME={home}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if wanted in env:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)


def cline(
    tmp: Path, world: World, prompt: str, steps: list[dict[str, object]], name: str, *, port: int, auth: bool
) -> Run:
    """`cline PROMPT` in the repository's ``src/``, the stub on ``port``; with ``auth``, `cline auth`
    first, pointing Cline at it (a second run on the same port needs no second `cline auth`: each
    Cline start costs seconds)."""
    program = require_cli(*CLINE)
    login = f"{program} auth --provider openai --apikey sk-fake --modelid gpt-4o --baseurl http://127.0.0.1:{{port}}/v1"
    folder = tmp / name
    folder.mkdir()
    first = f"{login} >/dev/null && " if auth else ""
    return run_cli(
        folder,
        api="openai",
        script={"steps": steps, "final": "STUB_FINAL_TEXT: done."},
        port=port,
        argv=["sh", "-c", f'{first}exec "$0" "$1"', str(program), prompt],
        cwd=world.src,
        env={
            "HOME": str(world.home),
            "CLINE_SESSION_BACKEND_MODE": "local",
            "OTEL_TELEMETRY_ENABLED": "false",
        },
        timeout_s=CLI_TIMEOUT_S,
    )


def first_system_prompt(run: Run) -> str:
    for r in run.requests:
        body = r.get("body")
        if r["method"] == "POST" and isinstance(body, dict) and body.get("messages"):
            return "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") == "system")
    raise AssertionError(f"no model request: {run.stderr[-2000:]}")


def memd(world: World, *args: str) -> str:
    result = CliRunner().invoke(
        cli, ["--config", str(world.config), *args], env={"HOME": str(world.home), "MEMD_CONFIG": ""}
    )
    assert result.exit_code == 0, result.output
    return result.output


async def test_memd_reads_clines_session_and_a_second_session_gets_its_memory_and_tools(
    world: World, tmp_path: Path, sqlite_store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1. A real session, in src/: memd reads it.
    port = free_port()
    first = cline(
        tmp_path,
        world,
        "List the files; we use pnpm (MEMDCLINE live).",
        [{"name": "run_commands", "input": {"commands": ["ls -1", "echo MEMD_OUT_7731"]}}],
        "first",
        port=port,
        auth=True,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    sessions = world.home / ".cline" / "data" / "sessions"
    adapter = adapter_for("cline")
    [path] = list(adapter.discover(sessions))
    result = adapter.parse(path)
    assert result.problem is None, result.problem
    t = result.transcript
    assert t is not None
    assert t.session_id == path.parent.name
    assert t.cwd == str(world.src)
    assert resolve_project(t.cwd) == str(world.repo)  # the project is the repository's root
    assert t.non_interactive  # `cline PROMPT` is a one-shot run
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "List the files; we use pnpm (MEMDCLINE live)."
    ]
    calls = [i for i in t.items if isinstance(i, ToolCall)]
    assert [c.essential_arg for c in calls] == ["ls -1", "echo MEMD_OUT_7731"]
    outputs = {i.call_id: i.text for i in t.items if isinstance(i, ToolResult)}
    assert "MEMD_OUT_7731" in outputs[calls[1].call_id]  # each command's own output, quoted as output
    assert "app.py" in outputs[calls[0].call_id]
    assert t.last_activity is not None

    # 2. memd publishes and installs its MCP server; a second session gets both.
    settings_file = world.home / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    settings_file.write_text(USER_SETTINGS)
    memd(world, "mcp", "install", "cline")
    entry = json.loads(settings_file.read_text())["mcpServers"]["memd"]
    assert entry["transport"]["type"] == "stdio"
    assert entry["transport"]["args"][-1] == "mcp"
    assert entry["timeout"] == 60  # Cline would give memd's server 3 s to answer its opening
    monkeypatch.setenv("HOME", str(world.home))
    env = {
        "HOME": str(world.home),
        **only_publishing("cline_global"),
        "MEMD_PUBLISH__CLINE": "true",
    }
    await add_scope(sqlite_store, str(world.repo), clock.now())
    report = await publish_all(sqlite_store, load_settings(world.config, env).settings, clock)
    assert sorted((r.target, r.outcome) for r in report.results) == [
        ("cline", "published"),
        ("cline_global", "published"),
    ], report.results
    assert (world.src / ".clinerules" / "memd-memory.md").is_file()  # where Cline ran, not only the root
    assert (world.repo / ".clinerules" / "memd-memory.md").is_file()
    assert (world.home / ".cline" / "rules" / "memd-global-memory.md").is_file()

    second = cline(
        tmp_path,
        world,
        "How do we install packages? (MEMDCLINE live)",
        [{"name": "memory_search", "input": {"query": "package manager"}}],
        "second",
        port=port,
        auth=False,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    system = first_system_prompt(second)
    assert world.project_marker in system  # the project's rule file in src/.clinerules
    assert world.global_marker in system  # the user-wide rule file
    bodies = [r["body"] for r in second.requests if r["method"] == "POST" and isinstance(r.get("body"), dict)]
    offered = [t["function"]["name"] for t in bodies[0].get("tools", [])]
    assert "memd__memory_search" in offered  # memd's server, started by Cline from the config memd wrote
    tool_messages = [
        json.dumps(m) for body in bodies for m in body.get("messages", []) if m.get("role") == "tool"
    ]
    assert any(world.topic_id in m for m in tool_messages), second.stderr[-3000:]

    memd(world, "mcp", "uninstall", "cline")
    assert settings_file.read_text() == USER_SETTINGS
