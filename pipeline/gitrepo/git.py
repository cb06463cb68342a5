"""The one place memd runs git on the memory repository: a subprocess with a hardened environment and
configuration (``pipeline.gitrepo.git_env``, shared with the synchronous project probe).

Every call runs ``git`` with no user or system configuration, no hooks, no fsmonitor, no pager,
no prompts and no GPG signing, and refuses a repository whose ``.git/config`` (which a misbehaving
agent or another program could have written) names anything beyond plain data (filters, textconv,
diff and merge drivers, includes, credential helpers: ``git_env.refusal``), so nothing there makes
git execute anything. Each call has a timeout, at which git's whole process group is killed
(its ssh or https helper too); whatever is left of the group when git ends is killed as well.
A failure raises ``MemoryRepoError`` carrying git's stderr.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.git_env import SAFE_CONFIG, git_dir_of, refusal, safe_args, safe_env

__all__ = ["SAFE_CONFIG", "GitResult", "run_git", "run_git_bytes", "safe_args", "safe_env"]

log = structlog.get_logger(__name__)

GIT_TIMEOUT_S = 60.0
REAP_TIMEOUT_S = 10.0
"""How long a killed git's process group gets to let go of its pipes (a child that left the group
and holds them is given up on: memd goes on without it)."""
MAX_STDERR_CHARS = 2_000


@dataclass(frozen=True)
class GitResult:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


async def run_git(
    cwd: Path,
    *args: str,
    check: bool = True,
    timeout_s: float = GIT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> GitResult:
    """Run ``git <args>`` in ``cwd``. With ``check``, a non-zero exit raises ``MemoryRepoError``."""
    data = input_text.encode() if input_text is not None else None
    code, out, err = await run_git_bytes(cwd, *args, timeout_s=timeout_s, env=env, input_bytes=data)
    result = GitResult(tuple(args), code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    if check and result.returncode != 0:
        raise MemoryRepoError(_describe(result), stderr=result.stderr)
    return result


async def run_git_bytes(
    cwd: Path,
    *args: str,
    timeout_s: float = GIT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes | None = None,
) -> tuple[int, bytes, bytes]:
    """``git <args>`` in ``cwd`` as raw bytes: (exit status, stdout, stderr); never checks the status."""
    git_dir = await asyncio.to_thread(git_dir_of, cwd)
    if git_dir is not None and (why := await asyncio.to_thread(refusal, git_dir)) is not None:
        raise MemoryRepoError(f"git will not run in {cwd}: {why}")
    argv: Sequence[str] = ["git", *safe_args(), *args]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=safe_env(env),
            stdin=asyncio.subprocess.PIPE if input_bytes is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise MemoryRepoError(f"git is not installed or not on PATH ({exc.filename})") from None
    except OSError as exc:
        raise MemoryRepoError(f"cannot run git in {cwd}: {exc}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(input_bytes), timeout_s)
    except TimeoutError:
        await _kill(proc)
        raise MemoryRepoError(f"git {subcommand(args)} timed out after {timeout_s:g} s in {cwd}") from None
    except BaseException:
        await _kill(proc)
        raise
    _kill_group(proc.pid)  # what git started and left behind (an ssh master, a helper) ends with it
    return proc.returncode or 0, out, err


def _kill_group(pgid: int) -> bool:
    """SIGKILL to the process group git led; False when it has no process left."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill git's whole process group (git started it: ``start_new_session``), so its ssh or
    ``git-remote-https`` child dies with it, then reap git, waiting a bounded time for the pipes."""
    if not _kill_group(proc.pid):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    try:
        await asyncio.wait_for(proc.wait(), REAP_TIMEOUT_S)
    except TimeoutError:
        log.warning("git_not_reaped", pid=proc.pid)


OPTIONS_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace"})
"""git's own options (before the subcommand) that take the next word as their value."""


def subcommand(args: Sequence[str], words: int = 1) -> str:
    """The git command ``args`` runs (``fetch``), with up to ``words - 1`` of its first arguments,
    past git's own options (``-c key=value`` and the like)."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        del rest[: 2 if rest[0] in OPTIONS_WITH_VALUE else 1]
    return " ".join(rest[:words]) or "(no command)"


def _describe(result: GitResult) -> str:
    stderr = result.stderr.strip()[-MAX_STDERR_CHARS:]
    return f"git {subcommand(result.args, 3)} failed (exit {result.returncode}): {stderr or '(no output)'}"
