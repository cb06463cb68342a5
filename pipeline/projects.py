"""Which project a session belongs to, and the memory scope that project maps to.

A working directory resolves through ``git rev-parse --git-common-dir``, so a linked worktree or a
subfolder joins its main repository; a directory outside git is its own project; a directory that
no longer exists keeps the project recorded when it was seen.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

GLOBAL_SCOPE = "global"
GIT_TIMEOUT_S = 5.0
_GIT_ENV_KEEP = ("PATH", "LANG", "SYSTEMROOT")
_GIT_SAFE_ARGS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _GIT_ENV_KEEP}
    env.update(
        {"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
    )
    return env


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *_GIT_SAFE_ARGS, *args],
            cwd=cwd,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


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


def project_key(project: str) -> str:
    """A stable, readable folder name for a project: its base name and a short hash of its full path."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(project).name).strip("-.") or "root"
    digest = hashlib.sha256(project.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base[:48]}-{digest}"


def scope_for(project: str | None) -> str:
    """The memory scope of a project: ``projects/<key>``, or ``global`` for a session without one."""
    return GLOBAL_SCOPE if not project else f"projects/{project_key(project)}"
