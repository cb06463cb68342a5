"""The hardened configuration and environment every git call of memd gets, and a small synchronous probe.

Both runners use these: ``pipeline.gitrepo.git.run_git`` (async, the memory repository) and
``git_stdout`` here (sync, read-only questions about a *user's* repository, such as which project
a working directory belongs to). Nothing of the user's or the system's git configuration is read.

A repository's own ``.git/config`` is read by git whatever the environment says, and a key under
a name git cannot be told to ignore (``filter.<x>.clean``, ``diff.<x>.textconv``, ``merge.<x>.driver``,
``include.path``, ``credential.helper``...) makes it run a program. So the keys memd overrides on
every call (``SAFE_CONFIG``: hooks, fsmonitor, pager, editor, ssh, signing) are overridden, and
``unsafe_config_keys`` checks the rest against a short list of keys that only ever hold data (what
``git init`` and ``git clone`` write, remotes and branches): a repository whose config names
anything else is refused before git runs there (``pipeline.gitrepo.git.run_git``). The config file
itself is read as hostile (no FIFO, device or huge file).
This module imports nothing heavy: the recall hook resolves projects through it on every prompt.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pipeline.safefile import UnsafeFile, read_text_capped

PROBE_TIMEOUT_S = 5.0

SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.autocrlf", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.askPass", ""),
    ("core.attributesFile", "/dev/null"),
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


DATA_KEYS = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "core.sparsecheckout",
        "core.sparsecheckoutcone",
        "index.sparse",
        "extensions.objectformat",
        "extensions.worktreeconfig",  # sparse checkout; config.worktree is checked the same way
        "remote.*.url",
        "remote.*.fetch",
        "remote.*.pushurl",
        "remote.*.tagopt",
        "remote.*.promisor",
        "remote.*.partialclonefilter",
        "branch.*.remote",
        "branch.*.merge",
        *(key.lower() for key, _ in SAFE_CONFIG),
    }
)
"""The keys of a repository's own config that hold only data (``*`` is any subsection). Every other
key is refused: the list of keys that can run a program grows with git, this one does not."""
MAX_CONFIG_BYTES = 256 * 1024
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\](.*)$')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=.*)?$")


def git_dir_of(cwd: Path) -> Path | None:
    """The ``.git`` folder of the work tree holding ``cwd`` (None outside one, or for a ``.git``
    file such as a linked work tree's, which memd never makes)."""
    for folder in (cwd, *cwd.parents):
        candidate = folder / ".git"
        if candidate.is_dir():
            return candidate
        if candidate.exists():
            return None
    return None


CONFIG_FILES = ("config", "config.worktree")


def unsafe_config_keys(git_dir: Path) -> list[str]:
    """The keys of ``<git_dir>/config`` (and ``config.worktree``) that are not plain data
    (``DATA_KEYS``), as git names them (``filter.x.clean``); a line that is not a key or a section
    counts as unsafe. ``UnsafeFile`` when a config is not a regular file memd can read."""
    found: list[str] = []
    for name in CONFIG_FILES:
        try:
            text = read_text_capped(git_dir / name, MAX_CONFIG_BYTES, follow_symlinks=False)
        except FileNotFoundError:
            continue
        found += _unsafe_keys(text)
    return found


def _unsafe_keys(text: str) -> list[str]:
    found: list[str] = []
    section = ""
    continued = False
    for raw in text.splitlines():
        line = raw.strip()
        if continued:
            continued = _continues(line)
            continue
        if not line or line[0] in "#;":
            continue
        header = _SECTION.match(line)
        if header:
            name, sub, rest = header.group(1), header.group(2), header.group(3).strip()
            base, _, legacy_sub = name.partition(".")
            subsection = sub if sub is not None else legacy_sub
            section = f"{base.lower()}.{subsection}" if subsection else base.lower()
            if not rest or rest[0] in "#;":
                continue
            line = rest
        key = _KEY.match(line)
        if key is None or not section:
            found.append(f"(unreadable line: {line[:40]!r})")
            continue
        continued = _continues(line)
        full = f"{section}.{key.group(1).lower()}"
        if _pattern(section, key.group(1)) not in DATA_KEYS:
            found.append(full)
    return found


def _pattern(section: str, key: str) -> str:
    base, _, sub = section.partition(".")
    return f"{base}.*.{key.lower()}" if sub else f"{base}.{key.lower()}"


def _continues(line: str) -> bool:
    """A value line ending in an unescaped backslash goes on on the next line."""
    stripped = line.rstrip()
    return (len(stripped) - len(stripped.rstrip("\\"))) % 2 == 1


def refusal(git_dir: Path) -> str | None:
    """Why memd will not run git in the repository of ``git_dir`` (None when it may)."""
    try:
        keys = unsafe_config_keys(git_dir)
    except UnsafeFile as exc:
        return f"its git config {exc.reason}"
    if not keys:
        return None
    shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
    return (
        f"its git config ({git_dir / 'config'}) sets {shown}, which could run a program; "
        f"memd runs no git there until it is removed (git config --unset <key>)"
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
