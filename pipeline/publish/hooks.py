"""``memd hooks install claude-code``: ``memd recall`` as a SessionStart hook in Claude Code's settings.

The settings file is the user's: memd merges one hook entry into it and keeps every other key,
hook and value; running the install again changes nothing; a file that is not a JSON object is
refused, never overwritten. It is read with a cap and never blocks (a FIFO or a device is refused),
and written like a user-level file: through a symlink only to a regular file the user owns.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import PublishError
from pipeline.publish.atomic import UnsafeTarget, atomic_write_text, decode
from pipeline.safefile import UnsafeFile, read_capped

EVENT = "SessionStart"
HOOK_TIMEOUT_S = 10
"""Claude Code stops waiting for the hook after this; recall answers well within it."""
SETTINGS_MAX_BYTES = 1_000_000
"""The most memd reads of Claude Code's settings file (it holds a few kilobytes)."""
RECALL_MODULE = "daemon.cli.recall"
"""``memd recall`` as its own program: the hook skips loading every other memd command."""


@dataclass(frozen=True)
class HookChange:
    path: Path
    action: str
    """added, updated, unchanged, removed, absent."""
    text: str
    """The settings file as it is (or, in a dry run, would be) afterwards."""


def recall_command(python: str, config_path: Path | None = None) -> str:
    """The hook's command line: ``PYTHON -P -m daemon.cli.recall [--config PATH] --format claude-hook``
    (``memd [--config PATH] recall --format claude-hook``, started faster). ``-P``: Claude Code runs
    the hook in the session's folder, and a project's own ``daemon`` package must not run instead."""
    words = [python, "-P", "-m", RECALL_MODULE, *(["--config", str(config_path)] if config_path else [])]
    return shlex.join([*words, "--format", "claude-hook"])


def is_memd_hook(hook: Any) -> bool:
    """memd's entry, in this form or as ``memd ... recall --format claude-hook``."""
    command = hook.get("command") if isinstance(hook, dict) else None
    return (
        isinstance(command, str)
        and "--format claude-hook" in command
        and (RECALL_MODULE in command or " recall " in command)
    )


def merge_hook(
    settings: dict[str, Any], command: str, *, timeout_s: int = HOOK_TIMEOUT_S
) -> tuple[dict[str, Any], str]:
    """``settings`` with memd's SessionStart hook (a deep copy); the action taken."""
    data: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise PublishError("its 'hooks' value is not an object; fix it first")
    groups = hooks.setdefault(EVENT, [])
    if not isinstance(groups, list):
        raise PublishError(f"its 'hooks.{EVENT}' value is not a list; fix it first")
    wanted = {"type": "command", "command": command, "timeout": timeout_s}
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list):
            continue
        for i, hook in enumerate(inner):
            if is_memd_hook(hook):
                if all(hook.get(k) == v for k, v in wanted.items()):
                    return data, "unchanged"
                inner[i] = {**hook, **wanted}
                return data, "updated"
    groups.append({"hooks": [wanted]})
    return data, "added"


def remove_hook(settings: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``settings`` without memd's hook: a group, the ``SessionStart`` list and the ``hooks`` object
    that its removal leaves empty are dropped; an empty one the user wrote stays."""
    data: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = data.get("hooks")
    groups = hooks.get(EVENT) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        return data, "absent"
    action = "absent"
    kept = []
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(inner, list) and any(is_memd_hook(h) for h in inner):
            action = "removed"
            group = {**group, "hooks": [h for h in inner if not is_memd_hook(h)]}
            if not group["hooks"]:
                continue
        kept.append(group)
    assert isinstance(hooks, dict)
    hooks[EVENT] = kept
    if action == "removed" and not kept:  # what only memd's hook filled goes with it
        del hooks[EVENT]
        if not hooks:
            del data["hooks"]
    return data, action


def load_settings_json(path: Path) -> dict[str, Any]:
    try:
        text = decode(read_capped(path, SETTINGS_MAX_BYTES))
    except FileNotFoundError:
        return {}
    except UnsafeFile as exc:
        raise PublishError(f"{exc}; memd will not read or overwrite it") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PublishError(f"{path} is not valid JSON ({exc}); memd will not overwrite it") from None
    if not isinstance(data, dict):
        raise PublishError(f"{path} does not hold a JSON object; memd will not overwrite it")
    return data


def install_claude_hook(path: Path, command: str, *, dry_run: bool = False) -> HookChange:
    current = load_settings_json(path)
    try:
        merged, action = merge_hook(current, command)
    except PublishError as exc:
        raise PublishError(f"{path}: {exc}") from None
    return _finish(path, merged, action, dry_run)


def uninstall_claude_hook(path: Path, *, dry_run: bool = False) -> HookChange:
    merged, action = remove_hook(load_settings_json(path))
    return _finish(path, merged, action, dry_run)


def _finish(path: Path, data: dict[str, Any], action: str, dry_run: bool) -> HookChange:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if action in {"added", "updated", "removed"} and not dry_run:
        try:
            atomic_write_text(path, text, follow_link=True)
        except UnsafeTarget as exc:
            raise PublishError(f"{exc}; left alone") from None
    return HookChange(path=path, action=action, text=text)
