"""How memd's git talks to a remote: which transports, which programs, which limits.

Every call against a remote gets, on top of the hardened configuration of every git call
(``pipeline.gitrepo.git_env``):

- the ``file``, ``git``, ``ssh`` and ``https`` transports only (never ``ext::`` or another helper
  that runs a program), and a URL given on the command line, never written into a config;
- ``ssh`` itself as the ssh command (whatever a repository's config or the environment says), in
  batch mode (never a prompt) with a connect timeout and keep-alives that end a dead connection;
- for https, a low-speed limit: a server that sends less than ``LOW_SPEED_BYTES`` a second for
  ``LOW_SPEED_S`` seconds is given up on;
- a remote on this machine (a path or ``file://``: a shared folder, NFS, a USB disk) is data. git
  runs ``git-upload-pack``/``git-receive-pack`` in it and drops memd's ``-c`` settings for them,
  so memd names those programs itself (``--upload-pack``/``--receive-pack``), with the hardened
  configuration again: no hook of the remote (its own or the folder its ``core.hooksPath``
  names), no fsmonitor, no alternate-refs command, no push into a checked-out branch, no
  automatic gc. Before any git call there, its config is checked like the memory repository's
  (``git_env.refusal``): a config that names a program (a filter, an include, a credential helper)
  is refused with the key to remove;
- the whole call ends at its timeout with git's process group (``pipeline.gitrepo.git``).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from pipeline.errors import MemoryRepoError, SyncRefused
from pipeline.gitrepo.git_env import refusal, safe_args

CONNECT_TIMEOUT_S = 20
ALIVE_INTERVAL_S = 15
ALIVE_COUNT = 3
LOW_SPEED_BYTES = 1000
LOW_SPEED_S = 30
SSH_COMMAND = (
    f"ssh -o BatchMode=yes -o ConnectTimeout={CONNECT_TIMEOUT_S} "
    f"-o ServerAliveInterval={ALIVE_INTERVAL_S} -o ServerAliveCountMax={ALIVE_COUNT}"
)
REMOTE_CONFIG: tuple[tuple[str, str], ...] = (
    ("protocol.allow", "never"),
    ("protocol.file.allow", "always"),
    ("protocol.git.allow", "always"),
    ("protocol.ssh.allow", "always"),
    ("protocol.https.allow", "always"),
    ("core.sshCommand", SSH_COMMAND),
    ("http.lowSpeedLimit", str(LOW_SPEED_BYTES)),
    ("http.lowSpeedTime", str(LOW_SPEED_S)),
    ("core.bigFileThreshold", "1m"),  # a big incoming blob is streamed to disk, never held whole
    ("fetch.recurseSubmodules", "false"),
    ("transfer.fsckObjects", "true"),
    ("push.recurseSubmodules", "no"),
)
"""The configuration of memd's git for a call against a remote."""
SERVING_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.alternateRefsCommand", "true"),
    ("receive.denyCurrentBranch", "refuse"),
    ("receive.autogc", "false"),
    ("core.bigFileThreshold", "1m"),
)
"""What the git serving a remote on this machine gets besides ``SAFE_CONFIG`` (hooks, fsmonitor...)."""
PASSED_ENV = ("SSH_AUTH_SOCK",)
"""The only variables of memd's environment a fetch or a push sees (ssh's agent)."""
GIT_DIR_SUFFIXES = ("/.git", "", ".git/.git", ".git")
"""Where git looks for the repository of a local path, in its order (``enter_repo``)."""


def check_url(url: str) -> str:
    if not url or url.startswith("-") or "::" in url.split("/", 1)[0] or any(c in url for c in "\0\n\r"):
        raise MemoryRepoError(f"not a git remote memd uses: {url[:80]!r}")
    return url


def remote_args() -> list[str]:
    """``-c key=value`` for every setting of ``REMOTE_CONFIG``."""
    return _as_args(REMOTE_CONFIG)


def remote_env() -> dict[str, str]:
    return {k: os.environ[k] for k in PASSED_ENV if k in os.environ}


def local_path(url: str) -> str | None:
    """The path of a remote git reaches on this machine (a path or ``file://``), else None
    (``ssh://``, ``git@host:path``, ``git://``, ``https://``)."""
    if url.startswith("file://"):
        return url[len("file://") :]
    if "://" in url:
        return None
    colon, slash = url.find(":"), url.find("/")
    if colon >= 0 and (slash < 0 or colon < slash):
        return None  # scp-like: ssh
    return url


def serving(option: str, program: str, url: str) -> list[str]:
    """``--upload-pack=<git with the hardened config> upload-pack`` (or the receive side) for a
    remote on this machine; nothing for another transport (a server runs what it runs)."""
    if local_path(url) is None:
        return []
    command = ["git", *safe_args(), *_as_args(SERVING_CONFIG), program]
    return [f"{option}={shlex.join(command)}"]


def upload_pack(url: str) -> list[str]:
    return serving("--upload-pack", "upload-pack", url)


def receive_pack(url: str) -> list[str]:
    return serving("--receive-pack", "receive-pack", url)


def check_local_remote(url: str, cwd: Path) -> None:
    """For a remote on this machine: ``SyncRefused`` when git there would read a config that can
    run a program (``git_env.refusal``) or a repository memd cannot check (a ``.git`` file, a
    linked work tree, a path memd does not resolve as git would). Nothing for another transport."""
    raw = local_path(url)
    if raw is None:
        return
    if url.startswith("file://") and (not raw.startswith("/") or "%" in raw):
        raise SyncRefused(f"memd takes a file:// remote as file:///<full path>, without %-escapes: {url!r}")
    if not raw or raw.startswith("~"):
        raise SyncRefused(f"memd does not resolve the remote path {raw!r} as git would: give it in full")
    base = cwd / raw
    for suffix in GIT_DIR_SUFFIXES:
        candidate = Path(str(base) + suffix)
        if candidate.is_file():
            raise SyncRefused(
                f"the remote {candidate} is a .git file pointing elsewhere: memd syncs with a repository "
                "folder only (a bare repository: git init --bare)"
            )
        if candidate.is_dir() and (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            if (candidate / "commondir").exists():
                raise SyncRefused(f"the remote {candidate} is a linked work tree: use a bare repository")
            why = refusal(candidate)
            if why is not None:
                raise SyncRefused(f"the remote repository {candidate} is not synced with: {why}")
            return


def _as_args(pairs: tuple[tuple[str, str], ...]) -> list[str]:
    args: list[str] = []
    for key, value in pairs:
        args += ["-c", f"{key}={value}"]
    return args
