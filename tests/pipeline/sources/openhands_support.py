"""OpenHands conversation folders written for the tests, shaped as OpenHands 1.16 writes them
(``base_state.json`` and ``events/event-<index>-<uuid>.json``), never copied from a real one."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

CONV_ID = "5734f31b-9da8-4b93-8430-63e7c013ccc7"
CONV_HEX = CONV_ID.replace("-", "")


def text(value: str) -> list[dict[str, Any]]:
    return [{"cache_prompt": False, "type": "text", "text": value}]


def system_prompt(cwd: str, repo_context: str = "") -> dict[str, Any]:
    return {
        "kind": "SystemPromptEvent",
        "source": "agent",
        "system_prompt": {"type": "text", "text": "You are OpenHands agent."},
        "dynamic_context": {
            "type": "text",
            "text": f"<REPO_CONTEXT>\n{repo_context}\n</REPO_CONTEXT>\nYour current working directory is: {cwd}\n",
        },
    }


def user(value: str, extended: str = "") -> dict[str, Any]:
    return {
        "kind": "MessageEvent",
        "source": "user",
        "llm_message": {"role": "user", "content": text(value), "thinking_blocks": []},
        "activated_skills": ["memd"] if extended else [],
        "extended_content": text(extended) if extended else [],
    }


def agent_says(value: str) -> dict[str, Any]:
    return {
        "kind": "MessageEvent",
        "source": "agent",
        "llm_message": {"role": "assistant", "content": text(value), "thinking_blocks": []},
        "activated_skills": [],
        "extended_content": [],
    }


def action(
    tool: str, args: dict[str, Any], call_id: str, thought: str = "", kind: str = ""
) -> dict[str, Any]:
    return {
        "kind": "ActionEvent",
        "source": "agent",
        "thought": text(thought) if thought else [],
        "action": {**args, "kind": kind or "TerminalAction"},
        "tool_name": tool,
        "tool_call_id": call_id,
        "tool_call": {"id": call_id, "name": tool, "arguments": json.dumps(args), "origin": "completion"},
    }


def observation(
    tool: str, call_id: str, output: str, *, exit_code: int | None = 0, is_error: bool = False
) -> dict[str, Any]:
    obs: dict[str, Any] = {"content": text(output), "is_error": is_error, "kind": "TerminalObservation"}
    if exit_code is not None:
        obs["exit_code"] = exit_code
    return {
        "kind": "ObservationEvent",
        "source": "environment",
        "tool_name": tool,
        "tool_call_id": call_id,
        "observation": obs,
        "action_id": "x",
    }


def state(cwd: str, *, headless: bool = True, conv_id: str = CONV_ID) -> dict[str, Any]:
    return {
        "id": conv_id,
        "agent": {
            "llm": {"model": "openai/stub-model", "api_key": "**********"},
            "agent_context": {"skills": [{"name": "agents", "content": "SKILL_TEXT_IN_STATE"}]},
        },
        "workspace": {"working_dir": cwd, "kind": "LocalWorkspace"},
        "execution_status": "finished",
        "confirmation_policy": {"kind": "NeverConfirm" if headless else "AlwaysConfirm"},
    }


def write_conversation(
    root: Path,
    events: list[dict[str, Any]],
    *,
    cwd: str = "/home/dev/shop",
    headless: bool = True,
    conv: str = CONV_HEX,
    with_state: bool = True,
    start: str = "2026-12-07T14:16:41",
) -> Path:
    """``root/<conv>/`` with ``base_state.json`` and one file per event, timestamps a second apart."""
    folder = root / conv
    (folder / "events").mkdir(parents=True, exist_ok=True)
    if with_state:
        conv_id = str(uuid.UUID(conv)) if len(conv) == 32 else conv
        (folder / "base_state.json").write_text(json.dumps(state(cwd, headless=headless, conv_id=conv_id)))
    append_events(folder, events, start=start)
    return folder


def append_events(folder: Path, events: list[dict[str, Any]], *, start: str = "2026-12-07T14:16:41") -> None:
    existing = len(list((folder / "events").glob("event-*.json")))
    for offset, event in enumerate(events):
        index = existing + offset
        event_id = str(uuid.uuid4())
        stamped = {"id": event_id, "timestamp": f"{start}.{index:06d}", **event}
        (folder / "events" / f"event-{index:05d}-{event_id}.json").write_text(json.dumps(stamped))
