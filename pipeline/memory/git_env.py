"""The hardened configuration and environment every git call of memd gets, and a small synchronous probe.

Both runners use these: ``pipeline.memory.git.run_git`` (async, the memory repository) and
``git_stdout`` here (sync, read-only questions about a *user's* repository, such as which project
a working directory belongs to). Nothing in a repository's ``.git/config`` (fsmonitor, hooks, a
pager, an external diff, signing) and nothing of the user's or the system's git configuration runs.
This module imports nothing heavy: the recall hook resolves projects through it on every prompt.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

PROBE_TIMEOUT_S = 5.0

SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.autocrlf", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.quotePath", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("merge.renames", "true"),
    ("protocol.allow", "never"),
    ("protocol.file.allow", "always"),
    ("init.defaultBranch", "main"),
    ("user.name", "memd"),
    ("user.email", "memd@localhost"),
)


def safe_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment git sees: nothing inherited but PATH."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": "UTC",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "true",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_AUTHOR_NAME": "memd",
        "GIT_AUTHOR_EMAIL": "memd@localhost",
        "GIT_COMMITTER_NAME": "memd",
        "GIT_COMMITTER_EMAIL": "memd@localhost",
    }
    if extra:
        env.update(extra)
    return env


def safe_args() -> list[str]:
    args: list[str] = []
    for key, value in SAFE_CONFIG:
        args += ["-c", f"{key}={value}"]
    return args


def git_stdout(cwd: Path, *args: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """``git <args>`` in ``cwd`` with the hardened config: its stripped stdout, or None when git is
    missing, fails, times out or prints nothing (a probe never raises)."""
    try:
        done = subprocess.run(
            ["git", *safe_args(), *args],
            cwd=cwd,
            env=safe_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None
