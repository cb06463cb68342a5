"""memd's console entry (``daemon.cli.main``) run inside the test's process, as ``python -m daemon``
would run it (not a test module): its own environment, its exit status, stdout and stderr apart.

A real ``memd`` process costs a second or more of CPU, most of it imports; a test that runs memd many
times runs the first of each command as a real process (the console entry itself is tested) and
the rest here. The command runs on a thread of its own (it calls ``asyncio.run``, which a test's
running event loop would refuse); the process-wide things it changes (the environment, the umask,
structlog's configuration, the root logger's handlers and level) are put back when it ends."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import structlog
from click.testing import CliRunner


def run_memd(env: Mapping[str, str], args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """``memd ARGS`` with exactly ``env`` as its environment, in this process: what
    ``subprocess.run([sys.executable, "-m", "daemon", *args], env=env, capture_output=True,
    text=True)`` would return."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_run, dict(env), list(args)).result(timeout=120)


def _run(env: dict[str, str], args: list[str]) -> subprocess.CompletedProcess[str]:
    from daemon.cli import main

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logs = structlog.get_config()
    umask = os.umask(0o022)
    os.umask(umask)
    # the runner sets what ``env`` holds and unsets the rest of this process's environment
    isolated: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    isolated.update(env)
    try:
        with CliRunner().isolation(env=isolated) as (out, err, _):
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                if isinstance(exc.code, str):  # what the interpreter prints and ends with status 1
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            sys.stdout.flush()
            sys.stderr.flush()
            stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    finally:
        os.umask(umask)
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**logs)
    return subprocess.CompletedProcess(["memd", *args], code, stdout, stderr)
