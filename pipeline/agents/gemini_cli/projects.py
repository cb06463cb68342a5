"""Gemini CLI's project root for a chat file: the working directory its sessions ran in.

``~/.gemini/tmp/<project id>/chats/...``: the project id is the sha256 of the root path (<= v0.28)
or a slug of its name (v0.29+). The root is read from ``<project dir>/.project_root``, else from
``~/.gemini/projects.json`` (``{"projects": {root: slug}}``): the entry whose slug is the directory
name, or whose sha256 is the directory name or the record's ``projectHash``. Both files are read
as hostile (``pipeline.safefile``: a regular file, capped, never blocking); one that is not
usable counts as absent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pipeline.safefile import read_text_capped

MAX_MARKER_BYTES = 4096  # a path
MAX_REGISTRY_BYTES = 8 * 1024 * 1024  # every project the user ever ran Gemini CLI in


class GeminiProjects:
    """Resolves chat files to project roots; caches ``projects.json`` by mtime."""

    def __init__(self, registry: Path | None = None) -> None:
        self._registry = registry
        self._cache: dict[str, tuple[int, dict[str, str]]] = {}

    def root_for(self, chat_file: Path, project_hash: str | None = None) -> str | None:
        parts = chat_file.parts
        if "chats" not in parts:
            return None
        at = len(parts) - 1 - parts[::-1].index("chats")
        project = Path(*parts[:at])
        try:
            marker = read_text_capped(project / ".project_root", MAX_MARKER_BYTES).strip()
        except OSError:  # missing, not a regular file (a FIFO, /dev/zero), or too long for a path
            marker = ""
        if marker:
            return marker
        hashes = {project.name, project_hash}
        for root, slug in self._projects(self._registry or project.parent.parent / "projects.json").items():
            if slug == project.name or hashlib.sha256(root.encode()).hexdigest() in hashes:
                return root
        return None

    def _projects(self, registry: Path) -> dict[str, str]:
        try:
            mtime = registry.stat().st_mtime_ns
        except OSError:
            return {}
        cached = self._cache.get(str(registry))
        if cached and cached[0] == mtime:
            return cached[1]
        try:
            data = json.loads(read_text_capped(registry, MAX_REGISTRY_BYTES))
        except (OSError, ValueError, RecursionError):
            data = None
        table = data.get("projects") if isinstance(data, dict) else None
        projects = {k: v for k, v in table.items() if isinstance(v, str)} if isinstance(table, dict) else {}
        self._cache[str(registry)] = (mtime, projects)
        return projects
