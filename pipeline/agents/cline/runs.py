"""The folders Cline ran in, from its session manifests: where a project's rule file must be for
Cline to load it (Cline reads ``.clinerules/`` of the folder it runs in only, never a parent's).

Every manifest is another program's file: read without following a symlink, at most
``MAX_MANIFEST_BYTES`` each and the ``MAX_SESSIONS`` newest sessions (their folders are named
by the start time in milliseconds), so a huge session store costs a bounded read. A manifest that
cannot be read is skipped: a folder is only ever added, within the project.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pipeline.safefile import read_capped

MAX_SESSIONS = 500
MAX_MANIFEST_BYTES = 1024 * 1024


def recorded_cwds(sessions: Path) -> set[str]:
    """The ``cwd`` of each of the newest sessions under ``sessions`` (``~/.cline/data/sessions``)."""
    try:
        names = sorted(
            (e.name for e in os.scandir(sessions) if e.is_dir(follow_symlinks=False)), reverse=True
        )
    except OSError:
        return set()
    cwds: set[str] = set()
    for name in names[:MAX_SESSIONS]:
        try:
            value = json.loads(
                read_capped(sessions / name / f"{name}.json", MAX_MANIFEST_BYTES, follow_symlinks=False)
            )
        except (OSError, ValueError, RecursionError):
            continue
        cwd = value.get("cwd") if isinstance(value, dict) else None
        if isinstance(cwd, str) and cwd:
            cwds.add(cwd)
    return cwds


def folders_in(project: Path, cwds: set[str]) -> list[Path]:
    """The project's own folder, then each folder of ``cwds`` inside it that exists (sorted): never
    one inside ``.git``, nor one in a repository of its own nested in the project (a submodule, a
    vendored checkout: its sessions are that repository's project, not this one's)."""
    found = {project}
    for cwd in cwds:
        folder = Path(os.path.normpath(cwd))
        if not (folder.is_absolute() and folder.is_relative_to(project)) or folder == project:
            continue
        inside = folder.relative_to(project).parts
        if ".git" in inside or ".." in inside or not folder.is_dir():
            continue
        if any(os.path.lexists(project.joinpath(*inside[:n], ".git")) for n in range(1, len(inside) + 1)):
            continue
        found.add(folder)
    return sorted(found, key=lambda p: (p != project, str(p)))
