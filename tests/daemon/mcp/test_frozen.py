"""``daemon/mcp/frozen.json`` is what the real SDK server answers, so the front never drifts from it."""

from __future__ import annotations

import json

from daemon.mcp.front import FROZEN, load_frozen
from daemon.mcp.frozen import render, snapshot
from pipeline import __version__


def test_the_frozen_answers_are_what_the_sdk_server_answers_now() -> None:
    made = snapshot()
    assert render(made) == FROZEN.read_text(encoding="utf-8"), (
        "daemon/mcp/frozen.json is stale: regenerate it with `.venv/bin/python -m daemon.mcp.frozen`"
    )
    tools = [tool["name"] for tool in made["answers"][made["latest"]]["tools/list"]["tools"]]
    assert tools == ["memory_search", "memory_get", "memory_remember", "memory_feedback"]


def test_the_front_uses_the_file_only_when_it_was_made_by_this_memd_and_this_sdk() -> None:
    assert load_frozen(__version__) == json.loads(FROZEN.read_text(encoding="utf-8"))
    assert load_frozen("0.0.0-other") is None
