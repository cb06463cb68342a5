"""Which project a session belongs to, and the memory scope that project maps to.

A working directory resolves through ``git rev-parse --git-common-dir``, so a linked worktree or a
subfolder joins its main repository; a directory outside git is its own project; a directory that
no longer exists keeps the project recorded when it was seen. Git runs through
``pipeline.memory.git_env.git_stdout``: the hardened configuration (no fsmonitor, no hooks, no user or
system config) of every git call memd makes.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from pipeline.memory.git_env import git_stdout

GLOBAL_SCOPE = "global"
GIT_TIMEOUT_S = 5.0


def _git(cwd: Path, *args: str) -> str | None:
    return git_stdout(cwd, *args, timeout_s=GIT_TIMEOUT_S)


def git_project_root(directory: Path) -> Path | None:
    """The main worktree's root of the repository containing ``directory``, or None outside git."""
    common = _git(directory, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if common is None:
        return None
    common_path = Path(common)
    if common_path.name == ".git":
        return common_path.parent
    # A bare repository, a submodule (.git/modules/x) or a separate git dir: use the worktree's top level.
    top = _git(directory, "rev-parse", "--show-toplevel")
    return Path(top) if top else None


class ProjectResolver:
    """Resolves working directories to projects, asking git once per directory."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def resolve(self, cwd: str | None, recorded: str | None = None) -> str | None:
        if not cwd:
            return recorded
        if cwd in self._cache:
            return self._cache[cwd]
        directory = Path(cwd)
        if not directory.is_dir():
            # Gone since (a deleted worktree, a temp dir): keep what was recorded when it existed.
            return recorded or os.path.normpath(cwd)
        root = git_project_root(directory)
        project = str(root) if root is not None else os.path.normpath(str(directory.resolve()))
        self._cache[cwd] = project
        return project


def resolve_project(cwd: str | None, recorded: str | None = None) -> str | None:
    return ProjectResolver().resolve(cwd, recorded)


IGNORE_FILE = ".memd-ignore"


def has_ignore_file(project: str) -> bool:
    """Has the user opted the project out of memory (a ``.memd-ignore`` file in its root)?"""
    return os.path.exists(os.path.join(project, IGNORE_FILE))


def project_key(project: str) -> str:
    """A stable, readable folder name for a project: its base name and a short hash of its full path."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(project).name).strip("-.") or "root"
    digest = hashlib.sha256(project.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base[:48]}-{digest}"


def scope_for(project: str | None) -> str:
    """The memory scope of a project: ``projects/<key>``, or ``global`` for a session without one."""
    return GLOBAL_SCOPE if not project else f"projects/{project_key(project)}"
