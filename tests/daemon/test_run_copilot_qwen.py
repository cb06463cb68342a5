"""`memd run --once` (in process) over the real GitHub Copilot CLI and Qwen Code samples, against the loopback
fake of the Messages API: their sessions are extracted (redacted, the instruction text Copilot
recorded left out) and consolidated like any other agent's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.config import load_settings
from tests.daemon.memd_inprocess import memd
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, json_message
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import write_memory
from tests.pipeline.extract.support import extract_output

pytestmark = [pytest.mark.timeout(300)]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
SECRET = "ghp_XGB65dGcQy9eThnpDBZvYxXkNdh62qDRRdNa"


def _respond(body: dict[str, Any], _headers: dict[str, str]) -> FakeResponse:
    if body.get("tools"):  # a consolidation conversation: the turn is the number of answers so far
        turns = write_memory()
        return turns[min(sum(1 for m in body["messages"] if m["role"] == "assistant"), len(turns) - 1)]
    return json_message(extract_output())


@pytest.fixture
def api() -> Iterator[FakeAnthropicAPI]:
    fake = FakeAnthropicAPI().start()
    fake.responder = _respond
    try:
        yield fake
    finally:
        fake.stop()


def test_run_once_extracts_and_consolidates_copilot_and_qwen_sessions(
    tmp_path: Path, api: FakeAnthropicAPI
) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "copilot_cli" / "session-state", home / ".copilot" / "session-state")
    shutil.copytree(FIXTURES / "qwen_code" / "projects", home / ".qwen" / "projects")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "COPILOT_", "QWEN_"))}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "MEMD_LLM__BASE_URL": api.base_url,
            "MEMD_LLM__BATCH": "off",
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
            "MEMD_MEMORIES__INCLUDE_NON_INTERACTIVE": "true",
            "MEMD_LOG_LEVEL": "WARNING",
        }
    )
    done = memd(env, "run", "--once")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "extract ok" in done.stdout, done.stdout
    assert "consolidate ok" in done.stdout, done.stdout

    bodies = [json.dumps(r.body) for r in api.message_requests()]
    extractions = [b for b in bodies if "Extract what is worth remembering from this session" in b]
    agents = {
        a
        for text in extractions
        for a in ("GitHub Copilot CLI", "Qwen Code")
        if f"- Agent: {a}" in text.replace("\\n", "\n")
    }
    assert agents == {"GitHub Copilot CLI", "Qwen Code"}
    sessions = sorted(m for b in extractions for m in re.findall(r"- Session: ([\w-]+)", b))
    assert sessions == [  # three sessions of each; the Qwen sub-agent is part of its parent's work
        "3fd7c126-5204-45fe-bfba-e296d37a14d4",
        "541f0786-a632-49d3-9104-b2507d38fada",
        "5fb34c7b-a8fb-4697-99c6-668cdfb32083",
        "9a6fb558-84a3-408a-bc55-62d5c09b94c1",
        "ddfb6016-6ddd-4e85-b73c-4ad4ed28c441",
        "f5feb490-8be4-4de1-9b9b-b22e9ab00d0a",
    ]
    every_request = json.dumps([r.body for r in api.message_requests()])
    assert SECRET not in every_request  # redacted before it left
    assert "MK_R_AGENTS" not in every_request  # the instruction text of Copilot's system message
    settings = load_settings(None, env=env).settings
    log = subprocess.run(
        ["git", "-C", str(settings.paths.memory_dir), "log", "--format=%s"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert log.strip(), "no consolidation was committed"
