"""`memd ARGS` run in this process, as `python -m daemon ARGS` would run it (not a test module).

The real entry point (``daemon.cli.main``: its umask, its mapping of errors to exit statuses) with
stdin, stdout, stderr and the environment swapped for the call by click's test runner. The
environment is exactly the one given (every other variable is unset for the call); the process
umask and the root logger's handlers are restored afterwards. What only a whole process has (its
start, signals from outside, a terminal) is left to the few tests that need it
(tests/daemon/memd_process.py).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from click.testing import CliRunner


@dataclass(frozen=True)
class Ran:
    """What `memd` did: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def memd(env: dict[str, str], *args: str, stdin: str | None = None) -> Ran:
    """Run `memd ARGS` in process with exactly ``env`` as its environment."""
    from daemon.cli import main

    overrides: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    overrides.update(env)
    umask = os.umask(0o077)
    os.umask(umask)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        with CliRunner().isolation(input=stdin, env=overrides) as (out, err, _):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            return Ran(code, out.getvalue().decode(), err.getvalue().decode())
    finally:
        os.umask(umask)
        root.handlers[:], root.level = handlers, level  # the logs went to this call's stderr
