"""The real OpenCode CLI (the pinned npm version, installed by ``tests/agents_cli/install.sh``), run offline
against the loopback model stub: it loads the memory memd published (a marker in the request the
stub receives) and writes a session memd then reads from its live database. Skipped with the reason
when the CLI or the stub is not there."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.agents.opencode.transcripts import OpenCodeAdapter
from pipeline.clock import SystemClock
from pipeline.publish.run import publish_all
from pipeline.scan.scanner import scan
from pipeline.settings import Settings, SourcesSettings
from pipeline.store import Store
from pipeline.transcript import ToolCall, UserMessage
from tests.agents_cli.live import clis_dir, stub_path
from tests.pipeline.publish.support import write_scope
from tests.pipeline.sources.opencode_support import opencode_settings

CLI = clis_dir() / "opencode-ai-1.18.33" / "node_modules" / ".bin" / "opencode"
STUB = stub_path()
MARKER = "MEMD_PUBLISHED_MARKER_5c1e"

pytestmark = [
    pytest.mark.skipif(
        not (CLI.is_file() and os.access(CLI, os.X_OK)),
        reason=f"the OpenCode CLI is not installed at {CLI} (tests/agents_cli/install.sh installs it)",
    ),
    pytest.mark.skipif(not STUB.is_file(), reason=f"the model stub is not at {STUB}"),
    pytest.mark.timeout(240),
]


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "steps": [
                    {
                        "name": "bash",
                        "input": {"command": "ls", "description": "List files"},
                        "say": "Listing.",
                    }
                ],
                "final": "The repository holds README.md.",
            }
        )
    )
    log, port_file = tmp_path / "stub.jsonl", tmp_path / "stub.port"
    proc = subprocess.Popen(
        [sys.executable, str(STUB), "--api", "anthropic", "--log", str(log), "--script", str(script)]
        + ["--port", "0", "--port-file", str(port_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not (port_file.is_file() and port_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield int(port_file.read_text().strip()), log
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


def _settings(tmp_path: Path, data: Path, **publish: bool) -> Settings:
    base = opencode_settings(
        tmp_path,
        publish={
            "claude_code": False,
            "gemini": False,
            "aider_global": False,
            "openhands_global": False,
            "cline_global": False,
            **publish,
        },
    )
    sources = {**base.sources.model_dump(), "opencode": {"root": data / "opencode"}}
    return base.model_copy(update={"sources": SourcesSettings.model_validate(sources)})


async def test_opencode_loads_the_published_memory_and_memd_reads_its_session(
    tmp_path: Path, stub: tuple[int, Path], sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    port, log = stub
    home = tmp_path / "home"
    config, data = home / ".config", home / ".local" / "share"
    (config / "opencode").mkdir(parents=True)
    (config / "opencode" / "opencode.json").write_text(
        json.dumps(
            {
                "autoupdate": False,
                "share": "disabled",
                "model": "stub/stub-model",
                "provider": {
                    "stub": {
                        "npm": "@ai-sdk/anthropic",
                        "name": "Stub (loopback)",
                        "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "sk-ant-fake"},
                        "models": {"stub-model": {"name": "Stub Model", "tool_call": True}},
                    }
                },
            }
        )
    )
    repo = tmp_path / "work" / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)

    # memd publishes the global scope where OpenCode reads it.
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    settings = _settings(tmp_path, data, opencode_global=True)
    write_scope(settings.paths.memory_dir, "global", summary=f"The user's marker: {MARKER}.")
    published = await publish_all(sqlite_store, settings, SystemClock())
    assert [(r.target, r.outcome) for r in published.results] == [("opencode_global", "published")]

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_DATA_HOME": str(data),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        # Anything bound elsewhere goes to the stub, which refuses it: nothing leaves the machine.
        "HTTP_PROXY": f"http://127.0.0.1:{port}",
        "HTTPS_PROXY": f"http://127.0.0.1:{port}",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    done = subprocess.run(
        [str(CLI), "run", "Please list the files here"],
        cwd=repo / "sub",
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [r for r in requests if r["method"] == "POST" and r["path"].endswith("/v1/messages")]
    assert calls, "OpenCode never called the model"
    assert any(MARKER in json.dumps(r["body"].get("system")) for r in calls), (
        "the published memory was not loaded"
    )

    # memd reads the session OpenCode just wrote, from its live database (rows in the -wal).
    folder = data / "opencode"
    before = sorted(os.listdir(folder))
    report = await scan(sqlite_store, settings, SystemClock())
    [session] = [s for s in report.sessions if s.source == "opencode"]
    assert session.project == str(repo)
    assert session.user_messages == 1
    assert sorted(os.listdir(folder)) == before, "memd left no file in OpenCode's folder"
    transcript = OpenCodeAdapter().parse(Path(session.path)).transcript
    assert transcript is not None
    assert any(
        isinstance(i, UserMessage) and "Please list the files here" in i.text for i in transcript.items
    )
    assert any(
        isinstance(i, ToolCall) and i.name == "bash" and i.essential_arg == "ls" for i in transcript.items
    )
    shutil.rmtree(home / ".cache", ignore_errors=True)
