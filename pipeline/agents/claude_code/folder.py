"""Where Claude Code loads memory from, and whether memd's copy is there (standard library only:
`memd recall`, the SessionStart hook, reads it at every session start).

A project's auto-memory folder is ``<claude home>/projects/<encoded repo root>/memory/`` (every
character that is not an ASCII letter or digit becomes ``-``; a name over 200 characters is cut to
200 and given a hash suffix), and Claude Code loads its ``MEMORY.md`` unless auto memory is off
(``"autoMemoryEnabled": false``: the project's ``settings.local.json``, then its ``settings.json``,
then the user's decide). It always loads the global ``<claude home>/CLAUDE.md``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pipeline.publish.sentinel import BEGIN
from pipeline.safefile import UnsafeFile, read_capped

MAX_ENCODED_CHARS = 200
SETTINGS_MAX_BYTES = 1_000_000
"""The most memd reads of a Claude Code settings file (they hold a few kilobytes)."""
LOADED_MAX_BYTES = 2_000_000
"""The most memd reads of a file Claude Code loads, to find memd's block in it."""
GLOBAL_FILE = "CLAUDE.md"
INDEX_FILE = "MEMORY.md"
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")


def _js_string_hash(text: str) -> int:
    """Java/JavaScript ``(h << 5) - h + code`` over UTF-16 code units, as a signed 32-bit integer."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
        if value == 0:
            return out


def encode_project_dir(project: str) -> str:
    """Claude Code's folder name for a project path."""
    encoded = _NOT_ALNUM.sub("-", project)
    if len(encoded) <= MAX_ENCODED_CHARS:
        return encoded
    return f"{encoded[:MAX_ENCODED_CHARS]}-{_base36(abs(_js_string_hash(project)))}"


def memory_folder(claude_home: Path, project: str) -> Path:
    return claude_home / "projects" / encode_project_dir(project) / "memory"


def auto_memory_off(claude_home: Path, project: str) -> Path | None:
    """The settings file that turns Claude Code's auto memory off for ``project``, or None. The most
    specific file that sets ``autoMemoryEnabled`` decides: the project's ``settings.local.json``,
    then its ``settings.json``, then the user's. A file that is not valid JSON is passed over; one
    that is not a regular file or is huge raises ``safefile.UnsafeFile`` (memd cannot tell)."""
    for path in (
        Path(project) / ".claude" / "settings.local.json",
        Path(project) / ".claude" / "settings.json",
        claude_home / "settings.json",
    ):
        try:
            data = json.loads(read_capped(path, SETTINGS_MAX_BYTES))
        except (FileNotFoundError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("autoMemoryEnabled"), bool):
            return None if data["autoMemoryEnabled"] else path
    return None


def holds_memd_block(path: Path) -> bool:
    """``path`` is a file Claude Code can load that holds memd's block (memd published there)."""
    try:
        return BEGIN.encode() in read_capped(path, LOADED_MAX_BYTES)
    except (FileNotFoundError, UnsafeFile):
        return False


def loads_project_copy(claude_home: Path, project: str) -> bool:
    """Claude Code loads memd's copy of ``project``'s memory at session start: memd's block is in
    the project's auto-memory ``MEMORY.md`` and auto memory is on there."""
    if not holds_memd_block(memory_folder(claude_home, project) / INDEX_FILE):
        return False
    try:
        return auto_memory_off(claude_home, project) is None
    except UnsafeFile:
        return False


def loads_global_copy(claude_home: Path) -> bool:
    """Claude Code loads memd's copy of the global memory: memd's block is in its ``CLAUDE.md``."""
    return holds_memd_block(claude_home / GLOBAL_FILE)


class Hook:
    """Claude Code's SessionStart hook (``pipeline.roster.SessionHook``)."""

    def settings_file(self, root: Path) -> Path:
        """``~/.claude/settings.json``: the transcripts root's parent holds it."""
        return root.parent / "settings.json"

    def loads_project_copy(self, home: Path, project: str) -> bool:
        return loads_project_copy(home, project)

    def loads_global_copy(self, home: Path) -> bool:
        return loads_global_copy(home)


HOOK = Hook()
